"""Every check passes on the (completed) fake server and fails, with a clear message, on its own
deviation and on each further branch: the proofs in proofs/<area>.py, run here."""

from __future__ import annotations

import pytest

from pytest_infer import conformance
from pytest_infer.conformance import CheckContext
from pytest_infer.outcomes import NotExercised
from pytest_infer.testing.fakeserver import FakeServer

from .deviations import compose, on_response
from .proofs import (
    CHECK_IDS,
    CHECKS,
    GAPS,
    PROOFS,
    collect,
    fails_on,
    fails_on_its_mutation,
    passes_on_the_correct_server,
    proof_of,
)

GUIDE = "docs/guide/extending.md"


def test_every_check_has_a_proof() -> None:
    """A check never shown failing proves nothing: each one has a Proof in its area's module."""
    assert not GAPS, f"each check needs a Proof ({GUIDE}):\n" + "\n".join(GAPS)


def test_a_new_check_missing_from_the_tables_is_told_where_to_add_it() -> None:
    def new(ctx: CheckContext) -> str:
        return "judged nothing"

    new.__module__ = "pytest_infer.conformance.checks.chat"
    check = conformance.Check("chat.new", "a new check", "a spec", "error", new)
    gaps = collect([*CHECKS, check])[1]
    assert gaps == ["add PROOFS['chat.new'] to tests/conformance/proofs/chat.py"]


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_passes_on_the_correct_server(check_id: str, ctx: CheckContext, fake: FakeServer) -> None:
    passes_on_the_correct_server(check_id, proof_of(check_id), ctx, fake)


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_fails_on_its_deviation(check_id: str, ctx: CheckContext, fake: FakeServer) -> None:
    fails_on_its_mutation(check_id, proof_of(check_id), ctx, fake)


BRANCH_CASES = [
    pytest.param(check_id, deviation, quoted, id=f"{check_id}:{branch}")
    for check_id, proof in PROOFS.items()
    for branch, deviation, quoted in proof.branches
]


@pytest.mark.parametrize(("check_id", "deviation", "quoted"), BRANCH_CASES)
def test_fails_on_each_further_branch(
    check_id: str, deviation, quoted: str, ctx: CheckContext, fake: FakeServer
) -> None:
    """A check with several conditions fails on each alone, quoting what the server sent."""
    fails_on(check_id, deviation, quoted, ctx, fake)


def test_usage_details_a_server_does_not_report_are_not_exercised(ctx: CheckContext, fake) -> None:
    unreported = on_response(lambda p, b, r: r["usage"].pop("prompt_tokens_details"))
    fake.set_deviation(compose(unreported))
    with pytest.raises(NotExercised, match="no prompt_tokens_details"):
        conformance.run("chat.usage-details", ctx)

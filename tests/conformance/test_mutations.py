"""Every check passes on the (completed) fake server and fails, with a clear message, on its own deviation."""

from __future__ import annotations

import sys

import pytest

from pytest_infer import conformance
from pytest_infer.outcomes import Inconclusive, NotExercised, Unsupported
from pytest_infer.testing.fakeserver import FakeServer

from .branches import BRANCHES as MORE_BRANCHES
from .deviations import (
    BRANCHES,
    EXERCISED_ONLY_BY_DIALECTS,
    EXPECTED_IN_MESSAGE,
    MUTATIONS,
    answers,
    compose,
    on_events,
    on_response,
    sdk_breaking_error,
)

# checks that judge something a correct server shows only when it goes wrong; -> a deviation that shows it correctly
EXERCISED_ONLY_BY = {"stream.error-event": on_events(sdk_breaking_error)} | EXERCISED_ONLY_BY_DIALECTS

# The parser checks need a server that forces scripted text: tests/conformance/test_parsers.py proves each of them.
CHECK_IDS = [
    c.id
    for c in conformance.REGISTRY
    if c.func.__module__.startswith("pytest_infer.conformance.checks") and not c.id.startswith("parsers.")
]


TABLES = "tests/conformance/deviations.py (docs/guide/extending.md)"


def test_every_check_has_a_mutation() -> None:
    """A check never shown failing proves nothing: each one has a fake-server deviation it must fail on."""
    missing, stale = sorted(set(CHECK_IDS) - set(MUTATIONS)), sorted(set(MUTATIONS) - set(CHECK_IDS))
    assert not missing and not stale, (
        f"add each check to MUTATIONS in {TABLES}: the fake server's Deviation (pytest_infer/testing/fakeserver.py)"
        f" that breaks exactly what the check judges; a check never shown failing proves nothing."
        f" Missing: {missing}; stale (no such check any more): {stale}"
    )
    unsaid, extra = sorted(set(MUTATIONS) - set(EXPECTED_IN_MESSAGE)), sorted(set(EXPECTED_IN_MESSAGE) - set(MUTATIONS))
    assert not unsaid and not extra, (
        f"add each check to EXPECTED_IN_MESSAGE in {TABLES}: words its failure on its MUTATIONS deviation must say,"
        f" so a check that fails for another reason is caught. Missing: {unsaid}; stale: {extra}"
    )


def test_a_new_check_missing_from_the_tables_is_told_where_to_add_it(monkeypatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CHECK_IDS", [*CHECK_IDS, "chat.new"])
    with pytest.raises(AssertionError, match=r"add each check to MUTATIONS in tests/conformance/deviations.py.*"
                       r"Missing: \['chat.new'\]"):  # fmt: skip
        test_every_check_has_a_mutation()


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_passes_on_the_correct_server(check_id: str, ctx: conformance.CheckContext, fake: FakeServer) -> None:
    """The fake server offers every feature and answers every probe: a check that gives up on it (unsupported,
    inconclusive) has broken, not skipped. A pass names what it judged."""
    try:
        if check_id in EXERCISED_ONLY_BY:
            with pytest.raises(NotExercised):  # nothing to judge is never a pass
                conformance.run(check_id, ctx)
            fake.set_deviation(compose(EXERCISED_ONLY_BY[check_id]))
        evidence = conformance.run(check_id, ctx)
    except (Unsupported, Inconclusive) as gave_up:
        pytest.fail(f"{check_id} gave up on the correct server: {gave_up.msg}")
    assert isinstance(evidence, str) and len(evidence.strip()) >= 10, (
        f"{check_id} passed with the evidence {evidence!r}"
    )


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_fails_on_its_deviation(check_id: str, ctx: conformance.CheckContext, fake: FakeServer) -> None:
    fake.set_deviation(compose(MUTATIONS[check_id]))
    with answers(), pytest.raises(conformance.CheckFailure) as info:  # giving up (a skip) is no failure
        conformance.run(check_id, ctx)
    failure = info.value
    text = str(failure)
    assert failure.check_id == check_id and f"[{check_id}]" in text
    assert "expected: " in text and "got: " in text
    assert EXPECTED_IN_MESSAGE[check_id] in text, text
    if failure.curl:
        assert failure.curl.startswith("curl -sS") and fake.base_url in failure.curl


BRANCH_CASES = [
    pytest.param(check_id, deviation, quoted, id=f"{check_id}:{branch}")
    for table in (BRANCHES, MORE_BRANCHES)
    for check_id, cases in table.items()
    for branch, deviation, quoted in cases
]


@pytest.mark.parametrize(("check_id", "deviation", "quoted"), BRANCH_CASES)
def test_fails_on_each_further_branch(
    check_id: str, deviation, quoted: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A check with several conditions fails on each alone, quoting what the server sent."""
    fake.set_deviation(compose(deviation))
    with answers(), pytest.raises(conformance.CheckFailure) as info:
        conformance.run(check_id, ctx)
    assert info.value.check_id == check_id and quoted in str(info.value), str(info.value)


def test_usage_details_a_server_does_not_report_are_not_exercised(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    fake.set_deviation(compose(on_response(lambda p, b, r: r["usage"].pop("prompt_tokens_details"))))
    with pytest.raises(NotExercised, match="no prompt_tokens_details"):
        conformance.run("chat.usage-details", ctx)

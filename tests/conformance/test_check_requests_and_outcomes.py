"""What each check sends to a correct server, and how it ends on a server that answers nothing
right: both stated in its Proof (proofs/<area>.py), checked here.

A check's requests are its claim (a probe that no longer carries the field it exists for tests
nothing), so the routes it calls and the top-level fields it sends are pinned in ``Proof.sends``
and change only by an edit of it. On four broken servers, every check must end without a pass: a
failure by default, or the stated way of giving up (``Proof.gives_up``: the route or feature is
unsupported, the control failed, nothing could be judged), each naming the check or what stopped
it.
"""

from __future__ import annotations

import pytest

from pytest_infer import conformance
from pytest_infer.conformance import CheckContext
from pytest_infer.testing.fakeserver import FakeServer

from .proofs import (
    BROKEN,
    CHECK_IDS,
    GIVING_UP,
    PROOFS,
    collect,
    ends_on_a_broken_server,
    proof_of,
    sends_what_it_states,
)


def test_every_check_is_stated() -> None:
    """Each proof names the routes its check calls, and gives up only on the broken servers here,
    only in one of the ways a check may give up."""
    unstated = sorted(check_id for check_id, proof in PROOFS.items() if not proof.sends)
    assert not unstated, f"state what these send, in Proof.sends: {unstated}"
    for check_id, proof in PROOFS.items():
        assert set(proof.gives_up) <= set(BROKEN), (check_id, set(proof.gives_up) - set(BROKEN))
        assert all(way in GIVING_UP for way in proof.gives_up.values()), (check_id, proof.gives_up)


def test_a_new_check_missing_from_sends_is_told_where_to_add_it() -> None:
    """A check in a new checks module is told to create its area's proof module."""

    def new(ctx: CheckContext) -> str:
        return "judged nothing"

    new.__module__ = "pytest_infer.conformance.checks.audio"
    check = conformance.Check("audio.speech", "a new area", "a spec", "error", new)
    gap = collect([check])[1][0]
    assert gap.startswith("create tests/conformance/proofs/audio.py with PROOFS = {"), gap
    assert gap.endswith(" for ['audio.speech']"), gap


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_requests_a_check_sends(check_id: str, ctx: CheckContext, fake: FakeServer) -> None:
    sends_what_it_states(check_id, proof_of(check_id), ctx, fake)


@pytest.mark.parametrize("broken", sorted(BROKEN))
@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_outcome_on_a_broken_server(check_id: str, broken: str, ctx: CheckContext, fake) -> None:
    """None of them answers anything: a check that passes on one has judged nothing."""
    ends_on_a_broken_server(check_id, proof_of(check_id), broken, ctx, fake)

"""What each check sends, and what each of its failures says, pinned (``pytest --snapshot-update`` rewrites them).

A check's probes are its claim (a request that no longer carries the field it exists for tests nothing) and
its failure text is what a user reads and reruns; both change only by a reviewed edit of the snapshot.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pytest_infer import conformance
from pytest_infer.outcomes import NotExercised
from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body

from .deviations import MUTATIONS, compose
from .test_mutations import BRANCH_CASES, CHECK_IDS

# what varies from run to run (the server's port, ids numbered in test order, clocks, durations), and the
# over-long prompts, shortened
_VARYING = [
    (re.compile(r"\b(chatcmpl|cmpl|resp|msg|call|rs|fc)([-_])[0-9a-f]+\b"), r"\1\2<id>"),
    (re.compile(r"\b1[6-9]\d{8}\b"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)? (s|ms)\b"), r"<n> \2"),
    (re.compile(r"\b(\w+ )\1{7,}"), r"\1\1\1... "),
]


def _steady(text: str, fake: FakeServer) -> str:
    text = text.replace(fake.base_url, "http://<fake>")
    for pattern, replacement in _VARYING:
        text = pattern.sub(replacement, text)
    return text


def _request(method: str, path: str, body: Any) -> str:
    if isinstance(body, bytes):
        body = body.decode("utf-8", "backslashreplace")
    return f"{method} {path} {json.dumps(body, sort_keys=True, ensure_ascii=False)}"


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_requests_a_check_sends(check_id: str, ctx: conformance.CheckContext, fake: FakeServer, snapshot) -> None:
    """Sorted: a check's concurrent probes arrive in any order."""
    try:
        conformance.run(check_id, ctx)
    except NotExercised:
        pass
    assert sorted(_steady(_request(*sent), fake) for sent in fake.requests) == snapshot


def _failure(check_id: str, deviation, ctx: conformance.CheckContext, fake: FakeServer) -> str:
    fake.set_deviation(compose(deviation))
    with pytest.raises(conformance.CheckFailure) as info:
        conformance.run(check_id, ctx)
    return _steady(str(info.value), fake)


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_failure_on_its_deviation_says(
    check_id: str, ctx: conformance.CheckContext, fake: FakeServer, snapshot
) -> None:
    assert _failure(check_id, MUTATIONS[check_id], ctx, fake) == snapshot


@pytest.mark.parametrize(("check_id", "deviation", "quoted"), BRANCH_CASES)
def test_failure_on_each_further_branch_says(
    check_id: str, deviation, quoted: str, ctx: conformance.CheckContext, fake: FakeServer, snapshot
) -> None:
    assert _failure(check_id, deviation, ctx, fake) == snapshot


# Servers that fail every check at its first step: what each check then says names that step (a crash is no verdict).
BROKEN = {
    "no-route": Deviation(request=lambda path, body: (404, error_body(f"no route {path}", "not_found_error"))),
    "refuses": Deviation(request=lambda path, body: (400, error_body(f"{path} refuses {sorted(body)}"))),
    "not-an-object": Deviation(request=lambda path, body: (200, "not an object")),
    "empty-object": Deviation(request=lambda path, body: (200, {})),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_outcome_on_a_broken_server_says(
    check_id: str, broken: str, ctx: conformance.CheckContext, fake: FakeServer, snapshot
) -> None:
    """None of them answers anything: a check that passes on one has judged nothing, whatever the snapshot says."""
    fake.set_deviation(BROKEN[broken])
    try:
        evidence = conformance.run(check_id, ctx)
    except (conformance.CheckFailure, pytest.skip.Exception) as stopped:
        outcome = f"{type(stopped).__name__}: {stopped}"
    else:
        pytest.fail(f"{check_id} passed on the {broken!r} server, judging: {evidence}")
    assert _steady(outcome, fake) == snapshot

"""The soak script's accounting: every request it started is classified once, and a gap is a loss."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from pytest_infer.load.trace import RequestTrace
from pytest_infer.testing.fakeserver import Deviation, FakeServer

SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"


@pytest.fixture(scope="module")
def soak():
    spec = importlib.util.spec_from_file_location("soak", SOAK)
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("soak", None)


def test_a_gap_in_the_traces_is_a_loss(soak):
    traces = [
        RequestTrace(0, status=200, done=True, end_ns=1),
        RequestTrace(2, status=500, error="HTTP 500: x", end_ns=1),
    ]
    acc = soak.account(traces)
    assert acc.missing_indices == [1] and not acc.balanced
    assert (acc.completed, acc.errors) == (1, 1)


def test_every_request_is_accounted_for_when_the_server_breaks_some(soak, tmp_path):
    """Every third stream is cut after two events (no [DONE]), every fifth refused with 500: none go missing."""
    seen = {"n": 0}

    def events(path, body, evs):
        seen["n"] += 1
        return evs[:2] if seen["n"] % 3 == 0 else evs

    def request(path, body):
        return (
            (500, {"error": {"message": "overloaded", "type": "server_error"}})
            if path.endswith("completions") and seen["n"] % 5 == 4
            else None
        )

    with FakeServer(Deviation(events=events, request=request)) as srv:
        code = soak.main(
            [
                "--url",
                srv.base_url,
                "--duration",
                "1.5",
                "--concurrency",
                "3",
                "--output-tokens",
                "8",
                "--out",
                str(tmp_path),
            ]
        )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0 and summary["balanced"]
    assert summary["incomplete"] > 0 and summary["errors"] > 0 and summary["completed"] > 0
    assert summary["sent"] == summary["completed"] + summary["errors"] + summary["incomplete"] + summary["cancelled"]
    lines = (tmp_path / "traces.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["index"] for line in lines) == list(range(summary["sent"]))

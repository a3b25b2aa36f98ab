"""The real-model matrix's sessions merged (benchmarks/results/real-model/merge_parts.py): each test from the latest
session that ran it, a test whose server was given up replacing nothing, a suite table only by a fuller run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "real-model"


def merge_parts():
    spec = importlib.util.spec_from_file_location("merge_parts", FOLDER / "merge_parts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(nodeid: str, outcome: str, target: str = "llamacpp", suite: str = "robustness") -> dict:
    return {
        "nodeid": f"suites/{suite}/test_x.py::{nodeid}",
        "target": target,
        "suite": suite,
        "outcome": outcome,
    }


def test_a_later_session_replaces_the_tests_it_ran_and_no_test_it_did_not():
    module = merge_parts()
    whole = {
        "tests": [
            record("a", "not_run"),
            record("b", "not_run"),
            record("c", "failed", target="vllm"),
        ],
        "robustness": {"llamacpp": {"tried": 0}, "vllm": {"tried": 3}},
    }
    rerun = {
        "tests": [record("a", "passed"), record("b", "failed")],
        "robustness": {"llamacpp": {"tried": 2}},
    }
    kept = module.without(whole, [rerun])
    assert kept["tests"] == [record("c", "failed", target="vllm")]
    assert kept["robustness"] == {
        "vllm": {"tried": 3}
    }  # the engine's table from the session that ran more of it
    few = {"tests": [record("c", "passed", target="vllm")], "robustness": {"vllm": {"tried": 1}}}
    fuller = {"tests": [record("c", "failed", target="vllm"), record("d", "passed", target="vllm")]}
    assert module.without(fuller | {"robustness": {"vllm": {"tried": 3}}}, [few])["robustness"] == {
        "vllm": {"tried": 3}
    }  # a session of one check replaces that test, not a fuller session's table
    given_up = {"tests": [record("a", "not_run")], "robustness": {}}
    assert module.without(rerun, [given_up])["tests"] == rerun["tests"]


def test_the_stored_counts_are_the_stored_reports():
    """matrix-counts.json and the verdict table of matrix-summary.md come from one merge: the same totals."""
    counts = json.loads((FOLDER / "matrix-counts.json").read_text())["counts"]
    summary = (FOLDER / "matrix-summary.md").read_text()
    assert (
        sum(
            sum(by_outcome.values()) for suites in counts.values() for by_outcome in suites.values()
        )
        == 1116
    )
    failed = sum(
        by_outcome.get("failed", 0) for suites in counts.values() for by_outcome in suites.values()
    )
    assert f"root causes of {failed} failed tests" in summary

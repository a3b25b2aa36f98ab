"""The gate-accuracy instrument (benchmarks/gate_accuracy.py) through its CLI: against the fake
server, an A/A gate passes and an injected fault fails the gate by the check it breaks, and the
JSON it writes is what tests/core/test_quoted_figures.py reads the documents' figures from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_infer.testing.fakeserver import FakeServer

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gate_accuracy.py"


def test_an_a_a_gate_passes_and_a_fault_fails_it_by_name(tmp_path):
    summary = tmp_path / "gate_accuracy.json"
    with FakeServer() as server:
        subprocess.run(
            [sys.executable, str(SCRIPT), "--upstream", server.base_url, "--model", "fake-model",
             "--aa", "1", "--faults", "stream-no-done", "--timing", "", "--shares", "", "--areas", "check",
             "--checks", "sse-framing", "--out", str(tmp_path / "runs"), "--json", str(summary)],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    aa, fault = json.loads(summary.read_text())["rows"]
    assert (aa["fault"], aa["verdict"], aa["regressions"]) == (
        "none (A/A 1)",
        "PASS: no regressions",
        [],
    )
    assert (fault["fault"], fault["caught"]) == ("stream-no-done", True)
    assert (
        fault["verdict"].startswith("FAIL") and "check:stream.sse-framing" in fault["regressions"]
    )
    assert fault["acted"] >= 1


def test_a_fault_whose_area_the_baseline_lacks_is_refused():
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--upstream", "http://127.0.0.1:9", "--faults", "stream-no-done",
         "--timing", "", "--shares", "", "--areas", "keyword"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode != 0 and "faults of check need that area in --areas" in run.stderr

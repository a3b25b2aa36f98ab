"""The soak instrument (benchmarks/soak.py), run as its command line: every request it started is
classified once, a gap in the traces is a loss, and so is a server that finished fewer requests
than the client completed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_infer.testing.fakeserver import Deviation, FakeServer

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"
SHORT = ["--duration", "1.5", "--concurrency", "3", "--output-tokens", "8"]


def soak(*args: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = Path(args[args.index("--out") + 1])
    run = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    return run, json.loads((out / "summary.json").read_text())


def test_a_gap_in_the_traces_is_a_loss(tmp_path):
    traces = tmp_path / "traces.jsonl"
    traces.write_text(
        json.dumps({"index": 0, "phase": "measured", "status": 200, "done": True}) + "\n"
        + json.dumps({"index": 2, "phase": "measured", "status": 500, "error": "HTTP 500: x"})
        + "\n"
    )  # fmt: skip
    run, summary = soak("--account", str(traces), "--out", str(tmp_path / "report"))
    assert run.returncode == 1 and "LOSS" in run.stderr and "missing: [1]" in run.stderr
    assert summary["missing_indices"] == [1] and not summary["balanced"]
    assert (summary["completed"], summary["errors"]) == (1, 1)
    assert summary["error_kinds"] == {"HTTP 500": 1}


def test_every_request_is_accounted_for_when_the_server_breaks_some(tmp_path):
    """Every third stream is cut after two events (no [DONE]), every fifth refused with 500: none
    go missing."""
    seen = {"n": 0}

    def events(path, body, evs):
        seen["n"] += 1
        return evs[:2] if seen["n"] % 3 == 0 else evs

    def request(path, body):
        refused = path.endswith("completions") and seen["n"] % 5 == 4
        overloaded = {"error": {"message": "overloaded", "type": "server_error"}}
        return (500, overloaded) if refused else None

    with FakeServer(Deviation(events=events, request=request)) as srv:
        run, summary = soak("--url", srv.base_url, *SHORT, "--out", str(tmp_path))
    assert run.returncode == 0 and summary["balanced"], run.stderr
    assert summary["incomplete"] > 0 and summary["errors"] > 0 and summary["completed"] > 0
    ended = summary["completed"] + summary["errors"] + summary["incomplete"] + summary["cancelled"]
    assert summary["sent"] == ended
    lines = (tmp_path / "traces.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["index"] for line in lines) == list(range(summary["sent"]))
    traces = str(tmp_path / "traces.jsonl")
    again, same = soak("--account", traces, "--out", str(tmp_path / "again"))
    assert again.returncode == 0 and same["sent"] == summary["sent"] and same["balanced"]


def test_a_server_that_counts_fewer_finished_requests_is_a_loss(tmp_path):
    """The paced server exports vLLM's finished-request counter; told to halve it, it finished
    fewer requests than the client completed."""
    server = [sys.executable, "-m", "pytest_infer.testing.pacedserver", "--port", "0",
              "--ttft-ms", "5", "--itl-ms", "2", "--lie-counts", "0.5"]  # fmt: skip
    paced = subprocess.Popen(server, stdout=subprocess.PIPE, text=True)
    with paced:
        try:
            ready = paced.stdout.readline() if paced.stdout else ""
            assert "ready" in ready
            url = ready.split(" on ")[1].split()[0]
            run, summary = soak("--url", url, "--duration", "0.5", "--concurrency", "2",
                                "--output-tokens", "4", "--out", str(tmp_path))  # fmt: skip
        finally:
            paced.terminate()
    assert summary["balanced"] and summary["completed"] > 0
    assert summary["server_finished_delta"] < summary["completed"]
    assert run.returncode == 1 and "LOSS: the server finished" in run.stderr

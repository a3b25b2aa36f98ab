"""The gate inside a pytest run: ``--infer-baseline`` against the fake server, made wrong or slow on purpose.

The inner suite is small but real: it talks HTTP to a server and times the
first streamed token, so a regression here went through the whole path
(recording, results.json, comparison, terminal, exit code).
"""

from __future__ import annotations

import json
import time

import pytest

# Imported here so that pytester's in-process runs find them loaded: numpy, under matplotlib,
# cannot be imported a second time in one process after pytester drops it from sys.modules.
pytest.importorskip("matplotlib.figure")

from pytest_infer.options import BASELINE, ENDPOINT, REPORT_DIR
from pytest_infer.slo.drift import Drift, DriftCalibration
from pytest_infer.slo.plugin import CALIBRATION, FAIL_ON
from pytest_infer.testing.fakeserver import Deviation, FakeServer

SUITE = """
import statistics, time
import pytest

@pytest.mark.infer_check("chat.answers")
def test_answers(infer_client):
    r = infer_client.chat("hi", max_tokens=8, temperature=0)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"], "empty content"

def test_ttft(infer_client, infer_session, infer_target):
    samples = []
    for _ in range(20):
        t0 = time.perf_counter()
        body = {"model": infer_client.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
                "stream": True}
        with infer_client.stream("POST", "/v1/chat/completions", json=body) as r:
            for line in r.iter_lines():
                if '"content": "' in line and '"content": ""' not in line:
                    break
        samples.append((time.perf_counter() - t0) * 1000)
    infer_session.results.table("slo").add({"target": infer_target.id, "load_point": "c=1", "concurrency": 1,
        "verdict": "pass", "metrics": {"ttft_p50_ms": statistics.median(samples)}, "samples": {"ttft_ms": samples},
        "session": infer_session.id})
"""


def slow(seconds: float) -> Deviation:
    def request(path, body):
        if body.get("stream"):
            time.sleep(seconds)
        return None

    return Deviation(request=request)


def empty_content() -> Deviation:
    def response(path, body, response):
        for choice in response.get("choices", []):
            choice["message"]["content"] = ""
        return response

    return Deviation(response=response)


def calibrated(pytester: pytest.Pytester, bound_pct: float) -> str:
    """``--infer-calibration`` with a drift between sessions of ``bound_pct`` for the suite's one timing figure."""
    path = pytester.path / "calibration.json"
    DriftCalibration(
        {"-/c=1": {"ttft_p50_ms": Drift(bound_pct, bound_pct / 1.5, 3)}}, ["s1", "s2", "s3"]
    ).write(path)
    return f"{CALIBRATION}={path}"


def run(pytester: pytest.Pytester, server: FakeServer, name: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        f"{ENDPOINT}={server.base_url}", f"{REPORT_DIR}={name}", "-p", "no:cacheprovider", *args
    )


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_a_regression_fails_the_run_and_is_listed_after_the_tables(suite: pytest.Pytester):
    with FakeServer(slow(0.02)) as server:
        run(suite, server, "base").assert_outcomes(passed=2)
        server.set_deviation(
            Deviation(request=slow(0.08).request, response=empty_content().response)
        )
        result = run(
            suite,
            server,
            "cand",
            f"{BASELINE}=base/results.json",
            f"{FAIL_ON}=ttft_p50:50%",
            calibrated(suite, 20),
        )
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= pytest-infer =*",
            "check*",
            "chat.answers*FAIL",
            "load point*",
            "results: cand/results.json",
            "*= pytest-infer upgrade gate =*",
            "upgrade gate: FAIL: 2 regressions",
            "REGRESSIONS (2):",
            "  [[]check] chat.answers: passed -> failed *empty content*",
            (
                "  [[]slo] -/c=1: ttft_p50_ms: * -> * *% worse, limit ttft_p50:50% + calibrated drift 20% (separate"
                " sessions, calibration (*calibration.json, 3 sessions, largest move x1.5)); samples of ttft_ms (n=20 v"
                " 20) against the other side moved by the drift, p=*"
            ),
        ]
    )
    saved = json.loads((suite.path / "cand" / "results.json").read_text())
    assert saved["gate"]["failed"] is True and saved["gate"]["baseline"] == "base/results.json"


def test_the_gate_alone_fails_a_run_whose_tests_all_pass(suite: pytest.Pytester):
    with FakeServer(slow(0.01)) as server:
        run(suite, server, "base").assert_outcomes(passed=2)
        server.set_deviation(slow(0.06))
        result = run(
            suite,
            server,
            "cand",
            f"{BASELINE}=base/results.json",
            f"{FAIL_ON}=ttft_p50:50%",
            calibrated(suite, 20),
        )
        ungated = run(
            suite, server, "cand2", f"{BASELINE}=base/results.json", f"{FAIL_ON}=ttft_p50:50%"
        )
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "upgrade gate: FAIL: 1 regression",
            "timing: * separate sessions, gated beyond the calibrated drift*",
            "  [[]slo] -/c=1: ttft_p50_ms:*",
        ]
    )
    # without a calibration the same move across sessions is shown, labelled, and does not decide the run
    assert ungated.ret == pytest.ExitCode.OK, ungated.stdout.str()
    ungated.stdout.fnmatch_lines(
        [
            (
                "upgrade gate: PASS: no regressions (1 timing move across sessions not gated: no drift calibration for"
                " them)"
            ),
            "timing: * separate sessions, not gated: no calibration",
            "other changes (1):",
            "  [[]slo] -/c=1: ttft_p50_ms: * worse, limit ttft_p50:50%; separate sessions, not gated: no calibration",
        ]
    )


def test_an_improvement_passes_and_is_listed(suite: pytest.Pytester):
    with FakeServer(
        Deviation(request=slow(0.08).request, response=empty_content().response)
    ) as server:
        run(suite, server, "base").assert_outcomes(passed=1, failed=1)
        server.set_deviation(slow(0.02))
        result = run(
            suite,
            server,
            "cand",
            f"{BASELINE}=base/results.json",
            f"{FAIL_ON}=ttft_p50:50%",
            calibrated(suite, 5),
        )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "upgrade gate: PASS: no regressions",
            "improvements (2):",
            "  [[]check] chat.answers: failed -> passed *fixed",
            "  [[]slo] -/c=1: ttft_p50_ms: * better, limit *",
        ]
    )


def test_the_same_server_twice_passes(suite: pytest.Pytester):
    """No false alarm: a fixed 50 ms delay dominates, and 50% is beyond what a loaded 2-core machine adds between
    runs."""
    with FakeServer(slow(0.05)) as server:
        run(suite, server, "base").assert_outcomes(passed=2)
        result = run(
            suite, server, "cand", f"{BASELINE}=base/results.json", f"{FAIL_ON}=ttft_p50:50%"
        )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["upgrade gate: PASS: no regressions"])


def test_under_xdist_the_controller_writes_one_results_file_and_gates(suite: pytest.Pytester):
    pytest.importorskip("xdist")
    with FakeServer() as server:
        run(suite, server, "base").assert_outcomes(passed=2)
        server.set_deviation(empty_content())
        result = run(
            suite, server, "cand", "-n", "2", "-p", "no:benchmark", f"{BASELINE}=base/results.json"
        )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["upgrade gate: FAIL: 1 regression", "  [[]check] chat.answers: passed -> failed*"]
    )
    saved = json.loads((suite.path / "cand" / "results.json").read_text())
    assert sorted(t["outcome"] for t in saved["tests"]) == ["failed", "passed"]
    assert len(saved["slo"]) == 1 and saved["environment"]["git"]


def test_a_calibration_needs_a_baseline_and_must_be_one(suite: pytest.Pytester):
    (suite.path / "junk.json").write_text('{"schema_version": 3}')
    alone = suite.runpytest(
        f"{CALIBRATION}=junk.json", f"{ENDPOINT}=http://127.0.0.1:9", "-p", "no:cacheprovider"
    )
    assert (
        alone.ret == pytest.ExitCode.USAGE_ERROR
        and f"{CALIBRATION} needs {BASELINE}=FILE" in alone.stderr.str()
    )
    with FakeServer() as server:
        run(suite, server, "base").assert_outcomes(passed=2)
        foreign = run(
            suite, server, "cand", f"{BASELINE}=base/results.json", f"{CALIBRATION}=junk.json"
        )
    assert (
        foreign.ret == pytest.ExitCode.USAGE_ERROR
        and "is not a drift calibration (make one with pytest-infer calibrate)"
        in foreign.stderr.str()
    )

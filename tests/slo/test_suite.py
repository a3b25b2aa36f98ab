"""suites/slo as users run it (pytester, in a subprocess), against the paced server.

Pass, fail and "measurement invalid" each come from a load point built to produce
it; starving the client of CPU turns a verdict into the invalid ERROR.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from pytest_infer.paths import bundled

PROFILE = """
name: test
hardware: {{accelerator: cpu}}
validity: {{max_client_busy: 2.0, max_loop_lag_p99_ms: 10000, max_schedule_lag_p99_ms: 10000}}
defaults: {{api: chat, output_tokens: 8, input_tokens: 16, warmup_requests: 2, requests: 20}}
models:
  tiny:
    load_points:
      - {{id: meets, concurrency: 2, thresholds: {{ttft_p50_ms: 5000, tpot_p90_ms: 5000, min_output_tokens_per_s: 1,
                                                   min_goodput_share: 0.9, max_error_share: 0}}}}
      - {{id: misses, concurrency: 2, thresholds: {{ttft_p50_ms: {fast}}}}}
      - {{id: too-few, concurrency: 2, thresholds: {{ttft_p99_ms: 5000}}}}
"""


def copy_suite(pytester) -> None:
    shutil.copytree(bundled("suites") / "slo", pytester.path / "slo")


def run_suite(pytester, url: str, *args: str, subprocess: bool = False):
    args = (
        "slo",
        "-m",
        "slo",
        f"--infer-endpoint={url}",
        "--infer-framework=vllm",
        "--infer-report-dir=report",
        "-p",
        "no:cacheprovider",
        *args,
    )
    return (
        pytester.runpytest_subprocess(*args, timeout=300)
        if subprocess
        else pytester.runpytest(*args)
    )


def test_pass_fail_and_invalid_load_points(pytester, paced_server):
    url = paced_server(30, 5)
    copy_suite(pytester)
    (pytester.path / "test.yaml").write_text(PROFILE.format(fast=1))
    result = run_suite(pytester, url, "--slo=test.yaml", "--junitxml=junit.xml", "-rA")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    for line in (
        "*misses its SLO at load point misses: FAIL ttft_p50_ms: * <= 1*",
        "*measurement invalid: insufficient samples: ttft_p99_ms needs at least 100, the load point measured 20*",
        "*load point meets: PASS*",
        "*ok   ttft_p50_ms: * <= 5000*",
    ):
        result.stdout.fnmatch_lines([line])
    results = json.loads((pytester.path / "report" / "results.json").read_text())
    entries = {e["load_point"]: e for e in results["slo"]}
    assert {k: e["verdict"] for k, e in entries.items()} == {
        "meets": "pass",
        "misses": "fail",
        "too-few": "invalid",
    }
    meets = entries["meets"]
    assert (
        meets["metrics"]["requests"] == 20 and meets["metrics"]["ttft_p50_ms"] >= 30
    )  # the paced server's TTFT
    assert meets["metrics"]["ttfb_p50_ms"] < meets["metrics"]["ttft_p50_ms"]  # role chunk first
    assert len(meets["samples"]["ttft_ms"]) == 20 and meets["concurrency"] == 2
    assert meets["hardware"]["accelerator"] in ("cpu", "gpu") and meets["client"]["busy_share"] >= 0
    params = [t["nodeid"].split("[")[1].rstrip("]") for t in results["tests"]]
    outcomes = {
        p.removeprefix("vllm-").removesuffix("-vllm").split("-")[0]: t["outcome"]
        for p, t in zip(params, results["tests"])
    }
    assert outcomes == {"meets": "passed", "misses": "failed", "too": "error"}
    [passed] = [
        t for t in results["tests"] if t["outcome"] == "passed"
    ]  # names the load and each threshold it judged
    assert passed["extra"]["evidence"].startswith(
        "load point meets (concurrency 2): 20 of 20 measured requests answered; ok ttft_p50_ms: "
    ), passed["extra"]
    assert "<= 5000; ok tpot_p90_ms: " in passed["extra"]["evidence"]
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="slo_verdict" value="pass"' in junit and 'name="slo_ttft_p50_ms"' in junit


def test_slo_repeat_runs_each_point_that_many_times(pytester, paced_server):
    url = paced_server(20, 5)
    copy_suite(pytester)
    (pytester.path / "test.yaml").write_text(PROFILE.format(fast=1))
    result = run_suite(
        pytester, url, "--slo=test.yaml", "--slo-repeat=3", "-k", "not misses and not too"
    )
    result.assert_outcomes(passed=1)
    entry = json.loads((pytester.path / "report" / "results.json").read_text())["slo"][0]
    assert entry["repeat"] == 3 and [r["requests"] for r in entry["runs"]] == [20, 20, 20]
    assert entry["metrics"]["requests"] == 60  # pooled


def test_without_a_profile_the_suite_skips(pytester, paced_server):
    copy_suite(pytester)
    result = run_suite(pytester, paced_server(5, 1), "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no SLO profile: pass --slo=NAME*"])


def test_a_bad_profile_is_a_usage_error_naming_file_and_key(pytester, paced_server):
    copy_suite(pytester)
    (pytester.path / "bad.yaml").write_text(
        PROFILE.format(fast=1).replace("ttft_p50_ms: 1}", "ttft_p50: 1}")
    )
    result = run_suite(pytester, paced_server(5, 1), "--slo=bad.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --slo: bad.yaml: invalid SLO profile:*",
            "*models.tiny.load_points[[]1].thresholds.ttft_p50: unknown threshold 'ttft_p50'*",
        ]
    )


def test_profile_for_other_hardware_warns_loudly(pytester, paced_server):
    copy_suite(pytester)
    gpu = PROFILE.format(fast=1).replace(
        "hardware: {accelerator: cpu}",
        "hardware: {accelerator: gpu, gpu: H200, count: 1, memory_gb: 141}",
    )
    (pytester.path / "gpu.yaml").write_text(gpu)
    result = run_suite(
        pytester, paced_server(5, 1), "--slo=gpu.yaml", "-k", "meets", "-W", "default"
    )
    result.stdout.fnmatch_lines(
        [
            "*!!! SLO PROFILE MISMATCH: profile 'test' is for 1x H200 141 GB; this host has no GPU visible to NVML*",
            "*SLOHardwareMismatch*",
        ]
    )


def test_thresholds_of_an_estimated_profile_are_marked_in_the_header_the_results_and_the_summary(
    pytester, paced_server
):
    copy_suite(pytester)
    (pytester.path / "guess.yaml").write_text(
        PROFILE.format(fast=1).replace("name: test", "name: test\nthresholds_source: estimated")
    )
    result = run_suite(
        pytester, paced_server(5, 1), "--slo=guess.yaml", "-k", "not misses and not too"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "SLO thresholds of 'test' are ESTIMATES, not measured on this hardware*",
            "test/meets thresholds*estimated*",
        ]
    )
    (entry,) = json.loads((pytester.path / "report" / "results.json").read_text())["slo"]
    assert entry["thresholds_source"] == "estimated" and entry["verdict"] == "pass"
    assert (
        "(estimated)" in (pytester.path / "report" / "summary.md").read_text()
    )  # beside each limit


STARVE = """
import os, subprocess, sys

SPINNER = []
FREEZER = '''
import os, random, signal, sys, time
pid = int(sys.argv[1])
def resume_and_exit(*_):
    os.kill(pid, signal.SIGCONT)
    sys.exit(0)
signal.signal(signal.SIGTERM, resume_and_exit)  # the last word is always SIGCONT
while True:
    time.sleep(random.uniform(0.005, 0.03))
    os.kill(pid, signal.SIGSTOP)
    time.sleep(random.uniform(0.1, 0.2))
    os.kill(pid, signal.SIGCONT)
'''

def pytest_runtest_setup(item):
    # for the measurement only: the client shares core 0 with two busy loops at a lower
    # priority (nice 10: about a twentieth of the core), however quiet the rest of the machine is,
    # and is paused for 100-200 ms at random moments, as a host that steals its CPU would
    for _ in range(2):
        SPINNER.append(subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                        preexec_fn=lambda: os.sched_setaffinity(0, {0})))
    SPINNER.append(subprocess.Popen([sys.executable, "-c", FREEZER, str(os.getpid())]))
    os.sched_setaffinity(0, {0})
    os.nice(10)

def pytest_runtest_teardown(item):
    for proc in SPINNER:
        proc.terminate()
        proc.wait()
    SPINNER.clear()
    os.sched_setaffinity(0, range(os.cpu_count()))
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0)  # back to normal where allowed (root), so the reports are quick
    except PermissionError:
        pass
"""
HEAVY = """
name: starve
hardware: {accelerator: cpu}
models:
  tiny:
    load_points:
      - {id: fast-stream, concurrency: 16, output_tokens: 32, input_tokens: 16, warmup_requests: 2, requests: 48,
         thresholds: {ttft_p50_ms: 5000}}
"""


@pytest.mark.integration  # a minute: it loads a core of the host and runs a starved pytest process
@pytest.mark.measures
@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2,
    reason="needs Linux CPU affinity and 2 cores",
)
def test_a_starved_client_turns_the_verdict_into_measurement_invalid(pytester, paced_server):
    """16 streams of one token per ms need a good share of a core; the client gets ~5% of one,
    between pauses of 100-200 ms (long enough for the server's histogram buckets to resolve on
    any machine: a short nice-only starvation lagged under the 50 ms tolerance on a faster host).

    Both witnesses see it: the client's own load figures, and the server's /metrics (its TTFT
    histogram puts first tokens far earlier than the starved client read them).
    """
    url = paced_server(20, 1)
    copy_suite(pytester)
    (pytester.path / "conftest.py").write_text(STARVE)
    (pytester.path / "starve.yaml").write_text(HEAVY)
    result = run_suite(
        pytester, url, "--slo=starve.yaml", subprocess=True
    )  # nice and affinity stay in that process
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*measurement invalid: client*"])
    entry = json.loads((pytester.path / "report" / "results.json").read_text())["slo"][0]
    assert entry["verdict"] == "invalid"
    # the first witness: the client's own figures (its loop thread starved, or its loop ticking late)
    assert entry["client"]["busy_share"] > 0.8 or any(
        f.startswith("measurement invalid: client event loop lagged: p99")
        for f in entry["failures"]
    )
    # the second witness: the paced server's own TTFT histogram shows the client stamping first tokens late
    assert any(
        f.startswith("measurement invalid: server metrics disagree") and "the client lagged?" in f
        for f in entry["failures"]
    )


def test_interleaved_session_gates_baseline_against_candidate_with_pair(
    pytester, paced_server, capsys
):
    """Two servers in one session, measured in turns; the gate pairs them inside the one results file."""
    from pytest_infer.cli import main

    base, cand = paced_server(10, 2), paced_server(60, 2)
    copy_suite(pytester)
    (pytester.path / "test.yaml").write_text(PROFILE.format(fast=1))
    # no framework named: the gate is under test, not the /metrics cross-check, which a busy machine can trip
    args = ("slo", "-m", "slo", f"--infer-endpoint=base={base}", f"--infer-endpoint=cand={cand}",
            "--infer-report-dir=report", "-p", "no:cacheprovider", "--slo=test.yaml", "--slo-repeat=5",
            "--slo-interleave", "-k", "not misses and not too")  # fmt: skip
    pytester.runpytest(*args).assert_outcomes(passed=2)
    entries = json.loads((pytester.path / "report" / "results.json").read_text())["slo"]
    assert sorted(e["target"] for e in entries) == ["base", "cand"] and all(
        e["repeat"] == 5 for e in entries
    )
    assert entries[0]["interleaved"] == entries[1]["interleaved"] and entries[0]["interleaved"][
        "targets"
    ] == [
        "base",
        "cand",
    ]
    assert (
        entries[0]["interleaved"]["slices"] == 5 and entries[0]["runs"][0]["requests"] == 20
    )  # each run's parts pooled back into one
    assert (
        entries[0]["session"] == entries[1]["session"] and len(entries[0]["session"]) == 32
    )  # the pytest run, for the gate
    results = str(pytester.path / "report" / "results.json")
    assert (
        main(["compare", results, results, "--pair", "base=cand", "--fail-on", "ttft_p50:5%"]) == 1
    )
    out = capsys.readouterr().out
    assert (
        "base" in out
        and "cand" in out
        and "ttft_p50_ms" in out
        and "paired slices (n=25, interleaved), p=" in out
    )
    assert ": interleaved (measured in turns)" in out and "not gated" not in out
    assert main(["compare", results, results, "--pair", "cand=cand"]) == 0


def test_slices_without_interleave_is_a_usage_error(pytester, paced_server):
    copy_suite(pytester)
    (pytester.path / "test.yaml").write_text(PROFILE.format(fast=1))
    result = run_suite(
        pytester, paced_server(10, 2), "--slo=test.yaml", "--slo-interleave-slices=3"
    )
    result.stderr.fnmatch_lines(
        [
            "*--slo-interleave-slices slices the runs that --slo-interleave takes in turns; add --slo-interleave*"
        ]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = run_suite(
        pytester,
        paced_server(10, 2),
        "--slo=test.yaml",
        "--slo-interleave",
        "--slo-interleave-slices=0",
    )
    result.stderr.fnmatch_lines(["*--slo-interleave-slices: must be at least 1*"])


def test_slo_processes_runs_each_load_point_from_several_client_processes(pytester, paced_server):
    url = paced_server(30, 5)
    copy_suite(pytester)
    (pytester.path / "test.yaml").write_text(
        "\n".join(
            line
            for line in PROFILE.format(fast=1).splitlines()
            if "misses" not in line and "too-few" not in line
        )
    )
    result = run_suite(pytester, url, "--slo=test.yaml", "--slo-processes=2")
    result.assert_outcomes(passed=1)
    entry = json.loads((pytester.path / "report" / "results.json").read_text())["slo"][0]
    processes = entry["client_processes"]["processes"]
    assert (
        entry["client_processes"]["how"] == "processes"
        and len(processes) == 2
        and entry["metrics"]["requests"] == 20
    )
    assert (
        entry["metrics"]["ttft_p50_ms"] >= 30
    )  # the paced server's TTFT, measured from two processes on one clock


def test_slo_ray_address_without_ray_is_a_usage_error(pytester, paced_server, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    copy_suite(pytester)
    (pytester.path / "test.yaml").write_text(PROFILE.format(fast=1))
    result = run_suite(pytester, "http://127.0.0.1:9", "--slo=test.yaml", "--slo-ray-address=auto")
    result.stderr.fnmatch_lines(
        ["*--slo-ray-address needs Ray on this machine: pip install 'pytest-infer?ray?'*"]
    )


def test_the_suite_registers_under_the_name_its_gate_settings_use():
    from pytest_infer.slo.settings import NAME
    from pytest_infer.slo.suite import SUITE

    assert SUITE.name == NAME


def test_a_bad_slo_option_is_a_usage_error_in_a_run_that_tests_no_server(pytester):
    """The suite reads nothing in a run without a server unless an option of its own is given: then it checks it."""
    pytester.makepyfile("def test_one():\n    pass\n")
    assert pytester.runpytest("-p", "no:randomly").ret == pytest.ExitCode.OK
    result = pytester.runpytest("-p", "no:randomly", "--slo=no-such-profile")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--slo: unknown profile 'no-such-profile'; valid:*"])

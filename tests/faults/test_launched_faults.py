"""Faults of launched servers: one that dies mid-session, one that is never ready, a port already taken.

A launched server here is the fake server behind a fake vLLM environment
(tests/core/fakeenv.py). After each session: the failing tests say what
happened, the others pass, results.json holds them all, and no server,
watchdog or child process of the fake environment is left.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpcore  # noqa: F401  kept loaded across in-process runs (see test_faults.py)
import psutil
import pytest
from core.fakeenv import launches, make_fake_env, pid_alive

from pytest_infer.server.process import free_port
from pytest_infer.testing.fakeserver import FakeServer

SESSION = """
def test_1(infer_client):
    assert infer_client.chat_completion("hi", max_tokens=2)["choices"]

def test_2(infer_client):
    assert infer_client.chat_completion("hi", max_tokens=2)["choices"]

def test_3(infer_client):
    assert infer_client.chat_completion("hi", max_tokens=2)["choices"]

def test_4_needs_no_server():
    pass
"""


def args(env: Path, *extra: str) -> list[str]:
    return [
        "--infer-framework=vllm",
        f"--infer-env=vllm={env}",
        "--infer-model=/models/m",
        "-p",
        "no:cacheprovider",
        "--junitxml=junit.xml",
        *extra,
    ]


def leftovers(env: Path) -> list[psutil.Process]:
    """Processes started from the fake environment, or watchdogs of its servers, still running."""
    pids = set(launches(env))
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
        except psutil.Error:
            continue
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if (
            str(env) in cmd
            or proc.info["pid"] in pids
            or ("pytest_infer.server.watchdog" in cmd and any(str(p) in cmd for p in pids))
        ):
            found.append(proc)
    return found


def outcomes(pytester: pytest.Pytester) -> dict[str, str]:
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    return {t["nodeid"].split("::")[1].split("[")[0]: t["outcome"] for t in results["tests"]}


def wait_gone(env: Path, timeout: float = 10.0) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while (left := leftovers(env)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_server_dying_mid_session_is_one_finding_and_started_again_for_the_tests_after_it(
    pytester, tmp_path
):
    """The fourth chat request ends the server (the readiness probe and vLLM's first request, then test_1's, then
    test_2's): test_2 fails on it, the server is started again on the same port, and test_3 is judged there."""
    env = make_fake_env(tmp_path / "vllm-dies", server_args="--fault die-after-3")
    pytester.makepyfile(test_session=SESSION)
    result = pytester.runpytest_subprocess(*args(env))
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*_ test_2*", "*RemoteProtocolError*"])
    result.stdout.fnmatch_lines([
        "findings: 1 root causes of 1 failed tests",
        "  [[]critical[]] vllm: the server exited with code 17 while test_2[[]vllm[]] ran; it was started again in * s"
        " (restart 1 of 2)",
        "vllm: * (ready in *s; DIED 1x, started again 1x): 1 failed, 2 passed",
    ])  # fmt: skip
    assert outcomes(pytester) == {"test_1": "passed", "test_2": "failed", "test_3": "passed"}
    (crash,) = json.loads((pytester.path / "infer-report" / "results.json").read_text())["targets"][
        "vllm"
    ]["crashes"]
    first, second = launches(env)
    assert crash["pid"] == first and crash["why"] == "exited with code 17" and crash["restarted"]
    assert (
        crash["during"] == ["test_session.py::test_2[vllm]"]
        and "fakeserver ready" in crash["log_tail"]
    )
    log = (pytester.path / "infer-report" / "servers" / "vllm.log").read_text()
    assert "--- pytest-infer: the server exited with code 17; starting it again ---" in log
    ports = re.findall(r"fake \S+ starting; argv: .*--port (\d+)", log)
    assert len(ports) == 2 and ports[0] == ports[1], "started again on the port the tests hold"
    assert "test_4_needs_no_server" in (pytester.path / "junit.xml").read_text()
    assert not any(pid_alive(p) for p in (first, second))
    assert not wait_gone(env)


DYING = """
import httpx, pytest
from pytest_infer.testing.fakeserver import DIE_MARKER

def chat(client, text):
    return client.chat_completion(text, max_tokens=2)["choices"]
"""
KILLS = """
def test_{i}_dies(infer_client):
    with pytest.raises(httpx.HTTPError):
        chat(infer_client, DIE_MARKER)
"""
AFTER = """
def test_4(infer_client):
    assert chat(infer_client, "hi")

def test_5(infer_client):
    assert chat(infer_client, "hi")
"""


def dying(kills: int) -> str:
    """Tests of which the first ``kills`` each end the server (``die-on-marker``), then two that need it."""
    return DYING + "".join(KILLS.format(i=i) for i in range(1, kills + 1)) + AFTER


def test_a_server_that_dies_at_every_test_is_started_again_at_most_twice_then_not_run(
    pytester, tmp_path
):
    """Each of the first three tests ends the server: two restarts, then the tests after the third death are not
    run, saying why, and the run fails on the deaths though no test failed."""
    env = make_fake_env(tmp_path / "vllm-dies-always", server_args="--fault die-on-marker")
    pytester.makepyfile(test_session=dying(3))
    result = pytester.runpytest_subprocess(*args(env))
    result.assert_outcomes(passed=3, skipped=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert outcomes(pytester) == {
        "test_1_dies": "passed", "test_2_dies": "passed", "test_3_dies": "passed", "test_4": "not_run",
        "test_5": "not_run",
    }  # fmt: skip
    gave_up = "vllm: the server exited with code 17 and was not started again: it died 3 times (at most 2 restarts)"
    result.stdout.fnmatch_lines([
        "findings: 3 root causes of 0 failed tests",
        "  [[]critical[]] vllm: the server exited with code 17 while test_1_dies[[]vllm[]] ran; it was started again *",
        "  [[]critical[]] vllm: the server exited with code 17 while test_2_dies[[]vllm[]] ran; it was started again *",
        "  [[]critical[]] vllm: the server exited with code 17 while test_3_dies[[]vllm[]] ran; it was not started"
        " again: it died 3 times (at most 2 restarts); 2 tests not run",
    ])  # fmt: skip
    crashes = json.loads((pytester.path / "infer-report" / "results.json").read_text())["targets"][
        "vllm"
    ]["crashes"]
    assert [c["restarted"] for c in crashes] == [True, True, False]
    assert [c["during"] for c in crashes] == [
        [f"test_session.py::test_{i}_dies[vllm]"] for i in (1, 2, 3)
    ]
    assert len(launches(env)) == 3
    junit = (pytester.path / "junit.xml").read_text()
    assert junit.count(f'message="pytest_infer.outcomes.NotRun: not run: {gave_up}') == 2
    summary = (pytester.path / "infer-report" / "summary.md").read_text()
    assert "### Findings: 3 root causes of 0 failed tests" in summary
    assert "(at most 2 restarts); 2 tests not run" in summary
    assert (
        "DIED 3x, started again 2x" in (pytester.path / "infer-report" / "report.html").read_text()
    )
    assert not wait_gone(env)


def test_a_server_that_cannot_start_again_after_it_died_is_not_run_for_the_rest(pytester, tmp_path):
    env = make_fake_env(
        tmp_path / "vllm-dies-for-good",
        server_args="--fault die-on-marker",
        restart_args="--exit-at-start 3",
    )
    pytester.makepyfile(test_session=dying(1))
    result = pytester.runpytest_subprocess(*args(env))
    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "  [[]critical[]] vllm: the server exited with code 17 while test_1_dies[[]vllm[]] ran; it could not be started"
        " again: server exited with code 3 during start-up; 2 tests not run",
    ])  # fmt: skip
    assert outcomes(pytester) == {"test_1_dies": "passed", "test_4": "not_run", "test_5": "not_run"}
    assert len(launches(env)) == 2
    assert not wait_gone(env)


def test_a_server_that_dies_in_the_last_test_is_a_finding_too(pytester, tmp_path):
    """No test comes after to meet the dead server: the session's end records the death all the same."""
    env = make_fake_env(tmp_path / "vllm-dies-last", server_args="--fault die-on-marker")
    pytester.makepyfile(test_session=DYING + KILLS.format(i=1))
    result = pytester.runpytest_subprocess(*args(env))
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "  [[]critical[]] vllm: the server exited with code 17 while test_1_dies[[]vllm[]] ran; it was not started"
        " again: no test was left",
    ])  # fmt: skip
    assert len(launches(env)) == 1
    assert not wait_gone(env)


def test_under_xdist_the_controller_starts_a_dead_server_again_for_the_workers(pytester, tmp_path):
    """A test on one worker ends the server; the controller starts it again on the same port at once, and the tests
    that find it gone, on that worker and on the other (which waits for the death first), are judged on it."""
    env = make_fake_env(tmp_path / "vllm-dies-xdist", server_args="--fault die-on-marker")
    flag = tmp_path / "died"
    pytester.makepyfile(
        test_a=DYING
        + KILLS.format(i=1)
        + f"    __import__('pathlib').Path({str(flag)!r}).touch()\n"
        + "\ndef test_after_on_the_same_worker(infer_client):\n    assert chat(infer_client, 'hi')\n",
        test_b=DYING
        + "import pathlib, time\n\n@pytest.fixture\ndef after_the_death():\n    deadline = time.monotonic() + 60\n"
        + f"    while not pathlib.Path({str(flag)!r}).exists() and time.monotonic() < deadline:\n"
        + "        time.sleep(0.05)\n\ndef test_on_the_other_worker(after_the_death, infer_client):\n"
        + "    assert chat(infer_client, 'hi')\n",
    )
    result = pytester.runpytest_subprocess(*args(env), "-n", "2", "--dist", "loadfile")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, "a server that died fails the run"
    (crash,) = json.loads((pytester.path / "infer-report" / "results.json").read_text())["targets"][
        "vllm"
    ]["crashes"]
    assert crash["restarted"] and "test_a.py::test_1_dies[vllm]" in crash["during"]
    assert len(launches(env)) == 2, "one server, started again once by the controller"
    assert not wait_gone(env)


def test_server_never_ready(pytester, tmp_path):
    env = make_fake_env(tmp_path / "vllm-slow", server_args="--startup-delay 600")
    pytester.makepyfile(test_session=SESSION)
    started = time.monotonic()
    result = pytester.runpytest_subprocess(*args(env, "--infer-startup-timeout=3"))
    elapsed = time.monotonic() - started
    result.assert_outcomes(
        passed=1, errors=1, skipped=2
    )  # the start failure once; the rest not run
    result.stdout.fnmatch_lines(["*vllm: server not ready after 3s*"])
    assert outcomes(pytester) == {"test_1": "error", "test_2": "not_run", "test_3": "not_run"}
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert "not ready after 3s" in results["targets"]["vllm"]["error"]
    assert elapsed < 60, f"a never-ready server cost {elapsed:.0f}s with a 3s start-up timeout"
    assert len(launches(env)) == 1, "started once, not once per test"
    assert not wait_gone(env)


def test_port_already_in_use(pytester, tmp_path, monkeypatch):
    """The port handed to the server is taken (the race after free_port): refuse, never test the other server."""
    env = make_fake_env(tmp_path / "vllm-port")
    pytester.makepyfile(test_session=SESSION)
    with FakeServer() as other:
        port = int(other.base_url.rsplit(":", 1)[1])
        monkeypatch.setattr("pytest_infer.server.pool.free_port", lambda host="127.0.0.1": port)
        result = pytester.runpytest(*args(env))
        chats = [r for r in other.requests if r[1].startswith("/v1/chat")]
    result.assert_outcomes(passed=1, errors=1, skipped=2)
    result.stdout.fnmatch_lines(
        [f"*port {port} on 127.0.0.1 is already in use by another process*"]
    )
    assert outcomes(pytester) == {"test_1": "error", "test_2": "not_run", "test_3": "not_run"}
    assert not chats, f"the tests ran against the other server: {chats}"
    assert launches(env) == [], "nothing was started on a taken port"


def test_a_taken_port_is_left_for_a_fresh_one(pytester, tmp_path, monkeypatch):
    """Another process took the free port first: the server starts on another, and the tests run
    there, never on the other process."""
    env = make_fake_env(tmp_path / "vllm-port-again")
    pytester.makepyfile(test_session=SESSION)
    with FakeServer() as other:
        taken = int(other.base_url.rsplit(":", 1)[1])
        ports = iter([taken])
        monkeypatch.setattr(
            "pytest_infer.server.pool.free_port",
            lambda host="127.0.0.1": next(ports, None) or free_port(host),
        )
        result = pytester.runpytest(*args(env))
        chats = [r for r in other.requests if r[1].startswith("/v1/chat")]
    result.assert_outcomes(passed=4)
    assert not chats, f"the tests ran against the other server: {chats}"
    assert len(launches(env)) == 1, "started once, on the fresh port"
    log = (pytester.path / "infer-report" / "servers" / "vllm.log").read_text()
    assert f"port {taken} on 127.0.0.1 is already in use by another process" in log

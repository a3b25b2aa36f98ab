"""Faults of launched servers: one that dies mid-session, one that is never ready, a port already taken.

A launched server here is the fake server behind a fake vLLM environment
(tests/core/fakeenv.py). After each session: the failing tests say what
happened, the others pass, results.json holds them all, and no server,
watchdog or child process of the fake environment is left.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpcore  # noqa: F401  kept loaded across in-process runs (see test_faults.py)
import psutil
import pytest
from core.fakeenv import launches, make_fake_env, pid_alive

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


def test_server_dying_mid_session(pytester, tmp_path):
    env = make_fake_env(tmp_path / "vllm-dies", server_args="--fault die-after-3")
    pytester.makepyfile(test_session=SESSION)
    result = pytester.runpytest_subprocess(*args(env))
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*the server process * has died; last lines of its log:*"])
    result.stdout.fnmatch_lines(["*_ test_2*", "*RemoteProtocolError*"])
    assert outcomes(pytester) == {"test_1": "passed", "test_2": "failed", "test_3": "error"}
    assert "test_4_needs_no_server" in (pytester.path / "junit.xml").read_text()
    assert not any(pid_alive(p) for p in launches(env))
    assert not wait_gone(env)


def test_server_never_ready(pytester, tmp_path):
    env = make_fake_env(tmp_path / "vllm-slow", server_args="--startup-delay 600")
    pytester.makepyfile(test_session=SESSION)
    started = time.monotonic()
    result = pytester.runpytest_subprocess(*args(env, "--infer-startup-timeout=3"))
    elapsed = time.monotonic() - started
    result.assert_outcomes(passed=1, errors=1, skipped=2)  # the start failure once; the rest not run
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
    result.stdout.fnmatch_lines([f"*port {port} on 127.0.0.1 is already in use by another process*"])
    assert outcomes(pytester) == {"test_1": "error", "test_2": "not_run", "test_3": "not_run"}
    assert not chats, f"the tests ran against the other server: {chats}"
    assert launches(env) == [], "nothing was started on a taken port"

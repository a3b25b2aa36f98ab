"""ServerProcess: readiness with liveness, fast failure with the log tail, whole-tree teardown."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from pytest_infer.adapters.base import LaunchSpec
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.server.pool import ServerPool
from pytest_infer.server.process import (
    PortTaken,
    ReadinessProbe,
    ServerProcess,
    ServerStartError,
    free_port,
)
from pytest_infer.testing.fakeserver import FakeServer

from .fakeenv import pid_alive


def fake_spec(port: int, *extra: str) -> LaunchSpec:
    return LaunchSpec(
        argv=[sys.executable, "-m", "pytest_infer.testing.fakeserver", "--port", str(port), *extra]
    )


def started(tmp_path, *extra: str, timeout: float = 30.0) -> ServerProcess:
    port = free_port()
    proc = ServerProcess(
        fake_spec(port, *extra),
        Endpoint(f"http://127.0.0.1:{port}"),
        tmp_path / "server.log",
        timeout,
    )
    proc.start()
    return proc


def test_ready_then_stopped(tmp_path):
    proc = started(tmp_path)
    try:
        assert proc.wait_ready() < 30
        assert proc.alive()
    finally:
        proc.stop()
    assert not proc.alive()
    assert "fakeserver ready" in proc.log_tail()


def test_server_has_its_own_group_but_shares_the_session(tmp_path):
    """Its own group: teardown by killpg, no terminal Ctrl-C. The same session: a new one is a new
    scheduler autogroup on Linux, which stalled the load client's loop by 120+ ms on 2 cores."""
    proc = started(tmp_path)
    try:
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
        assert os.getsid(proc.pid) == os.getsid(0)
    finally:
        proc.stop()


def test_exit_during_start_fails_fast_with_log_tail(tmp_path):
    proc = started(tmp_path, "--exit-at-start", "3")
    t0 = time.monotonic()
    with pytest.raises(ServerStartError) as excinfo:
        proc.wait_ready()
    assert time.monotonic() - t0 < 10
    message = str(excinfo.value)
    assert "exited with code 3 during start-up" in message
    assert "RuntimeError: simulated start-up crash" in message
    assert "loading shard 4" in message


def test_never_ready_times_out_and_is_stopped(tmp_path):
    proc = started(tmp_path, "--startup-delay", "60", timeout=1.5)
    with pytest.raises(ServerStartError, match=r"not ready after 2s"):
        proc.wait_ready()
    assert not proc.alive()


def test_readiness_timeout_is_measured_with_the_given_clock(tmp_path):
    """A fake clock makes the timing logic testable without waiting."""
    proc = started(tmp_path, "--startup-delay", "60", timeout=100)
    now = [0.0]
    try:
        with pytest.raises(ServerStartError, match="not ready after 100s"):
            proc.wait_ready(
                probe=lambda: False,
                clock=lambda: now[0],
                sleep=lambda s: now.__setitem__(0, now[0] + 30),
            )
        assert now[0] == 120.0  # polled at 0, 30, 60, 90, then gave up past 100
    finally:
        proc.stop()


def test_readiness_is_polled_quickly_at_first_then_at_the_interval(tmp_path):
    proc = started(tmp_path, "--startup-delay", "60", timeout=100)
    pauses: list[float] = []
    try:
        with pytest.raises(ServerStartError):
            proc.wait_ready(
                probe=lambda: False, clock=lambda: sum(pauses), sleep=pauses.append, interval=0.5
            )
    finally:
        proc.stop()
    assert pauses[:6] == [0.02, 0.04, 0.08, 0.16, 0.32, 0.5] and set(pauses[6:]) == {0.5}


def test_stop_reaches_children_in_the_group_and_children_that_left_it(tmp_path):
    """A server that forks workers (vLLM's engine core) and one that setsid()s away are both stopped."""
    script = tmp_path / "forker.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "a = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "b = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
        "print('CHILDREN:', a.pid, b.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = ServerProcess(
        LaunchSpec(argv=[sys.executable, str(script)]),
        Endpoint("http://127.0.0.1:9"),
        tmp_path / "log",
        10,
    )
    proc.start()
    deadline = time.monotonic() + 10
    while "CHILDREN:" not in proc.log_tail() and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = [int(p) for p in proc.log_tail().rsplit("CHILDREN:", 1)[1].split()]
    assert all(pid_alive(p) for p in pids)
    proc.stop(grace=5)
    assert not any(pid_alive(p) for p in pids)


def test_watchdog_stops_the_server_when_its_owner_is_killed(tmp_path):
    """Even SIGKILL of pytest leaves no server: the watchdog notices the owner is gone."""
    port = free_port()
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time\nfrom pathlib import Path\nfrom pytest_infer.adapters.base import LaunchSpec\nfrom"
                " pytest_infer.client.endpoint import Endpoint\nfrom pytest_infer.server.process import"
                " ServerProcess\np = ServerProcess(LaunchSpec(argv=[sys.executable, '-m',"
                f" 'pytest_infer.testing.fakeserver', '--port', '{port}']), Endpoint('http://127.0.0.1:{port}'),"
                f" Path({str(tmp_path / 'log')!r}), 30)\np.start(); p.wait_ready(); print(p.pid, flush=True);"
                " time.sleep(600)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    with owner:
        server_pid = int(owner.stdout.readline())
        assert pid_alive(server_pid)
        owner.kill()
    deadline = time.monotonic() + 15
    while pid_alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(server_pid)


def test_first_requests_reach_the_server_before_any_test_and_a_refused_one_becomes_a_note():
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pytest_infer.adapters.vllm import VLLMAdapter
    from pytest_infer.server.pool import ServerPool

    received = []

    class Recorder(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(
                (self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            )
            self.send_response(200 if self.path == "/v1/chat/completions" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = Endpoint(f"http://127.0.0.1:{server.server_address[1]}", "m", timeout=5)
        settle = VLLMAdapter().settle_grammar_backend()
        notes = ServerPool._send_first_requests(endpoint, (settle, ("/v1/nothing", {"x": 1})))
    finally:
        server.shutdown()
    assert [path for path, _ in received] == ["/v1/chat/completions", "/v1/nothing"]
    assert received[0][1]["model"] == "m" and received[0][1]["structured_outputs"]["json"][
        "required"
    ] == ["ok"]
    assert notes == ("the first request to /v1/nothing answered HTTP 404: ",)


def test_a_server_that_lists_no_model_is_ready_for_the_one_its_launch_names(tmp_path):
    """transformers serve 5.17 lists only the hub cache in /v1/models, and nothing on a bare machine, though it
    answers for the model it serves: its launch names that id, readiness asks it, and the tests address it."""
    port = free_port()
    endpoint = Endpoint(f"http://127.0.0.1:{port}", "tiny")
    spec = LaunchSpec(
        argv=fake_spec(port, "--fault", "unlisted-model").argv, served_model="fake-model"
    )
    proc = ServerProcess(spec, endpoint, tmp_path / "server.log", 30.0)
    proc.start()
    try:
        assert proc.wait_ready() < 30
        assert endpoint.models() == []
        assert ServerPool._served_model(endpoint, spec.served_model) == "fake-model"
        assert ServerPool._served_model(endpoint) == "tiny", (
            "without a launch's id, the name asked for"
        )
        assert not ReadinessProbe(endpoint, spec.ready_paths)(), (
            "nothing listed and nothing named: not ready yet"
        )
    finally:
        proc.stop()


def test_a_probe_answered_by_another_process_is_no_start(tmp_path):
    """The race after ``free_port``: another process binds the port after the check at start and
    answers the probe while this server has not bound yet. Ready is refused, and the server
    stopped."""
    port = free_port()
    proc = ServerProcess(
        LaunchSpec(argv=[sys.executable, "-c", "import time; time.sleep(60)"]),
        Endpoint(f"http://127.0.0.1:{port}"),
        tmp_path / "server.log",
        30.0,
    )
    proc.start()
    try:
        with FakeServer(port=port):
            with pytest.raises(PortTaken, match=rf"port {port} was taken by another process"):
                proc.wait_ready()
        assert not proc.alive()
    finally:
        proc.stop()


def test_a_probe_answered_by_a_child_of_the_server_is_a_start(tmp_path):
    """The listener may be a child of the launched process (a launcher script): that is ours."""
    port = free_port()
    proc = ServerProcess(
        LaunchSpec(
            argv=[
                "sh",
                "-c",
                f"{sys.executable} -m pytest_infer.testing.fakeserver --port {port}; true",
            ]
        ),
        Endpoint(f"http://127.0.0.1:{port}"),
        tmp_path / "server.log",
        30.0,
    )
    proc.start()
    try:
        assert proc.wait_ready() < 30
    finally:
        proc.stop()

"""One server process: started in its own process group, watched, and always stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import psutil

from ..adapters.base import LaunchSpec
from ..client.endpoint import Endpoint
from ..outcomes import InferError
from ..secrets import MASK, redact

PF_EXITING = 0x4  # Linux's flag of a process inside exit(): /proc/PID/stat, field 9
# How long a process already inside exit() may take to be gone: its parent reaps it only when its
# last thread has ended, and SGLang stopped at 12 GB took longer than 5 s to give back its memory.
EXIT_WAIT = 120.0


class ServerStartError(InferError, RuntimeError):
    """The server exited or never became ready; the message carries its log tail."""


class PortTaken(ServerStartError):
    """Another process holds the port chosen for the server. ``free_port`` closes the port before
    the server binds it, so another process can take it in between; a new port avoids the race."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_in_use(host: str, port: int) -> bool:
    """Something already accepts connections there (another server, or a leftover of an earlier
    run).
    """
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _listening(conn: Any, port: int) -> bool:
    return conn.status == psutil.CONN_LISTEN and bool(conn.laddr) and conn.laddr.port == port


def listeners(port: int) -> set[int | None]:
    """The processes listening on ``port``: None for one this user may not see (another user's)."""
    return {conn.pid for conn in psutil.net_connections(kind="tcp") if _listening(conn, port)}


def refuses(host: str, port: int, timeout: float = 0.25) -> bool:
    """Nothing listens there: a connection is refused (one that times out is a busy server's full
    backlog).
    """
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def _copy_redacted(pipe, log_path: Path, secrets: tuple[str, ...]) -> None:
    """Copy a server's output to its log line by line, each secret replaced by the mask."""
    patterns = [(s.encode(), MASK.encode()) for s in secrets if s]
    with pipe, log_path.open("ab") as log:
        for line in iter(pipe.readline, b""):
            for secret, mask in patterns:
                line = line.replace(secret, mask)
            log.write(line)
            log.flush()


def tail(path: Path, lines: int = 40) -> str:
    try:
        with path.open("r", errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines))
    except OSError:
        return ""


class NotServing(InferError):
    """The server answers its routes but cannot generate: a start failure, not something to wait
    out.
    """


GENERATION_PROBES = (
    (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, "temperature": 0},
    ),
    # base models have no chat template
    ("/v1/completions", {"prompt": "hi", "max_tokens": 1, "temperature": 0}),
)


@dataclass(slots=True)
class ReadinessProbe:
    """Ready means able to generate: the ready paths answer 200, then one minimal generation
    succeeds.

    A route that answers while the engine behind it is dead (vLLM-CPU on a model its attention
    kernel rejects: /health 200, every generation 500) raises ``NotServing`` with what the server
    said. Each attempt is short, so a dead process is seen fast.
    """

    endpoint: Endpoint
    paths: tuple[str, ...]
    generation_timeout: float = 60.0
    # asked for when /v1/models lists none (``LaunchSpec.served_model``)
    served_model: str | None = None

    def __call__(self) -> bool:
        try:
            with self.endpoint.http(timeout=2.0) as client:
                answers = {path: client.get(path) for path in self.paths}
                if any(resp.status_code != 200 for resp in answers.values()):
                    return False
                return self._generates(
                    client, answers.get("/v1/models") or client.get("/v1/models")
                )
        except httpx.HTTPError:
            return False

    def _generates(self, client: httpx.Client, models: httpx.Response) -> bool:
        try:
            listed = models.json()["data"]
            model = listed[0]["id"] if listed else self.served_model
        except (ValueError, LookupError, TypeError):
            return False
        if model is None:
            return False  # no model listed yet
        refusals = []
        for path, body in GENERATION_PROBES:
            resp = client.post(path, json={"model": model, **body}, timeout=self.generation_timeout)
            if resp.status_code == 200:
                return True
            if resp.status_code == 503:
                return False  # still warming up
            refusals.append(f"POST {path} -> HTTP {resp.status_code} {resp.text[:300]}")
            if resp.status_code >= 500:
                break
        raise NotServing(
            "the server answers its routes but cannot generate: " + "; ".join(refusals)
        )


def process_tree_rss(pid: int) -> int:
    """Resident memory of a process and all its descendants, in bytes."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


class MemoryGuard(threading.Thread):
    """Stops a server whose process tree holds more than ``limit`` bytes, and says so in its log.

    A server that grows without bound (SGLang 0.5.23 building ``n=1_000_000`` choices) would
    otherwise take the machine, and every later test with it; stopped, it fails the tests
    that meet it with this line in their log tail, and the run goes on.
    """

    def __init__(
        self, process: ServerProcess, limit: int, interval: float = 1.0, setting: str = ""
    ) -> None:
        super().__init__(name="pytest-infer-memory-guard", daemon=True)
        self.process, self.limit, self.interval, self.setting = process, limit, interval, setting
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(self.interval):
            pid = self.process.pid
            if pid is None or not running(pid):
                return
            rss = process_tree_rss(pid)
            if rss > self.limit:
                gb = f"{rss / 2**30:.1f} GB"
                limit = f"{self.limit / 2**30:.1f} GB" + (
                    f" ({self.setting})" if self.setting else ""
                )
                with self.process.log_path.open("a") as log:
                    log.write(
                        f"\npytest-infer stopped the server: its memory ({gb}) passed the limit of "
                        f"{limit}\n"
                    )
                self.process.stopped_why = f"was stopped at its memory limit ({gb}, over {limit})"
                # its death is now, however long the group takes to end
                self.process.exited_at = time.monotonic()
                terminate_tree(pid, grace=5)
                return

    def stop(self) -> None:
        self._halt.set()


class ServerProcess:
    """Starts a launch spec, waits until it is ready or dead, and stops its whole process tree."""

    def __init__(
        self,
        spec: LaunchSpec,
        endpoint: Endpoint,
        log_path: Path,
        startup_timeout: float,
        secrets: tuple[str, ...] = (),
        memory_limit: int | None = None,
        memory_setting: str = "",
    ) -> None:
        self.spec = spec
        self.endpoint = endpoint
        self.base_url = endpoint.base_url
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.secrets = secrets
        self.proc: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._copier: threading.Thread | None = None
        self.memory_limit, self.memory_setting = memory_limit, memory_setting
        self._guard: MemoryGuard | None = None
        self.stopped_why = ""  # the memory guard's line, when it stopped the server
        self.stopping = False  # stop() was called: an exit from here on is no death
        # the process has ended (set by the reaper, which waits on it)
        self.exited = threading.Event()
        # when it ended or was first seen ending, in ``time.monotonic()``
        self.exited_at: float | None = None
        # called (from the reaper thread) when the process ends without ``stop()``: the pool's death
        # handler
        self.on_exit: Callable[[ServerProcess], None] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def exit_reason(self) -> str:
        """Why the process ended, as a verb phrase ("exited with code 17"): its exit code, the
        signal, or the memory guard's reason."""
        code = self.proc.returncode if self.proc else None
        if self.stopped_why:
            return self.stopped_why
        if code is None:
            return "still running"
        return (
            f"was killed by {signal.Signals(-code).name}"
            if code < 0
            else f"exited with code {code}"
        )

    def ending(self) -> bool:
        """Whether the process has ended or is ending: gone, exiting, or its port refusing
        connections. A client sees a crashed server's connection drop a few milliseconds before the
        process is gone."""
        if self.pid is None or not running(self.pid) or exiting(self.pid):
            return True
        url = urlparse(self.base_url)
        return bool(url.hostname and url.port and refuses(url.hostname, url.port))

    def ended(self, wait: float = EXIT_WAIT) -> bool:
        """The process has ended, or is gone or inside exit() and reaped within ``wait`` seconds
        (``exited_at`` set).
        """
        pid = self.pid
        if self.exited.is_set():
            return True
        return pid is not None and (not running(pid) or exiting(pid)) and self.exited.wait(wait)

    def _reap(self) -> None:
        """Wait for the process to end, note when, and tell ``on_exit`` unless it was stopped on
        purpose.
        """
        assert self.proc is not None
        self.proc.wait()
        self.exited_at = min(self.exited_at or time.monotonic(), time.monotonic())
        self.exited.set()
        if not self.stopping and self.on_exit is not None:
            self.on_exit(self)

    def start(self) -> None:
        url = urlparse(self.base_url)
        if url.hostname and url.port and port_in_use(url.hostname, url.port):
            # Its readiness probe would succeed against the other process, and the tests would run
            # there.
            raise PortTaken(
                f"port {url.port} on {url.hostname} is already in use by another process; the "
                "server was not started"
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"$ {redact(' '.join(self.spec.argv), self.secrets)}\n".encode())
            log.flush()
            try:
                self.proc = subprocess.Popen(
                    self.spec.argv,
                    env={**os.environ, **self.spec.env},
                    stdin=subprocess.DEVNULL,
                    # With a secret, the output passes through a redacting copier: servers print
                    # their config, and the key must never reach the log file (or any tail of it).
                    stdout=subprocess.PIPE if self.secrets else log,
                    stderr=subprocess.STDOUT,
                    # Own process group, so teardown reaches every child and a terminal's Ctrl-C
                    # does not; but the same session. A new session is a new scheduler autogroup
                    # on Linux, and against a server in its own autogroup the load client's
                    # event loop stalled for 120-160 ms (p99) at one stream on 2 cores, which
                    # made the SLO suite's measurements invalid (or its TTFTs wrong).
                    process_group=0,
                )
            except OSError as exc:
                raise ServerStartError(f"could not run {self.spec.argv[0]!r}: {exc}") from exc
        if self.secrets and self.proc.stdout is not None:
            self._copier = threading.Thread(
                target=_copy_redacted,
                args=(self.proc.stdout, self.log_path, self.secrets),
                daemon=True,
            )
            self._copier.start()
        if self.memory_limit:
            self._guard = MemoryGuard(self, self.memory_limit, setting=self.memory_setting)
            self._guard.start()
        # A watchdog outside pytest stops the group even if pytest itself is SIGKILLed.
        self._watchdog = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest_infer.server.watchdog",
                str(os.getpid()),
                str(self.proc.pid),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        threading.Thread(target=self._reap, name="pytest-infer-reaper", daemon=True).start()
        if self.stopping:  # stopped (the session ending) while it was being started
            self.stop()

    def wait_ready(
        self,
        probe: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        interval: float = 0.5,
    ) -> float:
        """Block until ready; return seconds taken. Fails fast when the process exits.

        Polls quickly at first, then backs off to ``interval``: a server up in a fraction of a
        second is seen at once (tests start hundreds; its start time is recorded), one that loads a
        model for minutes is asked twice a second."""
        assert self.proc is not None, "start() first"
        probe = probe or ReadinessProbe(
            self.endpoint, self.spec.ready_paths, served_model=self.spec.served_model
        )
        started = clock()
        pause = min(0.02, interval)
        while True:
            code = self.proc.poll()
            if code is not None:
                self.stop()  # reaps the watchdog too, which would otherwise outlive this object
                raise ServerStartError(
                    f"server exited with code {code} during start-up; last lines of "
                    f"{self.log_path}:\n{self.log_tail()}"
                )
            try:
                if probe():
                    self._check_port_is_ours()
                    return clock() - started
            except NotServing as exc:
                self.stop()
                raise ServerStartError(
                    f"{exc}; last lines of {self.log_path}:\n{self.log_tail()}"
                ) from None
            if clock() - started > self.startup_timeout:
                self.stop()
                raise ServerStartError(
                    f"server not ready after {self.startup_timeout:.0f}s (paths "
                    f"{', '.join(self.spec.ready_paths)}); "
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            sleep(pause)
            pause = min(2 * pause, interval)

    def _check_port_is_ours(self) -> None:
        """The readiness probe may have been answered by another process that bound the port first
        (this one then dies on its bind a moment later): the tests would run there. Raise
        ``PortTaken`` where the port's listener is a known process outside this server's tree."""
        port = urlparse(self.base_url).port
        if port is None or not self.spec.listens_in_tree or self.proc is None:
            return
        try:
            tree = [psutil.Process(self.proc.pid)]
            tree += tree[0].children(recursive=True)
            if any(
                _listening(conn, port)
                for process in tree
                for conn in process.net_connections(kind="tcp")
            ):
                return
            owners = listeners(port)
        except psutil.Error:
            return  # gone meanwhile: the next poll sees the exit
        strangers = {pid for pid in owners if pid is not None} - {process.pid for process in tree}
        if strangers:
            self.stop()
            raise PortTaken(
                f"port {port} was taken by another process (pid {min(strangers)}) while the "
                "server started; its readiness probe was answered there"
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        return redact(tail(self.log_path, lines), self.secrets)

    def _drain(self, timeout: float = 5.0) -> None:
        """Let the redacting copier write the last lines of an exited server."""
        if self._copier is not None:
            self._copier.join(timeout)

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM the whole group (and any child that left it), wait, then SIGKILL."""
        self.stopping = True
        if self.proc is None:
            return
        # joined: a guard still reading the process table must not outlive the session
        if self._guard is not None:
            self._guard.stop()
            self._guard.join(timeout=5)
        terminate_tree(self.proc.pid, grace)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._drain()
        if self._watchdog is not None and self._watchdog.poll() is None:
            self._watchdog.kill()
            self._watchdog.wait()


def terminate_tree(pid: int, grace: float) -> None:
    """Stop a process group led by ``pid`` plus descendants that changed group."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for child in descendants:
            try:
                child.send_signal(sig)
            except psutil.Error:
                pass
        procs = [p for p in [*descendants] if running(p)]
        try:
            leader = psutil.Process(pid)
            procs.append(leader)
        except psutil.Error:
            pass
        _, alive = psutil.wait_procs(procs, timeout=grace if sig == signal.SIGTERM else 5)
        if not alive and not _group_exists(pid):
            return


def running(process: psutil.Process | int) -> bool:
    """The process exists and is not a zombie (an exited child nobody has reaped yet)."""
    try:
        proc = psutil.Process(process) if isinstance(process, int) else process
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def exiting(pid: int) -> bool:
    """The process is inside exit() (Linux; elsewhere, never known): its clients have seen it go,
    psutil not yet.
    """
    try:
        with open(f"/proc/{pid}/stat") as fh:
            # after the command name, which may hold spaces
            fields = fh.read().rsplit(")", 1)[1].split()
        return bool(int(fields[6]) & PF_EXITING)
    except (OSError, IndexError, ValueError):
        return False


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False

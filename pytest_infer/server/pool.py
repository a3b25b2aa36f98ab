"""One server per target per session, owned by exactly one process.

Without xdist the pytest process owns every server and starts each on first
use. Under xdist the controller owns them: it starts them all before the
workers start (``pytest_configure_node``) and hands each worker a ``ServerInfo``
to connect to; workers never launch anything.

A launched server that dies is started again, on the same port (workers hold its URL), for the tests
after it, at most ``MAX_RESTARTS`` times; each death is recorded (``Crash``) with the tests that
were running when it ended. Without xdist the pool notices a death when the next test asks for the
server, so the test that met it judges the death as it happened. Under xdist the controller starts
the server again as soon as its process ends and writes what became of it to a state file beside the
log, which a worker that finds the process gone waits for.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import httpx
import psutil

from ..adapters import registry
from ..adapters.base import Adapter, Builtin, FrameworkVersion, LaunchRequest, LaunchSpec
from ..adapters.external import ENDPOINT, detect_endpoint
from ..client.endpoint import Endpoint
from ..client.tls import tls
from ..models import registry as models
from ..options import DEFAULT_MEMORY_SHARE, MEMORY_LIMIT, InferOptions
from ..results.model import Crash, ServerFacts, atomic_write_text
from ..targets import Target
from .process import PortTaken, ServerProcess, ServerStartError, free_port, running, tail

LOG_WINDOW_BYTES = 1 << 20  # ``log_since`` reads at most this much of the log's end
# How long an ``--infer-endpoint`` has to answer its first request (any HTTP status) before it is
# called unreachable: a remote server answers its model list in well under a second, and the whole
# session waits on this once.
REACH_TIMEOUT = 10.0
# How many times a launched server that dies is started again in one session. A crash is a finding
# of the test that caused it, and the tests after it still deserve a server (the robustness suite
# may crash one more than once); a server that keeps dying would otherwise cost a start-up per test.
MAX_RESTARTS = 2
# starts on a fresh port after another process took the one chosen (``PortTaken``)
PORT_TRIES = 3
STATE_POLL = 0.2  # how often a worker that found the server gone reads the controller's state file


@dataclass(slots=True, kw_only=True)
class ServerInfo(ServerFacts):
    """One running server: its facts, its framework's adapter (``framework`` is the adapter's name),
    and how to reach it.

    It crosses to xdist workers as JSON (``to_dict``, ``from_dict``): the adapter travels as the
    framework's name. ``builtin``, the built-in model it serves (None: any other), travels as the
    model's.
    """

    framework: str = field(init=False)
    target: str
    adapter: Adapter = field(compare=False)
    base_url: str
    log_path: str | None = None
    model_path: str | None = None  # what a launched server loaded: a local folder, or a hub id
    pid: int | None = None
    start_seconds: float | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()
    crashes: int = 0  # how many times it died in this session (``ServerPool.crashes`` holds each)
    # the context the plugin's launch line set (``LaunchSpec.context``)
    launch_context: int | None = None
    builtin: Builtin | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        self.framework = self.adapter.name

    def to_dict(self) -> dict[str, Any]:
        given = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "adapter"}
        return given | {"builtin": self.builtin.name if self.builtin else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerInfo:
        """A server handed over as ``to_dict`` made it, its adapter and built-in model found again
        by name."""
        given = dict(data, notes=tuple(data.get("notes", ())))
        framework, builtin = given.pop("framework"), given.pop("builtin", None)
        return cls(
            **given,
            adapter=ENDPOINT if framework == ENDPOINT.name else registry.get(framework),
            builtin=models.builtin(builtin) if builtin else None,
        )

    @property
    def version_text(self) -> str:
        return str(FrameworkVersion(self.version, commit=self.commit))

    def alive(self, settle: float = 5.0) -> bool:
        """For launched servers: is the process still there and answering (from any process on the
        host)?

        A dying server drops its connections before it is gone, and while it exits its port may
        still accept connections that nobody will answer: a client can see the connection drop
        while the process still looks alive. So a running process must also answer HTTP (any
        status); one that does not is given up to ``settle`` seconds to finish exiting.
        """
        if self.pid is None:
            return True
        deadline = time.monotonic() + settle
        while running(self.pid):
            if _answers(self.base_url) or time.monotonic() > deadline:
                return True
            time.sleep(0.05)
        return False

    def known_context(self, endpoint: Endpoint) -> tuple[int | None, str]:
        """The model's context in tokens and where it was read: what /v1/models advertises, else
        what the plugin's launch line set, else a built-in model's own where it is small enough to
        fill (tiny). None, and why, for a server that advertises none and that the plugin did not
        launch with one (an endpoint; a launch that sets none): a context assumed for the model may
        not be the server's (transformers serve runs gemma-3-270m at 32768, not the 2048 the plugin
        launches it with elsewhere), and a prompt over the assumed one judges nothing."""
        if advertised := endpoint.context_length():
            return advertised, "advertised in /v1/models"
        if self.launch_context:
            return self.launch_context, f"set by the plugin's {self.framework} launch line"
        if own := (self.builtin.own_context if self.builtin else None):
            return own, "the built-in model's own positions, past which no server runs it"
        if not self.launched:
            return None, "an endpoint the plugin did not launch advertises no context in /v1/models"
        return None, (
            f"the plugin's {self.framework} launch sets no context and /v1/models advertises none: "
            "the engine's own"
            " default applies, unknown here"
        )

    def log_tail(self, lines: int = 40) -> str:
        return tail(Path(self.log_path), lines) if self.log_path else ""

    @property
    def state_path(self) -> Path | None:
        """Where the owning process writes what became of a launched server (under xdist): beside
        its log.
        """
        return Path(self.log_path).with_suffix(".state.json") if self.log_path else None

    def take(self, state: dict[str, Any]) -> None:
        """Become the same target's server as the owner wrote it (``to_dict``), started again or
        given up: in place, since fixtures of session scope hold this object; the adapter stays (no
        lookup by name after configure)."""
        for name in ("pid", "start_seconds", "error", "crashes", "model"):
            setattr(self, name, state[name])
        self.notes = tuple(state["notes"])

    def log_mark(self) -> int:
        """Where the server's log ends now (its size in bytes; 0 without a log): pass it to
        ``log_since``.
        """
        if not self.log_path:
            return 0
        try:
            return os.stat(self.log_path).st_size
        except OSError:
            return 0

    def log_since(self, mark: int, max_lines: int = 40) -> list[str]:
        """The complete lines the server logged after ``mark`` (a ``log_mark``), the last
        ``max_lines`` of them.

        A line still being written (no newline yet) is left for a later call; the rest of a line
        begun before ``mark`` is not returned (it belongs to the time before). The log is already
        redacted when written (the process's masking copier); this reads nothing else. Lines are
        decoded as UTF-8, bad bytes replaced. Another request running at the same time logs into the
        same window: it is the server's log for that stretch of time, not for one request alone.
        """
        if not self.log_path or max_lines <= 0:
            return []
        try:
            with open(self.log_path, "rb") as fh:
                end = fh.seek(0, os.SEEK_END)
                # the log was started afresh (a new server on this path): all of it is new
                if end < mark:
                    mark = 0
                start = max(mark, end - LOG_WINDOW_BYTES)
                fh.seek(start - 1 if start > 0 else 0)
                data = fh.read(end - fh.tell())
        except OSError:
            return []
        if start > 0:
            cut = data.find(b"\n")  # data begins with the byte before ``start``
            # drop the rest of a line begun before the window
            data = data[cut + 1 :] if cut >= 0 else b""
        lines = data.split(b"\n")[:-1]  # the last piece is a line still being written, or empty
        return [
            line.decode("utf-8", errors="replace").removesuffix("\r") for line in lines[-max_lines:]
        ]


def _answers(base_url: str) -> bool:
    try:
        httpx.get(f"{base_url}/v1/models", timeout=2.0, verify=tls())
        return True
    except httpx.HTTPError:
        return False


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _has_request(exc: httpx.RequestError) -> bool:
    """httpx raises ``RuntimeError`` for an error's request where none was set."""
    try:
        return exc.request is not None
    except RuntimeError:
        return False


class ServerPool:
    def __init__(self, options: InferOptions, targets: list[Target], *, owner: bool = True) -> None:
        self.options = options
        self.targets = {t.id: t for t in targets}
        self.owner = owner
        self.infos: dict[str, ServerInfo] = {}
        self.processes: dict[str, ServerProcess] = {}
        self.crashes: dict[str, list[Crash]] = {}  # each launched target's deaths, in order
        # xdist: workers test the servers; a death is handled as soon as the process ends
        self.handed_off = False
        # the process that became ready and serves each target now
        self._serving: dict[str, ServerProcess] = {}
        # what started each launched target, to start it again
        self._specs: dict[str, LaunchSpec] = {}
        # node id -> [started, ended] (time.monotonic) in the owner
        self._tests: dict[str, list[float | None]] = {}
        self._closing = False
        self._lock = threading.Lock()
        # one lock per target: servers start side by side
        self._starting: dict[str, threading.Lock] = {}

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.options.api_key,) if self.options.api_key else ()

    def provide(self, infos: dict[str, dict]) -> None:
        """Worker side: take the controller's servers."""
        self.infos.update({tid: ServerInfo.from_dict(data) for tid, data in infos.items()})

    def _target_lock(self, target_id: str) -> threading.Lock:
        with self._lock:
            return self._starting.setdefault(target_id, threading.Lock())

    def get(self, target_id: str) -> ServerInfo:
        """The target's server: started on first use; one found dead or ending since the last test
        is started again first (within ``MAX_RESTARTS``), or, in a worker, waited for while the
        controller does it."""
        with self._target_lock(target_id):
            if target_id not in self.infos:
                if not self.owner:
                    raise RuntimeError(f"no server for {target_id} was handed to this xdist worker")
                self.infos[target_id] = self._start(self.targets[target_id])
            info = self.infos[target_id]
            serving = self._serving.get(target_id)
            if serving is not None and serving.ended():
                self._restart(target_id, serving)
            elif (
                not self.owner
                and info.pid is not None
                and info.error is None
                and not running(info.pid)
            ):
                self._await_restart(info)
            return info

    def hand_off(self) -> None:
        """From now on the servers are tested by xdist workers: a death is handled when the process
        ends.
        """
        self.handed_off = True

    def test_started(self, nodeid: str) -> None:
        """A test began (in this process, or in a worker as the controller learns it): what a death
        is laid to.
        """
        self._tests[nodeid] = [time.monotonic(), None]

    def test_ended(self, nodeid: str) -> None:
        """A test ended. A server found dead or dying now died no later: its reaper may learn it
        only after the next test began, and the death belongs to the test that met it."""
        now = time.monotonic()
        for process in list(self._serving.values()):
            if process.ending():
                process.exited_at = min(process.exited_at or now, now)
        if nodeid in self._tests:
            self._tests[nodeid][1] = time.monotonic()

    def _running_at(self, target_id: str, moment: float) -> tuple[list[str], str]:
        """The target's tests that were running at ``moment``, and the last one that had ended by
        then.
        """
        of_target = re.compile(rf"[\[-]{re.escape(target_id)}[\]-]")
        during, after = [], ""
        for nodeid, (started, ended) in self._tests.items():
            if not of_target.search(nodeid) or started is None or started > moment:
                continue
            if ended is None or ended >= moment:
                during.append(nodeid)
            else:
                after = nodeid
        return during, after

    def start_all(self, target_ids: list[str]) -> None:
        """Start the servers of these targets not yet running, side by side: an engine's start is
        mostly one process importing and compiling on one core, so on a machine of several the
        starts overlap."""
        with ThreadPoolExecutor(
            max_workers=max(1, len(target_ids)), thread_name_prefix="pytest-infer-start"
        ) as run:
            list(run.map(self.get, target_ids))

    def stop_all(self) -> None:
        with self._lock:
            self._closing = True
            processes = list(self.processes.values())
        for process in processes:
            process.stop()

    def _start(self, target: Target) -> ServerInfo:
        if not target.launched:
            return self._connect(target)
        adapter = target.adapter
        environment = target.environment
        assert environment is not None
        version = adapter.detect_version(environment)
        log_path = (self.options.report_dir / "servers" / f"{target.id}.log").resolve()
        base = ServerInfo(
            target=target.id,
            adapter=adapter,
            model=target.model,
            base_url="",
            version=version.version,
            distribution=version.distribution,
            commit=version.commit,
            version_source=version.source,
            log_path=str(log_path),
            builtin=target.builtin,
        )
        builtin = target.builtin
        try:  # a built-in model in the form the engine loads
            model_path = builtin.path(adapter.model_form, environment) if builtin else target.model
        # a failed fetch or build fails this target's tests, not the session
        except Exception as exc:
            base.error = str(exc)
            return base
        base.model_path = str(model_path)
        for attempt in range(1, PORT_TRIES + 1):
            port = free_port(self.options.host)
            base.base_url = _url(self.options.host, port)
            spec = adapter.launch(
                LaunchRequest(
                    model=str(model_path),
                    served_model_name=target.model,
                    host=self.options.host,
                    port=port,
                    environment=environment,
                    extra_args=target.server_args,
                    api_key=self.options.api_key,
                    version=version,
                    builtin=target.builtin,
                )
            )
            if target.deterministic is not None:
                spec = target.deterministic.apply(spec)
            base.notes, base.launch_context = spec.notes, spec.context
            self._specs[target.id] = spec
            endpoint = self.endpoint(base)
            try:
                base.start_seconds = self._launch(target.id, base, spec)
            except PortTaken as exc:
                # another process bound the free port first: a new one avoids the race
                if attempt == PORT_TRIES:
                    base.error = str(exc)
                    return base
                log_path.parent.mkdir(parents=True, exist_ok=True)
                with log_path.open("a") as log:
                    log.write(f"\n--- pytest-infer: {exc}; starting it on another port ---\n")
            except ServerStartError as exc:
                base.error = str(exc)
                return base
            else:
                break
        base.model = self._served_model(endpoint, spec.served_model) or target.model
        base.notes += self._send_first_requests(
            endpoint.with_model(base.model), spec.first_requests
        )
        return base

    def _launch(self, target_id: str, info: ServerInfo, spec: LaunchSpec) -> float:
        """Start ``spec``'s server and wait until it is ready: the seconds that took. The caller
        holds the target's lock, so a death seen meanwhile (``on_exit``) waits for this to finish.
        """
        assert info.log_path is not None
        process = ServerProcess(
            spec,
            self.endpoint(info),
            Path(info.log_path),
            self.options.startup_timeout,
            self.secrets,
            memory_limit=self._memory_limit(),
            memory_setting=MEMORY_LIMIT,
        )
        process.on_exit = lambda ended: self._ended(target_id, ended)
        with self._lock:
            if self._closing:
                raise ServerStartError("not started: the session is ending")
            self.processes[target_id] = process
        try:
            process.start()
            info.pid = process.pid
            seconds = round(process.wait_ready(), 2)
        except ServerStartError:
            process.stop()
            raise
        self._serving[target_id] = process
        return seconds

    def _ended(self, target_id: str, process: ServerProcess) -> None:
        """A server process ended without being stopped (from its reaper thread). Under xdist nobody
        else would see it soon: start it again now. Otherwise the next test's ``get`` does, so the
        test that met it judges the death."""
        if self.handed_off:
            with self._target_lock(target_id):
                self._restart(target_id, process)

    def record_last_deaths(self) -> None:
        """At the session's end: a server that died during the last tests met no later test that
        would have seen it; its death is recorded all the same."""
        for target_id in list(self._serving):
            with self._target_lock(target_id):
                process = self._serving.get(target_id)
                if process is not None and process.ended():
                    self._restart(target_id, process, again=False)

    def _restart(self, target_id: str, process: ServerProcess, again: bool = True) -> None:
        """Record the death of ``process`` and start the target's server ``again``, within
        ``MAX_RESTARTS``; once given up, ``error`` says why, and the target's later tests are not
        run. The caller holds the target's lock."""
        if self._serving.get(target_id) is not process or self._closing:
            return  # handled already, or stopped with the session
        del self._serving[target_id]
        info = self.infos[target_id]
        assert process.exited_at is not None
        during, after = self._running_at(target_id, process.exited_at)
        crash = Crash(
            process.pid, process.exit_reason(), during, after, log_tail=process.log_tail()
        )
        process.stop()  # what is left of its process group, and its watchdog
        crashes = self.crashes.setdefault(target_id, [])
        crashes.append(crash)
        info.crashes = len(crashes)
        if not again:
            crash.then = "was not started again: no test was left"
        elif len(crashes) > MAX_RESTARTS:
            crash.then = (
                f"was not started again: it died {len(crashes)} times (at most "
                f"{MAX_RESTARTS} restarts)"
            )
        else:
            assert info.log_path is not None
            with open(info.log_path, "a") as log:
                log.write(f"\n--- pytest-infer: the server {crash.why}; starting it again ---\n")
            try:
                seconds = self._launch(target_id, info, self._specs[target_id])
            except ServerStartError as exc:
                crash.then = (
                    "could not be started again: "
                    f"{str(exc).splitlines()[0].split('; last lines of ')[0]}"
                )
            else:
                crash.restarted = True
                crash.then = (
                    f"was started again in {seconds:.1f} s (restart {len(crashes)} of "
                    f"{MAX_RESTARTS})"
                )
                notes = self._send_first_requests(
                    self.endpoint(info), self._specs[target_id].first_requests
                )
                info.notes += tuple(note for note in notes if note not in info.notes)
        if not crash.restarted:
            info.error = f"the server {crash.why} and {crash.then}"
        self._publish(info)

    def _publish(self, info: ServerInfo) -> None:
        """Under xdist, what became of a server, for the workers (``_await_restart``)."""
        if self.handed_off and info.state_path is not None:
            atomic_write_text(info.state_path, json.dumps(info.to_dict()))

    def _await_restart(self, info: ServerInfo) -> None:
        """A worker found its server's process gone: wait for the controller to start it again (or
        give it up), and take what it wrote. Still gone at the deadline: ``info`` is left as it was,
        and the test meets a dead server."""
        assert info.state_path is not None
        # the old group's stop, then a start
        deadline = time.monotonic() + self.options.startup_timeout + 60
        while time.monotonic() < deadline:
            try:
                state = json.loads(info.state_path.read_text())
            except (OSError, ValueError):
                state = {}
            pid = state.get("pid")
            if state.get("error") or pid not in (None, info.pid) and running(pid):
                info.take(state)
                return
            time.sleep(STATE_POLL)

    @staticmethod
    def _send_first_requests(
        endpoint: Endpoint, requests: tuple[tuple[str, dict], ...]
    ) -> tuple[str, ...]:
        """Send the launch spec's first requests; what went wrong becomes a note, since the server
        itself is up.
        """
        notes = []
        with endpoint.http() as client:
            for path, body in requests:
                try:
                    resp = client.post(path, json={"model": endpoint.model, **body})
                    if resp.status_code != 200:
                        notes.append(
                            f"the first request to {path} answered HTTP {resp.status_code}: "
                            f"{resp.text[:200]}"
                        )
                except httpx.HTTPError as exc:
                    notes.append(f"the first request to {path} failed: {type(exc).__name__}: {exc}")
        return tuple(notes)

    def _memory_limit(self) -> int:
        if self.options.memory_limit_gb is not None:
            return int(self.options.memory_limit_gb * 2**30)

        return int(psutil.virtual_memory().total * DEFAULT_MEMORY_SHARE)

    def endpoint(self, info: ServerInfo) -> Endpoint:
        """How clients reach this server: its URL and model, with the session's key and request
        timeout.
        """
        return Endpoint(
            info.base_url, info.model, self.options.api_key, self.options.request_timeout
        )

    @staticmethod
    def _served_model(endpoint: Endpoint, unlisted: str | None = None) -> str | None:
        """The id the server answers to: the one asked for if listed, else the first listed, else
        the launch's own (``LaunchSpec.served_model``; ``transformers serve`` names models by path).
        """
        try:
            ids = [m.get("id") for m in endpoint.models(timeout=10)]
        except httpx.HTTPError:
            return None
        if ids:
            return endpoint.model if endpoint.model in ids else ids[0]
        return unlisted or endpoint.model

    def _connect(self, target: Target) -> ServerInfo:
        """An endpoint's one probe (``detect_endpoint``): an answer that cannot be had or cannot be
        read is the target's one error, the URL and the error named; any answer read, a 404 or a 500
        too, is judged by the tests."""
        info = ServerInfo(
            target=target.id,
            adapter=target.adapter,
            model=target.model,
            base_url=target.endpoint or "",
            launched=False,
            builtin=target.builtin,
        )
        try:
            with self.endpoint(info).http(timeout=REACH_TIMEOUT) as client:
                detected, version, served = detect_endpoint(client)
        # no HTTP answer at all; a 404 or a 500 is an answer, judged by the tests
        except httpx.TransportError as exc:
            late = (
                f" (no answer within {REACH_TIMEOUT:.0f} s)"
                if isinstance(exc, httpx.TimeoutException)
                else ""
            )
            info.error = f"cannot reach {info.base_url}: {type(exc).__name__}: {exc}{late}"
            return info
        # an answer no client can read (a body that does not decode as labelled)
        except httpx.RequestError as exc:
            asked = f" to {exc.request.method} {exc.request.url.path}" if _has_request(exc) else ""
            info.error = (
                f"cannot read {info.base_url}'s answer{asked}: {type(exc).__name__}: {exc} (its "
                "body does not decode as"
                " its headers say, so every client fails on it alike)"
            )
            return info
        if target.adapter is ENDPOINT and detected is not None:
            info = replace(info, adapter=detected)
        info.version, info.version_source = version.version, version.source
        if served and target.model not in served:  # the model it serves, and its built-in one
            info.model, info.builtin = served[0], models.builtin(served[0])
        return info

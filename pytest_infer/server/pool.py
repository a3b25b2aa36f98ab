"""One server per target per session, owned by exactly one process.

Without xdist the pytest process owns every server and starts each on first
use. Under xdist the controller owns them: it starts them all before the
workers start (``pytest_configure_node``) and hands each worker a ``ServerInfo``
to connect to; workers never launch anything.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..adapters import registry
from ..adapters.base import Adapter, BuiltinModel, LaunchRequest, Version
from ..adapters.external import ENDPOINT
from ..client.endpoint import Endpoint
from ..models import local_model
from ..options import DEFAULT_MEMORY_SHARE, MEMORY_LIMIT, InferOptions
from ..results.model import ServerFacts
from ..targets import Target
from .process import ServerProcess, ServerStartError, free_port, running, tail

LOG_WINDOW_BYTES = 1 << 20  # ``log_since`` reads at most this much of the log's end


@dataclass(slots=True, kw_only=True)
class ServerInfo(ServerFacts):
    """One running server: its facts, its framework's adapter (``framework`` is the adapter's name), and how to
    reach it.

    It crosses to xdist workers as JSON (``to_dict``, ``from_dict``): the adapter travels as the framework's name.
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

    def __post_init__(self) -> None:
        self.framework = self.adapter.name

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "adapter"}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerInfo:
        """A server handed over as ``to_dict`` made it, its adapter found again by the framework's name."""
        given = dict(data, notes=tuple(data.get("notes", ())))
        framework = given.pop("framework")
        return cls(**given, adapter=ENDPOINT if framework == ENDPOINT.name else registry.get(framework))

    @property
    def version_text(self) -> str:
        return str(Version(self.version, commit=self.commit))

    def alive(self, settle: float = 5.0) -> bool:
        """For launched servers: is the process still there and answering (from any process on the host)?

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

    def log_tail(self, lines: int = 40) -> str:
        return tail(Path(self.log_path), lines) if self.log_path else ""

    def log_mark(self) -> int:
        """Where the server's log ends now (its size in bytes; 0 without a log): pass it to ``log_since``."""
        if not self.log_path:
            return 0
        try:
            return os.stat(self.log_path).st_size
        except OSError:
            return 0

    def log_since(self, mark: int, max_lines: int = 40) -> list[str]:
        """The complete lines the server logged after ``mark`` (a ``log_mark``), the last ``max_lines`` of them.

        A line still being written (no newline yet) is left for a later call; the rest of a line
        begun before ``mark`` is not returned (it belongs to the time before). The log is already redacted
        when written (the process's masking copier); this reads nothing else. Lines are decoded as UTF-8, bad
        bytes replaced. Another request running at the same time logs into the same window: it is the server's log
        for that stretch of time, not for one request alone.
        """
        if not self.log_path or max_lines <= 0:
            return []
        try:
            with open(self.log_path, "rb") as fh:
                end = fh.seek(0, os.SEEK_END)
                if end < mark:  # the log was started afresh (a new server on this path): all of it is new
                    mark = 0
                start = max(mark, end - LOG_WINDOW_BYTES)
                fh.seek(start - 1 if start > 0 else 0)
                data = fh.read(end - fh.tell())
        except OSError:
            return []
        if start > 0:
            cut = data.find(b"\n")  # data begins with the byte before ``start``
            data = data[cut + 1 :] if cut >= 0 else b""  # drop the rest of a line begun before the window
        lines = data.split(b"\n")[:-1]  # the last piece is a line still being written, or empty
        return [line.decode("utf-8", errors="replace").removesuffix("\r") for line in lines[-max_lines:]]


def _answers(base_url: str) -> bool:
    import httpx

    from ..client.tls import tls

    try:
        httpx.get(f"{base_url}/v1/models", timeout=2.0, verify=tls())
        return True
    except httpx.HTTPError:
        return False


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class ServerPool:
    def __init__(self, options: InferOptions, targets: list[Target], *, owner: bool = True) -> None:
        self.options = options
        self.targets = {t.id: t for t in targets}
        self.owner = owner
        self.infos: dict[str, ServerInfo] = {}
        self.processes: dict[str, ServerProcess] = {}
        self._lock = threading.Lock()
        self._starting: dict[str, threading.Lock] = {}  # one lock per target: servers start side by side

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.options.api_key,) if self.options.api_key else ()

    def provide(self, infos: dict[str, dict]) -> None:
        """Worker side: take the controller's servers."""
        self.infos.update({tid: ServerInfo.from_dict(data) for tid, data in infos.items()})

    def get(self, target_id: str) -> ServerInfo:
        with self._lock:
            starting = self._starting.setdefault(target_id, threading.Lock())
        with starting:
            if target_id not in self.infos:
                if not self.owner:
                    raise RuntimeError(f"no server for {target_id} was handed to this xdist worker")
                self.infos[target_id] = self._start(self.targets[target_id])
            return self.infos[target_id]

    def start_all(self, target_ids: list[str]) -> None:
        """Start the servers of these targets not yet running, side by side: an engine's start is mostly one process
        importing and compiling on one core, so on a machine of several the starts overlap."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, len(target_ids)), thread_name_prefix="pytest-infer-start") as run:
            list(run.map(self.get, target_ids))

    def stop_all(self) -> None:
        for process in self.processes.values():
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
        )
        try:
            local = local_model(target.model, adapter, environment)
        except Exception as exc:  # a failed fetch or build fails this target's tests, not the session
            base.error = str(exc)
            return base
        model_path = local.path if local else target.model
        port = free_port(self.options.host)
        base.base_url = _url(self.options.host, port)
        base.model_path = str(model_path)
        spec = adapter.launch(
            LaunchRequest(
                model=str(model_path),
                served_model_name=target.model,
                host=self.options.host,
                port=port,
                environment=environment,
                extra_args=target.server_args,
                api_key=self.options.api_key,
                on_cpu_tiny=local is not None,
                version=version,
                builtin=local.launch if local else BuiltinModel(),
                chat_template=local.chat_template if local else None,
            )
        )
        base.notes = spec.notes
        endpoint = self.endpoint(base)
        process = ServerProcess(
            spec,
            endpoint,
            log_path,
            self.options.startup_timeout,
            self.secrets,
            memory_limit=self._memory_limit(),
            memory_setting=MEMORY_LIMIT,
        )
        self.processes[target.id] = process
        try:
            process.start()
            base.pid = process.pid
            base.start_seconds = round(process.wait_ready(), 2)
        except ServerStartError as exc:
            process.stop()
            base.error = str(exc)
            return base
        base.model = self._served_model(endpoint, spec.served_model) or target.model
        base.notes += self._send_first_requests(endpoint.with_model(base.model), spec.first_requests)
        return base

    @staticmethod
    def _send_first_requests(endpoint: Endpoint, requests: tuple[tuple[str, dict], ...]) -> tuple[str, ...]:
        """Send the launch spec's first requests; what went wrong becomes a note, since the server itself is up."""
        import httpx

        notes = []
        with endpoint.http() as client:
            for path, body in requests:
                try:
                    resp = client.post(path, json={"model": endpoint.model, **body})
                    if resp.status_code != 200:
                        notes.append(f"the first request to {path} answered HTTP {resp.status_code}: {resp.text[:200]}")
                except httpx.HTTPError as exc:
                    notes.append(f"the first request to {path} failed: {type(exc).__name__}: {exc}")
        return tuple(notes)

    def _memory_limit(self) -> int:
        if self.options.memory_limit_gb is not None:
            return int(self.options.memory_limit_gb * 2**30)
        import psutil

        return int(psutil.virtual_memory().total * DEFAULT_MEMORY_SHARE)

    def endpoint(self, info: ServerInfo) -> Endpoint:
        """How clients reach this server: its URL and model, with the session's key and request timeout."""
        return Endpoint(info.base_url, info.model, self.options.api_key, self.options.request_timeout)

    @staticmethod
    def _served_model(endpoint: Endpoint, unlisted: str | None = None) -> str | None:
        """The id the server answers to: the one asked for if listed, else the first listed, else the launch's own
        (``LaunchSpec.served_model``; ``transformers serve`` names models by path)."""
        import httpx

        try:
            ids = [m.get("id") for m in endpoint.models(timeout=10)]
        except httpx.HTTPError:
            return None
        if ids:
            return endpoint.model if endpoint.model in ids else ids[0]
        return unlisted or endpoint.model

    def _connect(self, target: Target) -> ServerInfo:
        import httpx

        from ..adapters.external import detect_endpoint

        info = ServerInfo(
            target=target.id,
            adapter=target.adapter,
            model=target.model,
            base_url=target.endpoint or "",
            launched=False,
        )
        try:
            with self.endpoint(info).http(timeout=10) as client:
                detected, version, models = detect_endpoint(client)
        except httpx.HTTPError as exc:
            info.error = f"endpoint {info.base_url} unreachable: {exc}"
            return info
        if target.adapter is ENDPOINT and detected is not None:
            info = replace(info, adapter=detected)
        info.version, info.version_source = version.version, version.source
        if models and target.model not in models:
            info.model = models[0]
        return info

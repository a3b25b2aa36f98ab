"""The pytest entry point: options, markers, fixtures, and the session's lifecycle hooks.

Every pytest run loads this module, most of them to test no server: the machinery a session uses is
imported by the hooks that use it (``tests/core/test_import_cost.py`` holds the line).
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from . import hooks
from . import options as opts
from .outcomes import NotRun, Outcome, OutcomeSkip
from .session import WORKER_RESULTS_KEY, WORKER_SERVERS_KEY, InferSession, session_key
from .suite import Suite, SuiteError, by_name, installed

if TYPE_CHECKING:
    from .client.endpoint import Endpoint
    from .client.http import InferClient
    from .server.pool import ServerInfo
    from .targets import Target

MARKERS = {
    "infer_check(id)": "the registered check a test runs; recorded in the results.",
    "needs_capable_model(reason)": "needs a real model; skipped on the built-in tiny model.",
}
sigterm_key = pytest.StashKey[Any]()
NO_SERVER = "no server under test: pass --infer-framework=NAME or --infer-endpoint=URL"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """The core's options, then each installed suite's plugin (its options and fixtures)."""
    opts.add_options(parser)
    try:
        suites = installed()
    except SuiteError as exc:
        raise pytest.UsageError(str(exc)) from None
    for suite in suites:
        if suite.plugin:
            pluginmanager.import_plugin(suite.plugin)


def _suites(config: pytest.Config) -> dict[str, Suite]:
    """The installed suites and those a conftest registers (``pytest_infer_suites``), in run
    order.
    """
    extra = [suite for found in config.hook.pytest_infer_suites() for suite in found or ()]
    try:
        suites = by_name([*installed(), *extra])
    except SuiteError as exc:
        raise pytest.UsageError(str(exc)) from None
    return dict(sorted(suites.items(), key=lambda item: item[1].runs_last))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """First, so that the suites' own ``pytest_configure`` find the session in the stash."""
    suites = _suites(config)
    for marker, text in {**{s.name: s.description for s in suites.values()}, **MARKERS}.items():
        config.addinivalue_line("markers", f"{marker}: {text}")
    options = opts.parse(config)
    targets = []
    if options.active:
        # lazy: the plugin loads in every pytest run; this only where a session needs it
        # (test_import_cost.py)
        from .targets import resolve_targets

        targets = resolve_targets(options)
    config.stash[session_key] = InferSession.create(config, options, targets, suites)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistController(), "pytest_infer_xdist")
    if targets and not hasattr(config, "workerinput"):
        config.pluginmanager.register(
            TestTimes(config.stash[session_key]), "pytest_infer_test_times"
        )
    if targets and not hasattr(config, "workerinput"):
        _end_like_ctrl_c_on_sigterm(config)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def _end_like_ctrl_c_on_sigterm(config: pytest.Config) -> None:
    """CI time limits and cancellations send SIGTERM: end the session as on Ctrl-C instead of dying,
    so servers stop through the pool and the results gathered so far are written."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    ):
        config.stash[sigterm_key] = signal.signal(signal.SIGTERM, _interrupt)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(session_key, None)
    if session is not None:
        session.stop_servers()
    previous = config.stash.get(sigterm_key, None)
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def pytest_report_header(config: pytest.Config) -> list[str]:
    session = config.stash[session_key]
    if not session.targets:
        return []
    lines = [
        f"pytest-infer: model {session.options.model}, report dir {session.options.report_dir}"
    ]
    for target in session.targets:
        where = target.endpoint or (target.environment.python if target.environment else "")
        lines.append(f"  target {target.id}: {target.framework} from {where}")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A suite that abuses the server runs last (``Suite.runs_last``), so a server it breaks takes
    no other suite's verdicts with it. The sort is stable."""
    last = [s.name for s in config.stash[session_key].suites.values() if s.runs_last]
    items.sort(key=lambda item: any(item.get_closest_marker(name) for name in last))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "infer_target" not in metafunc.fixturenames:
        return
    targets = metafunc.config.stash[session_key].targets
    params = [pytest.param(t, id=t.id) for t in targets] or [
        pytest.param(None, id="no-server", marks=pytest.mark.skip(reason=NO_SERVER))
    ]
    metafunc.parametrize("infer_target", params, indirect=True, scope="session")


@pytest.fixture(scope="session")
def infer_target(request: pytest.FixtureRequest) -> Target:
    """The target (framework, environment, model) this test runs against."""
    return request.param


@pytest.fixture(scope="session")
def infer_session(pytestconfig: pytest.Config) -> InferSession:
    return pytestconfig.stash[session_key]


@pytest.fixture(scope="session")
def infer_server(infer_target: Target, infer_session: InferSession) -> ServerInfo:
    """The running server for this target, started once per session."""
    info = infer_session.server(infer_target.id)
    if info.error:  # pytest_runtest_setup has reported it; a session fixture's failure is cached
        pytest.fail(f"{infer_target.id}: {info.error}", pytrace=False)
    return info


def _target_of(item: pytest.Item) -> Target | None:
    callspec = getattr(item, "callspec", None)
    target = callspec.params.get("infer_target") if callspec is not None else None
    # not a test of a server (most tests of most runs): the targets module stays unloaded
    if target is None:
        return None
    # lazy: the plugin loads in every pytest run; this only where a session needs it
    # (test_import_cost.py)
    from .targets import Target

    return target if isinstance(target, Target) else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start the item's server before its fixtures, so a start failure is met here, once per
    target.
    """
    target = _target_of(item)
    if target is not None:
        session = item.config.stash[session_key]
        info = session.server(target.id)
        if info.error:
            _target_failed(info, session)


def _target_failed(info: ServerInfo, session: InferSession) -> None:
    """A target that could not start (or an endpoint that cannot be reached) fails once, with the
    reason and the log lines; its other tests are reported as not run for that reason, never as
    verdicts on the server. A server given up after it died fails nothing more: its death is the
    finding (``Crash``)."""
    assert info.error is not None
    if info.target not in session.failed_targets and not info.crashes:
        session.failed_targets.add(info.target)
        pytest.fail(f"{info.target}: {info.error}", pytrace=False)
    why = info.error.splitlines()[0][:200]
    # else the error says what happened: an endpoint's, a death's
    started = info.launched and not info.crashes
    raise NotRun(f"{info.target} did not start ({why})" if started else f"{info.target}: {why}")


@pytest.fixture
def infer_record(request: pytest.FixtureRequest) -> Callable[[str, object], None]:
    """``infer_record(name, value)``: a fact of this test (reproducer, severity, SLO figure) for the
    results file and the JUnit XML's testcase properties. Unlike ``record_property`` it warns under
    no ``junit_family``: the default xunit2 is what every CI system's ``--junitxml`` gets."""
    return lambda name, value: request.node.user_properties.append((name, value))


@pytest.fixture
def infer_live_server(infer_server: ServerInfo, infer_session: InferSession) -> ServerInfo:
    """The server, checked alive before the test: one found dead is started again first
    (``ServerPool.get``); a server given up is not run, and one still dead fails the test with its
    log."""
    if not infer_server.alive():
        infer_session.pool.get(infer_server.target)
        if infer_server.error:
            raise NotRun(f"{infer_server.target}: {infer_server.error.splitlines()[0][:200]}")
    if not infer_server.alive():
        pytest.fail(
            f"{infer_server.target}: the server process {infer_server.pid} has died; last lines of "
            "its log:\n"
            f"{infer_server.log_tail()}",
            pytrace=False,
        )
    return infer_server


@pytest.fixture(scope="session")
def infer_endpoint(infer_server: ServerInfo, infer_session: InferSession) -> Endpoint:
    """How to reach the server under test (URL, model, key, timeout): what every client takes."""
    return infer_session.endpoint(infer_server)


@pytest.fixture
def infer_client(infer_live_server: ServerInfo, infer_endpoint: Endpoint) -> Iterator[InferClient]:
    """An httpx client for the server under test, retries off."""
    # lazy: the plugin loads in every pytest run; this only where a session needs it
    # (test_import_cost.py)
    from .client.http import InferClient

    with InferClient(infer_endpoint) as client:
        yield client


@pytest.fixture
def infer_openai_client(infer_live_server: ServerInfo, infer_endpoint: Endpoint):
    """The official ``openai`` SDK client (sync), pointed at the server under test."""
    # lazy: the plugin loads in every pytest run; this only where a session needs it
    # (test_import_cost.py)
    import openai

    with openai.OpenAI(**infer_endpoint.openai_kwargs()) as client:
        yield client


@pytest.fixture
async def infer_async_openai_client(infer_live_server: ServerInfo, infer_endpoint: Endpoint):
    """The official ``openai`` SDK client (async)."""
    # lazy: the plugin loads in every pytest run; this only where a session needs it
    # (test_import_cost.py)
    import openai

    async with openai.AsyncOpenAI(**infer_endpoint.openai_kwargs()) as client:
        yield client


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    target = _target_of(item)
    if target is None:
        return
    session = item.config.stash[session_key]
    info = session.pool.infos.get(target.id)
    if info is None:
        return
    if call.when == "setup":
        item.user_properties += [
            ("infer_framework", info.framework),
            ("infer_version", info.version_text),
            ("infer_model", info.model),
            *(
                (f"infer_{label.replace(' ', '_')}", value)
                for label, value in session.variant.items()
            ),
            ("infer_target", target.id),
        ]
        report.user_properties = list(item.user_properties)
    if report.failed and info.log_path and (call.when == "call" or not info.alive()):
        state = "alive" if info.alive() else "DEAD"
        report.sections.append((f"server log tail: {info.target} ({state})", info.log_tail()))
    if call.when == "call" or (call.when == "setup" and not report.passed):
        excinfo = call.excinfo
        skip = excinfo.value if excinfo is not None else None
        own = skip.outcome if isinstance(skip, OutcomeSkip) else None
        _record(session, item, report, target, own)


def _record(
    session: InferSession,
    item: pytest.Item,
    report: pytest.TestReport,
    target: Target,
    skip: Outcome | None = None,
) -> None:
    """``skip``: the outcome of its own that the test's skip records (an ``OutcomeSkip``)."""
    check = item.get_closest_marker("infer_check")
    suite = next((name for name in session.suites if item.get_closest_marker(name)), None)
    if hasattr(report, "wasxfail"):
        outcome = Outcome.XFAIL if report.skipped else Outcome.FIXED
    elif skip is not None:
        outcome = skip
    elif report.skipped:
        outcome = Outcome.SKIPPED
    elif report.failed:
        outcome = Outcome.FAILED if report.when == "call" else Outcome.ERROR
    else:
        outcome = Outcome.PASSED
    # lazy: the plugin loads in every pytest run; this only where a session needs it
    # (test_import_cost.py)
    from .results.model import TestRecord

    message = _message(report) if report.longrepr is not None and not report.passed else ""
    props = dict(item.user_properties)
    extra: dict[str, Any] = (
        {"severity": props["infer_severity"]} if "infer_severity" in props else {}
    )
    # the declaration it ran under: the gate tells one known deviation from another
    if hasattr(report, "wasxfail"):
        extra["xfail"] = str(report.wasxfail)
    # what a pass judged (every suite records it; the reports show it)
    if props.get("infer_evidence"):
        extra["evidence"] = str(props["infer_evidence"])[:1000]
    if props.get("infer_server_log"):  # the server's own log lines while a failing request ran
        extra["server_log"] = str(props["infer_server_log"])[-8000:]
    session.results.add_test(
        TestRecord(
            nodeid=item.nodeid,
            target=target.id,
            outcome=outcome.value,
            suite=suite,
            check=check.args[0] if check and check.args else None,
            message=str(message)[:4000],
            reproducer=str(props.get("infer_reproducer", "")),
            duration=round(report.duration, 4),
            extra=extra,
        )
    )


def _message(report: pytest.TestReport) -> str:
    """What went wrong, in one line where pytest has one: a skip's reason, a failure's crash
    message.
    """
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):
        return longrepr[2]
    crash = getattr(longrepr, "reprcrash", None)
    return crash.message if crash is not None else str(longrepr)[-2000:]


def pytest_sessionfinish(session: pytest.Session) -> None:
    infer = session.config.stash[session_key]
    if infer.is_worker:
        if infer.targets:
            session.config.workeroutput[WORKER_RESULTS_KEY] = json.dumps(infer.results.to_dict())  # type: ignore[attr-defined]  # set by xdist
        return
    if infer.targets:
        # lazy: the plugin loads in every pytest run; this only where a session needs it
        # (test_import_cost.py)
        from .reporting.outputs import finish_session

        # whether this run ended normally: a history compares only runs that did (an interrupted one
        # is kept, marked)
        infer.results.environment["run"] = {
            "exitstatus": int(session.exitstatus),
            "collected": session.testscollected,
            "ran": len(infer.results.tests),
        }
        options = infer.options
        crashed = infer.record_crashes()
        infer.written = finish_session(
            infer.results, options.report_dir, options.baseline, infer.settings
        )
        failed_gate = infer.written.gate is not None and infer.written.gate.failed
        if (failed_gate or crashed) and session.exitstatus == pytest.ExitCode.OK:
            # the gate, or a server that died, fails the run
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if infer.written.gate is not None and session.exitstatus == pytest.ExitCode.OK:
            # an INCOMPLETE gate: 2, as pytest-infer compare exits
            session.exitstatus = infer.written.gate.exit_code
    infer.stop_servers()


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    infer = config.stash[session_key]
    if not infer.targets or not infer.results.targets:
        return
    # lazy: the plugin loads in every pytest run; this only where a session needs it
    # (test_import_cost.py)
    from .reporting.terminal import render_summary

    terminalreporter.write_sep("=", "pytest-infer")
    for line in render_summary(infer.results):
        terminalreporter.write_line(line)
    for info in infer.pool.infos.values():
        for note in info.notes:
            terminalreporter.write_line(f"note: {info.target}: {note}", yellow=True)
    written = getattr(infer, "written", None)
    if written is not None:
        # lazy: the plugin loads in every pytest run; this only where a session needs it
        # (test_import_cost.py)
        from .reporting.terminal import render_written

        for line in render_written(written):
            terminalreporter.write_line(line)
        if written.gate is not None:
            # lazy: the plugin loads in every pytest run; this only where a session needs it
            # (test_import_cost.py)
            from .reporting.terminal import render_gate

            gate = written.gate
            terminalreporter.write_sep(
                "=",
                "pytest-infer upgrade gate",
                red=gate.failed,
                yellow=gate.incomplete and not gate.failed,
                green=not gate.exit_code,
                bold=True,
            )
            for line in render_gate(written.gate):
                terminalreporter.write_line(line)


class TestTimes:
    """The owning process notes when each test runs (under xdist the controller, as the workers
    report them): a server's death is laid to the tests that were running when it ended
    (``ServerPool.test_started``)."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self, session: InferSession) -> None:
        self.session = session

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.session.pool.test_started(nodeid)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.session.pool.test_ended(nodeid)


class XdistController:
    """Controller-side xdist hooks: own the servers, hand them out, collect results."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        session = node.config.stash[session_key]
        if session.targets:
            session.pool.hand_off()
            infos = {tid: info.to_dict() for tid, info in session.servers().items()}
            node.workerinput[WORKER_SERVERS_KEY] = json.dumps(infos)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        # lazy: the plugin loads in every pytest run; this only where a session needs it
        # (test_import_cost.py)
        from .results.model import SessionResults

        data = getattr(node, "workeroutput", {}).get(WORKER_RESULTS_KEY)
        if data:
            session = node.config.stash[session_key]
            session.results.merge(SessionResults.from_dict(json.loads(data), session.suites))

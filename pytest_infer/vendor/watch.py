"""``pytest-infer watch ENGINE``: every release on the package index that the stored history lacks,
installed into its own environment (``scripts/install-engines.sh ENGINE-VERSION``), run through the
suites, gated against the judged release before it by the gate's own comparison, and appended to the
history. An install or a run that fails is recorded with its log tail, and the next release goes on:
a history shows what a release could not do too.

The installing and running are a ``Runner`` (``EngineRunner`` runs the real ones as child
processes), so the bookkeeping is tested with a fake one, without the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..paths import DEFAULT_MODEL, bundled, engines_dir
from ..reporting.history import build_history, run_state
from ..results.model import ResultsFileError, SessionResults
from ..results.views import build_views
from .engines import Engine
from .index import newer_or_equal
from .runner import Done, Runner
from .store import INSTALL_FAILED, JUDGED, LOG_TAIL, RUN_FAILED, Entry, Store

SERVER_LOG = 1500  # characters of a server's own log kept with a run that failed
# SLO figures across sessions: not compared
SUITES = ("smoke", "conformance", "structured", "robustness", "security")
INSTALLER = Path(__file__).resolve().parents[2] / "scripts" / "install-engines.sh"  # in a checkout


def _tail(text: str) -> str:
    return text[-LOG_TAIL:]


def _child(
    cmd: Sequence[str],
    log: Path,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    ok=(0,),
) -> Done:
    """Run at nice 10 (the machine is shared), output to ``log``; a timeout ends it as a failure.
    ``ok``: the exit statuses that mean it did its job (pytest's 1 is failed tests, which a history
    records)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log.open("w") as fh:
        try:
            rc = subprocess.run(
                ["nice", "-n", "10", *cmd],
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=env,
                timeout=timeout,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            rc = None
    text = log.read_text(errors="replace")
    if rc is None:
        text += f"\n[pytest-infer: stopped after {timeout} s]"
    return Done(rc in ok, _tail(text), round(time.monotonic() - started, 1))


def selection(check: str) -> str:
    """The ``-k`` expression that runs ``check``: a parametrized test's id names its parameters
    without the target's, which the test id carries among them
    (``test_known_bug_class[response_format-stream-absent-type]`` runs as
    ``...[response_format-stream-llamacpp-absent-type]``), so such a check runs its whole test
    function and the gate picks the check from the results; a conformance check's id is a substring
    of its test's."""
    name, bracket, _ = check.partition("[")
    return name if bracket and name.startswith("test_") else check


@dataclass
class EngineRunner:
    """The real thing: ``install-engines.sh`` for the environment, ``pytest`` over the bundled
    suites for the run.
    """

    engine: Engine
    suites: Sequence[str] = SUITES
    model: str = DEFAULT_MODEL
    installer: Path = INSTALLER
    engines: Path = field(default_factory=engines_dir)
    timeout: float = 3600
    pytest_args: Sequence[str] = ()

    def env(self, version: str) -> Path:
        return self.engines / self.engine.install_name(version)

    def install(self, version: str) -> Done:
        if not self.installer.exists():
            return Done(
                False,
                f"no installer at {self.installer} (watch runs from a checkout of pytest-infer)",
                0.0,
            )
        env = {**os.environ, "PYTEST_INFER_ENGINES": str(self.engines)}
        log = self.engines / "logs" / f"{self.engine.install_name(version)}.log"
        return _child(["bash", str(self.installer), self.engine.install_name(version)], log, env)

    def run(
        self, version: str, out: Path, select: str | None = None
    ) -> tuple[SessionResults | None, Done]:
        fw = self.engine.framework
        args, k = list(self.engine.pytest_args), [selection(select)] if select else []
        if "-k" in args:  # one -k: pytest keeps the last
            i = args.index("-k")
            k.append(args[i + 1])
            del args[i : i + 2]
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            *(str(bundled("suites") / s) for s in self.suites),
            f"--infer-framework={fw}",
            f"--infer-env={fw}={self.env(version)}",
            f"--infer-model={self.model}",
            f"--infer-report-dir={out}",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-q",
            "-rN",
            *args,
            *(["-k", " and ".join(f"({e})" for e in k)] if k else []),
            *self.pytest_args,
        ]
        done = _child(cmd, out / "pytest.log", timeout=self.timeout, ok=(0, 1))
        try:
            return SessionResults.read(out / "results.json"), done
        except ResultsFileError as exc:
            return None, Done(False, _tail(f"{done.log}\n{exc}"), done.wall_s)


def missing(
    available: Sequence[str], store: Store, engine: Engine, newest: int | None = None
) -> list[str]:
    """Releases the history lacks (tried at all, judged or not), oldest first; ``newest``: only the
    newest N.
    """
    tried = store.versions()
    new = [v for v in newer_or_equal(available, engine.oldest) if v not in tried]
    return new[-newest:] if newest else new


def _server_logs(out: Path) -> str:
    """The end of each server's own log (the plugin writes them under ``servers/``): why a server
    never started is there, not in pytest's output (transformers 5.20.0's ``transformers serve``
    dies importing ``requests``)."""
    return "".join(
        f"\n--- {log.name} (last lines) ---\n{log.read_text(errors='replace')[-SERVER_LOG:]}"
        for log in sorted((out / "servers").glob("*.log"))
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def judge(
    engine: Engine, version: str, runner: Runner, out: Path
) -> tuple[Entry, SessionResults | None]:
    """Install one release and run it; the entry says what became of it."""
    installed = runner.install(version)
    if not installed.ok:
        return Entry(
            version, INSTALL_FAILED, log_tail=installed.log, wall_s=installed.wall_s, when=_now()
        ), None
    results, ran = runner.run(version, out / version)
    wall = round(installed.wall_s + ran.wall_s, 1)
    if results is None or len(results.targets) != 1:
        why = (
            "no results file"
            if results is None
            else f"{len(results.targets)} targets in one release's results"
        )
        log = _tail(f"{ran.log}\n{why}{_server_logs(out / version)}")
        return Entry(version, RUN_FAILED, log_tail=log, wall_s=wall, when=_now()), None
    tid, target = next(iter(results.targets.items()))
    if (state := run_state(results, tid)) != "ok":
        log = _tail(f"{ran.log}\n{state}{_server_logs(out / version)}")
        return Entry(version, RUN_FAILED, log_tail=log, wall_s=wall, when=_now()), None
    counts = dict(build_views(results).outcomes.get(tid, {}))
    entry = Entry(
        version, JUDGED, target.version or version, target.commit or "", wall_s=wall, counts=counts
    )
    entry.when = _now()
    return entry, results


def regate(store: Store) -> None:
    """Each judged release's verdict against the judged release before it, by the gate as it stands
    (``build_history``: the gate along the release line), written into its entry: a release judged
    later that falls between two stored ones changes the step after it too."""
    _, history = build_history(store.parts(), in_given_order=True)
    steps = {s.after: s for s in history.steps}
    by_label = {e.label: e.version for e in store.judged()}
    for entry in store.judged():
        step = steps.get(entry.label)
        before, verdict = (
            (by_label.get(step.before, step.before), step.result.verdict)
            if step is not None
            else ("", "first judged release: nothing to compare with")
        )
        if (entry.before, entry.verdict) != (before, verdict):
            entry.before, entry.verdict = before, verdict
            store.add(entry)


def watch(
    engine: Engine,
    store: Store,
    runner: Runner,
    available: Sequence[str],
    work: Path,
    newest: int | None = None,
) -> list[Entry]:
    """Judge every release the history lacks, oldest first, each gated against the one before it."""
    done = []
    for version in missing(available, store, engine, newest):
        print(
            f"=== {engine.name} {version}: installing and running ({datetime.now(UTC):%H:%M:%S})",
            flush=True,
        )
        entry, results = judge(engine, version, runner, work)
        store.add(entry, results)
        if entry.judged:
            regate(store)
            entry = next(e for e in store.entries() if e.version == version)
        print(
            f"=== {engine.name} {version}: {entry.state}"
            + (f": {entry.verdict}" if entry.verdict else "")
            + (f" ({entry.wall_s} s)" if entry.wall_s is not None else ""),
            flush=True,
        )
        done.append(entry)
    return done

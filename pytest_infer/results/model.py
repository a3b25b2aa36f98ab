"""A session's results: what was tested (targets) and what came of it.

One JSON document, versioned by ``SCHEMA_VERSION``. Every suite writes into it,
xdist workers send theirs to the controller, and every report renders it.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..outcomes import InferError
from ..suite import Suite, installed
from ..table import RawTable, Table

SCHEMA_VERSION = 1
# what every session writes, however it ended: a document without one was cut or made
REQUIRED = ("targets", "tests")


class ResultsFileError(InferError, ValueError):
    """A results file that is not a whole, valid results document."""


def atomic_write_text(path: Path, text: str) -> None:
    """Write whole or not at all: a temporary file in the same folder, fsync, then an atomic
    rename.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        # mkstemp makes 0600; a report is as readable as any file written plainly
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


@dataclass(slots=True)
class ServerFacts:
    """Which server one target is: its framework, the model it serves, the version it runs and how
    that was read, and whether this plugin launched it. Defined once: the running server
    (``ServerInfo``) and its record in results.json (``TargetRecord``) are both these facts and
    more."""

    framework: str
    model: str
    version: str | None = None
    distribution: str | None = None
    commit: str | None = None
    version_source: str | None = None
    launched: bool = True


@dataclass(slots=True)
class Crash:
    """A launched server that died during the session: why, which of its tests were running (else
    the last that had ended), its log's last lines, and whether the plugin started it again for the
    tests after it."""

    pid: int | None
    why: str  # "exited with code 17", "killed by SIGKILL", or the memory guard's line
    during: list[str] = field(default_factory=list)  # node ids
    after: str = ""  # a node id, when none was running
    restarted: bool = False
    then: str = ""  # "was started again in 0.4 s (restart 1 of 2)", or why it was not
    log_tail: str = ""


@dataclass(slots=True, kw_only=True)
class TargetRecord(ServerFacts):
    """One target of a session as results.json stores it: the server's facts, then what the session
    adds. ``variant``: labelled values the suites set on every target of the session (the SLO
    profile it was measured under); two records of one server in different variants are different
    targets."""

    id: str
    variant: dict[str, str] = field(default_factory=dict)
    start_seconds: float | None = None
    error: str | None = None
    # a launched server's deaths, each with what came of it
    crashes: list[Crash] = field(default_factory=list)

    @classmethod
    def of(cls, target_id: str, server: ServerFacts, **session: Any) -> TargetRecord:
        """The record of ``server`` (a running server's ``ServerInfo``): its facts, then the
        session's own fields.
        """
        return cls(
            id=target_id,
            **{f.name: getattr(server, f.name) for f in fields(ServerFacts)},
            **session,
        )

    def to_json(self) -> dict[str, Any]:
        stored = {"id": self.id, **asdict(self)}  # results.json's order: the id first
        if not self.crashes:  # a server that never died is stored as before there were crashes
            del stored["crashes"]
        return stored


def _target_record(data: dict[str, Any]) -> TargetRecord:
    data = dict(data)
    data["crashes"] = [Crash(**crash) for crash in data.get("crashes", [])]
    return TargetRecord(**data)


@dataclass(slots=True)
class TestRecord:
    """One test item against one target; ``check`` names the registered check it ran, if any."""

    nodeid: str
    target: str
    outcome: str
    suite: str | None = None
    check: str | None = None
    message: str = ""
    reproducer: str = ""
    duration: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _installed_suites() -> dict[str, Suite]:
    return {suite.name: suite for suite in installed()}


@dataclass(slots=True)
class SessionResults:
    schema_version: int = SCHEMA_VERSION
    plugin_version: str = ""
    environment: dict[str, Any] = field(default_factory=dict)
    targets: dict[str, TargetRecord] = field(default_factory=dict)
    tests: list[TestRecord] = field(default_factory=list)
    # each suite's own table, stored under the suite's name
    tables: dict[str, Table] = field(default_factory=dict)
    # the upgrade gate's verdict and findings when the run compared with a baseline
    # (gating.compare.GateResult)
    gate: dict[str, Any] | None = None
    # the suites this process knows: how to build and read their tables (not stored)
    suites: dict[str, Suite] = field(default_factory=_installed_suites, repr=False, compare=False)
    # what the document read lacked of what a session writes (``REQUIRED``), read as empty; the gate
    # names it (not stored)
    missing: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def add_test(self, record: TestRecord) -> None:
        self.tests.append(record)

    def table(self, suite: str) -> Table:
        """The table of a registered suite, made empty on first use."""
        if suite not in self.tables:
            known = self.suites.get(suite)
            if known is None:
                raise KeyError(
                    f"no suite {suite!r} is registered; registered: "
                    f"{', '.join(self.suites) or 'none'}"
                )
            self.tables[suite] = known.table_type()()
        return self.tables[suite]

    def merge(self, other: SessionResults) -> None:
        """Fold another part of the same session (an xdist worker's) into this one."""
        for tid, target in other.targets.items():
            self.targets.setdefault(tid, target)
        self.tests.extend(other.tests)
        for name, table in other.tables.items():
            if name in self.tables:
                self.tables[name].merge(table)
            else:
                self.tables[name] = table

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "plugin_version": self.plugin_version,
            "environment": self.environment,
            "targets": {tid: t.to_json() for tid, t in self.targets.items()},
            "tests": [asdict(t) for t in self.tests],
            **{name: table.to_json() for name, table in self.tables.items() if table},
            "gate": self.gate,
        }

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], suites: dict[str, Suite] | None = None
    ) -> SessionResults:
        """Read a results document; a table of a suite not known here is kept as it is
        (``RawTable``).
        """
        if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
            found = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
            raise ResultsFileError(
                f"not a pytest-infer results document of schema {SCHEMA_VERSION} (found {found!r})"
            )
        suites = suites if suites is not None else _installed_suites()
        try:
            tables = {
                name: suites[name].table_type().from_json(value)
                if name in suites
                else RawTable.from_json(value)
                for name, value in data.items()
                if name not in Suite.RESERVED
            }
            return cls(
                schema_version=data["schema_version"],
                plugin_version=data.get("plugin_version", ""),
                environment=data.get("environment", {}),
                targets={k: _target_record(v) for k, v in data.get("targets", {}).items()},
                tests=[TestRecord(**t) for t in data.get("tests", [])],
                tables=tables,
                gate=data.get("gate"),
                suites=suites,
                missing=tuple(key for key in REQUIRED if key not in data),
            )
        except (TypeError, KeyError, AttributeError, ValueError) as exc:
            raise ResultsFileError(f"malformed results document: {exc}") from exc

    def write(self, path: Path) -> None:
        """Write whole or not at all (see ``atomic_write_text``)."""
        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n")

    @classmethod
    def read(cls, path: Path, suites: dict[str, Suite] | None = None) -> SessionResults:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise ResultsFileError(f"{path}: {exc.strerror or exc}") from exc
        try:  # results stored in a repository are gzipped: a matrix's file shrinks about tenfold
            text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
        except (EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
            raise ResultsFileError(
                f"{path}: not whole gzip or UTF-8 text ({exc}); the file is cut short or corrupt, "
                "so it is rejected rather than read as data"
            ) from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ResultsFileError(
                f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); the file is cut short "
                "or corrupt, "
                "so it is rejected rather than read as data"
            ) from exc
        try:
            return cls.from_dict(data, suites)
        except ResultsFileError as exc:
            raise ResultsFileError(f"{path}: {exc}") from exc


def result_files(inputs: Sequence[str]) -> list[Path]:
    """Files as given; for a folder, every ``*.json`` below it that is a results document (by name
    or content).
    """
    files: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*.json*")
                if p.name in ("results.json", "results.json.gz") or _looks_like_results(p)
            )
            if not found:
                raise ResultsFileError(f"{path}: no results files in this folder")
            files += found
        else:
            files.append(path)
    return files


def _looks_like_results(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    try:
        with path.open(encoding="utf-8") as fh:
            return '"schema_version"' in fh.read(200)
    except (OSError, UnicodeDecodeError):
        return False


def _rekey(results: SessionResults, old: str, new: str) -> None:
    """Rename a target everywhere it is referenced."""
    target = results.targets.pop(old)
    target.id = new
    results.targets[new] = target
    for test in results.tests:
        if test.target == old:
            test.target = new
            path, bracket, params = test.nodeid.partition("[")
            # the target is a parameter of the test id: rename it there too, so rows still line up
            if bracket:
                test.nodeid = f"{path}[{params.replace(old, new)}"
    for table in results.tables.values():
        table.rekey(old, new)


def _identity(target: TargetRecord) -> tuple:
    return (
        target.framework,
        target.version,
        target.commit,
        target.model,
        tuple(sorted(target.variant.items())),
    )


def combine(parts: list[tuple[str, SessionResults]]) -> SessionResults:
    """Merge result files of separate runs (CI jobs) into one matrix.

    Targets that are the same server (framework, version, commit, model) in the
    same variant become one column, and their tables merge (repeated SLO entries
    become repeated runs of a load point); different servers that share an id
    (``vllm`` in two jobs) are renamed ``framework@version`` so that no column
    hides another.
    """
    merged = SessionResults(
        environment={"parts": []}, suites=parts[0][1].suites if parts else _installed_suites()
    )
    for source, part in parts:
        if part.plugin_version and not merged.plugin_version:
            merged.plugin_version = part.plugin_version
        for tid in list(part.targets):
            target = part.targets[tid]
            same = next(
                (mine for mine in merged.targets.values() if _identity(mine) == _identity(target)),
                None,
            )
            if same is not None:
                new = same.id
            elif tid not in merged.targets:
                new = tid
            else:
                base = f"{target.framework}@{target.version or 'unknown'}"
                new, n = base, 2
                while new in merged.targets or new in part.targets and new != tid:
                    new, n = f"{base}#{n}", n + 1
            if new != tid:
                _rekey(part, tid, new)
        merged.environment["parts"].append(
            {"source": source, "targets": list(part.targets), **part.environment}
        )
        # a part that ran the gate (--infer-baseline) brings its verdict
        if part.gate and merged.gate is None:
            merged.gate = part.gate
        merged.merge(part)
    return merged

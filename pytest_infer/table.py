"""The ``Table`` interface: a suite's typed results, its rows in every report (``Section``,
``Cell``), the root causes of its failures (``Cause``) and its findings for the gate (``Finding``,
under a ``Pairing``). The core stores, merges, renders and compares tables without knowing whose
they are; each suite subclasses ``Table`` in its own ``table.py`` (``Suite.table`` names it).

A suite that measures (figures against limits, timings compared across sessions) also implements
``Measured``: its limits, the tests whose measurement was invalid, how its timings were compared,
its notes on the verdict and the history, its sessions' figures and its benchmark series. The core
asks ``isinstance(table, Measured)``, never a suite.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

ALPHA = 0.05  # the gate's significance level, where a suite tests a change for significance
# A finding's detail where a measurement was invalid on either side: compared with nothing, so
# missing (INCOMPLETE)
UNMEASURED = "measurement invalid on one side: not compared"


@dataclass(frozen=True, slots=True)
class Cell:
    """One target's entry in a report row. ``css`` is an outcome class (``passed``, ``failed``,
    ``invalid`` ...) that colours it; ``value`` a figure that history can plot across versions."""

    text: str
    css: str = ""
    detail: str = ""
    value: float | None = None


@dataclass(slots=True)
class Section:
    """A suite's rows in the matrix: ``{row: {target_id: Cell}}``. Every renderer draws these."""

    title: str
    heading: str
    rows: dict[str, dict[str, Cell]] = field(default_factory=dict)
    suite: str = ""  # the suite whose table gave it (set by the core)
    # rows whose figures history plots across versions: row -> (figure, line in it)
    trends: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(slots=True)
class Finding:
    """One difference the gate found between a baseline and a candidate target."""

    # regression, missing (the baseline judged it; the candidate has no judged counterpart),
    # improvement,
    kind: str
    # noise or change
    area: str  # the suite's area: "check", "keyword", "slo", ...
    pair: str  # "vllm 0.31.0 -> vllm 0.32.0"
    subject: str  # the check, keyword or "load point: metric"
    before: Any
    after: Any
    detail: str = ""
    reproducer: str = ""

    def line(self) -> str:
        text = f"[{self.area}] {self.subject}: {self.before} -> {self.after} ({self.pair})"
        return f"{text}; {self.detail}" if self.detail else text


# How much a finding matters, worst first: a silent wrong answer or a dead server, a wrong refusal
# or error, a deviation clients tolerate.
CAUSE_SEVERITIES = ("critical", "major", "minor")


@dataclass(frozen=True, slots=True)
class Cause:
    """The root cause a failed test shares with others: tests of one suite with the same ``key`` are
    one finding.

    ``place`` is where this test showed it beyond its target (a request path, a streaming mode, a
    bad-input case); ``reference`` names the known upstream issue, where the suite's expectations or
    corpus name one."""

    key: str
    title: str
    place: str = ""
    severity: str = "major"
    reference: str = ""


@dataclass(slots=True)
class Limits:
    """One measured unit of one target (an SLO load point) against its limits, for the reports'
    figures table.

    ``rows`` are ``(metric, limit, measured, margin, css)`` as text with units; ``invalid`` says in
    one line why a measurement judged nothing; ``figures`` is the full figure set, shown behind a
    fold."""

    target: str
    title: str
    verdict: str
    rows: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    invalid: str = ""
    figures: dict[str, str] = field(default_factory=dict)
    suite: str = ""  # the suite whose table gave it (set by the core)


@dataclass(frozen=True, slots=True)
class Fixed:
    """A check whose failure in the baseline (a plain one, or a declared deviation) is gone in the
    candidate: what the failure said and the request it failed on (its reproducer). A difference a
    table finds that this deviation made is its end, a fix, not a regression."""

    check: str
    message: str
    reproducer: str


@dataclass(frozen=True, slots=True)
class Pairing:
    """One baseline target against one candidate target, with the gate's settings.

    ``settings`` maps a suite's name to its own gate settings, a value only that suite reads: its
    pytest plugin (``InferSession.settings``) or its command-line module (``Suite.cli``) made it,
    its ``Table.compare`` reads it. ``fixed``: the checks that failed on the baseline target and
    pass on the candidate (the gate's check comparison)."""

    baseline: str
    candidate: str
    label: str
    alpha: float = ALPHA
    settings: Mapping[str, Any] = field(default_factory=dict)
    fixed: tuple[Fixed, ...] = ()


class Table:
    """A suite's typed results, keyed by target id; stored in the results file under the suite's
    name.

    The base is the empty table of a suite that records nothing beyond its tests' outcomes.
    """

    def to_json(self) -> Any:
        return {}

    @classmethod
    def from_json(cls, data: Any) -> Table:
        return cls()

    def merge(self, other: Table) -> None:
        """Fold in another part of the same session (an xdist worker's, another CI job's)."""

    def rekey(self, old: str, new: str) -> None:
        """Rename a target."""

    def __bool__(self) -> bool:
        return bool(self.to_json())

    def sections(self) -> list[Section]:
        return []

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        """This suite's findings on one pair; its own settings are ``pairing.settings.get(suite
        name)``.
        """
        return []

    @classmethod
    def gate_rules(cls, settings: Any) -> list[str]:
        """The rules ``compare`` applies under ``settings`` (this suite's entry in
        ``Pairing.settings``, or ``None``), one each, for the gate's "rules:" line."""
        return []

    def cause(self, row: str, message: str) -> Cause | None:
        """The root cause of a failed test of this suite (its matrix row, without the target; its
        message), or ``None`` for the core's default: one finding per row. A suite overrides it to
        fold the same failure on several request paths or cases into one."""
        return None

    def figures(self, label: Callable[[str], str]) -> list[tuple[str, str | None]]:
        """``[(title, svg or None)]`` for the HTML report; ``None`` when there is nothing to
        plot.
        """
        return []


@runtime_checkable
class Measured(Protocol):
    """The optional part of a table whose suite measures figures against limits (the SLO suite). The
    gate and the reports ask ``isinstance(table, Measured)`` (``issubclass`` for the class-level
    ``history_note``); a table declares it by subclassing it, so the type checker holds its methods
    to these signatures."""

    def limits(self) -> list[Limits]:
        """Each measured unit against its limits, for the reports' figures table."""
        ...

    def unmeasured(self, target: str) -> set[str]:
        """Node ids of this suite's tests on ``target`` whose measurement was invalid (a load client
        that fell behind, counts the server disputes): their error is no verdict on the server, so
        the gate compares nothing there."""
        ...

    def timing_mode(self, baseline: Table, pairing: Pairing) -> str | None:
        """How this suite's timing figures of the pair were compared (in turns, or in separate
        sessions and on what terms), for the gate's verdict; ``None`` where it timed nothing on the
        pair."""
        ...

    def verdict_note(self, findings: list[Finding]) -> str | None:
        """What a passing verdict must add about this suite's findings (of every pair): changes it
        listed without judging them, for want of what judging needs; ``None`` when there are none.
        """
        ...

    @classmethod
    def history_note(cls, settings: Any) -> str | None:
        """How a history (``pytest-infer history``) judges this suite's figures under ``settings``,
        in one sentence.
        """
        ...

    def session_figures(self, source: str) -> dict[str, dict[tuple[str, str, str], float]]:
        """``{session: {(target, unit, figure): value}}``: each session's timing figures, from which
        a calibration learns how far they move between sessions on one machine; ``source`` names the
        file."""
        ...

    def benchmarks(self) -> list[dict[str, Any]]:
        """Measured figures for pytest-benchmark's JSON, one series each: ``{group, target, key,
        metric, value, runs, verdict, seconds, stored_as}``. pytest-benchmark keeps times (lower is
        better): ``seconds`` holds the runs as such times and ``stored_as`` says how the figure
        became one (reporting/benchmark.py)."""
        ...


class TargetTable(Table):
    """A table that is one JSON object keyed by target id (``counts``): loading, dumping and
    renaming are shared.
    """

    kind = "table"  # how its errors name it

    def __init__(self, counts: dict[str, Any] | None = None) -> None:
        self.counts: dict[str, Any] = counts if counts is not None else {}

    def to_json(self) -> Any:
        return self.counts

    @classmethod
    def from_json(cls, data: Any) -> TargetTable:
        if not isinstance(data, dict):
            raise ValueError(f"the {cls.kind} is a {type(data).__name__}, not an object")
        return cls(copy.deepcopy(data))

    def rekey(self, old: str, new: str) -> None:
        if old in self.counts:
            self.counts[new] = self.counts.pop(old)


class RawTable(Table):
    """The table of a suite this process does not know (not installed here): kept as read, never
    lost.
    """

    def __init__(self, data: Any = None) -> None:
        self.data = data if data is not None else {}

    def to_json(self) -> Any:
        return self.data

    @classmethod
    def from_json(cls, data: Any) -> RawTable:
        return cls(data)

    def merge(self, other: Table) -> None:
        theirs = other.to_json()
        if isinstance(self.data, list) and isinstance(theirs, list):
            self.data.extend(theirs)
        elif isinstance(self.data, dict) and isinstance(theirs, dict):
            self.data.update(theirs)

"""The views of a ``SessionResults`` that every renderer and the gate share, built once per
rendering.

The check matrix is the core's own (every test, one row per registered check);
each suite's table adds its sections. Missing or partial parts are tolerated, so
a report never fails because one suite did not run.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ..outcomes import Outcome, words
from ..paths import DEFAULT_MODEL, builtin_model_of
from ..table import CAUSE_SEVERITIES, Cause, Cell, Limits, Measured, Section, Table
from .model import Crash, SessionResults, TargetRecord, TestRecord

# Worst first: what a row shows when one check ran several times against one target (an xdist run,
# or runs merged by ``combine``).
OUTCOME_SEVERITY = Outcome.worst_first()
PASSES = frozenset(o for o in Outcome if o.passes)  # judged something and found it right


def target_label(target: TargetRecord) -> str:
    """The column heading of a target: framework and version (the id when the version is
    unknown).
    """
    if target.version:
        return f"{target.framework} {target.version}"
    return target.id


def column_label(target: TargetRecord) -> str:
    """A report column's heading: the target's label, and its model unless it is the default, so a
    framework x model matrix says which model each column served (a path by its last part, a
    built-in model's folder by its name)."""
    model = (
        target.model.rstrip("/").rsplit("/", 1)[-1]
        if target.model.startswith(("/", "."))
        else target.model
    )
    model = builtin_model_of(target.model) or model
    return target_label(target) if model == DEFAULT_MODEL else f"{target_label(target)} · {model}"


def row_key(test: TestRecord) -> str:
    """The matrix row of a test: its registered check, else its node id without the target
    parameter.
    """
    if test.check:
        return test.check
    path, _, params = test.nodeid.partition("[")
    name = path.split("::", 1)[-1] if "::" in path else path
    if not params:
        return name
    # the target's id as whole dash-separated parts only: target "a" must not eat the "a"s of a case
    # named "capacity"
    marked = re.sub(
        rf"(?:^|(?<=-)){re.escape(test.target)}(?=-|$)", "\0", params.rstrip("]"), count=1
    )
    parts = [p for p in marked.split("-") if p and p != "\0"]
    rest = "-".join(parts)
    return f"{name}[{rest}]" if rest else name


def counts_text(counts: Counter[str]) -> str:
    """``1 error, 88 not run``: how many tests had each outcome, worst first."""
    order = [*OUTCOME_SEVERITY, *sorted(set(counts) - set(OUTCOME_SEVERITY))]
    return ", ".join(f"{counts[o]} {words(o)}" for o in order if counts[o])


def worst(outcomes: list[str]) -> str:
    """The worst of ``outcomes``; one this version does not know is worse than any it knows."""
    return min(outcomes, key=lambda o: known.severity if (known := Outcome.of(o)) else -1)


@dataclass(slots=True)
class CheckCell:
    outcome: str
    tests: list[TestRecord]

    @property
    def message(self) -> str:
        return next((t.message for t in self.tests if t.outcome == self.outcome and t.message), "")

    @property
    def reproducer(self) -> str:
        return next((t.reproducer for t in self.tests if t.reproducer), "")

    @property
    def evidence(self) -> str:
        """What a pass judged (``extra.evidence``, which every suite records the same way); "" for
        any other outcome.
        """
        if self.outcome not in PASSES:
            return ""
        return next(
            (
                str(t.extra["evidence"])
                for t in self.tests
                if t.outcome == self.outcome and t.extra.get("evidence")
            ),
            "",
        )

    @property
    def symbol(self) -> str:
        """A cell failed only by checks of severity 'warning' (deviations clients tolerate) reads
        FAIL(w).
        """
        failed = [t for t in self.tests if t.outcome == Outcome.FAILED]
        warned = all(t.extra.get("severity") == "warning" for t in failed)
        if self.outcome == Outcome.FAILED and failed and warned:
            return f"{Outcome.FAILED.symbol}(w)"
        known = Outcome.of(self.outcome)
        return known.symbol if known else self.outcome


def check_matrix(results: SessionResults) -> dict[str, dict[str, CheckCell]]:
    """``{row: {target_id: CheckCell}}`` in first-seen order; a cell holds the worst outcome of its
    tests.
    """
    grouped: dict[str, dict[str, list[TestRecord]]] = {}
    for test in results.tests:
        grouped.setdefault(row_key(test), {}).setdefault(test.target, []).append(test)
    return {
        row: {
            tid: CheckCell(worst([t.outcome for t in tests]), tests) for tid, tests in cells.items()
        }
        for row, cells in grouped.items()
    }


def checks_section(matrix: dict[str, dict[str, CheckCell]]) -> Section:
    """The matrix as a section: a cell's detail is its failure's message, or what its pass
    judged.
    """
    rows = {
        row: {t: Cell(c.symbol, c.outcome, c.message or c.evidence) for t, c in cells.items()}
        for row, cells in matrix.items()
    }
    return Section("Checks", "check", rows)


# Outcomes that make a finding, and outcomes that make a matrix row worth showing by default.
PROBLEMS = frozenset(o for o in Outcome if o.finding)
NOTABLE = frozenset(o for o in Outcome if o.notable)
# An upstream reference in a message: ``xgrammar#749``, ``#895``, ``owner/repo#12``, or a GitHub
# issue or pull URL.
_REFERENCE = re.compile(
    r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+|(?<![\w/&#])(?:[A-Za-z][\w.-]*(?:/[\w.-]+)?)?#\d+\b"
)


def references(message: str) -> str:
    """The upstream issues a failure message names (its first lines), comma-separated, each once."""
    head = "\n".join(message.splitlines()[:3])
    return ", ".join(dict.fromkeys(_REFERENCE.findall(head)))


def headline_of(message: str) -> str:
    """A failure message's first line, without pytest's ``Failed:`` prefix."""
    first = next((line for line in message.splitlines() if line.strip()), "")
    return first.removeprefix("Failed: ").strip()


@dataclass(slots=True)
class Problem:
    """One root cause: the failed tests that share it, wherever they showed it (targets, request
    paths, cases).
    """

    suite: str
    cause: Cause
    tests: list[TestRecord] = field(default_factory=list)
    places: list[tuple[str, str]] = field(
        default_factory=list
    )  # (target label, where on it: "" or a path, mode or case)
    log: str = ""  # the server's last lines, for a cause that is the server's own (a death)

    @property
    def rank(self) -> tuple[int, int, str]:
        """Worst severity first, then the one that hit the most places."""
        severity = (
            CAUSE_SEVERITIES.index(self.cause.severity)
            if self.cause.severity in CAUSE_SEVERITIES
            else len(CAUSE_SEVERITIES)
        )
        return (severity, -len(self.places), self.cause.title)

    def where(self) -> str:
        """``vllm 0.32.0: response_format, native; sglang 0.5.23``: the places, grouped by
        target.
        """
        by_target: dict[str, list[str]] = {}
        for target, place in self.places:
            by_target.setdefault(target, []).extend([place] if place else [])
        return "; ".join(f"{t}: {', '.join(ps)}" if ps else t for t, ps in by_target.items())

    @property
    def message(self) -> str:
        return next((t.message for t in self.tests if t.message), "")

    @property
    def reproducer(self) -> str:
        return next((t.reproducer for t in self.tests if t.reproducer), "")

    def brief(self) -> str:
        """The message without what the finding shows on its own: its reproducer line and its server
        log lines.
        """
        out, in_log = [], False
        for line in self.message.splitlines():
            text = line.strip()
            if in_log and text.startswith("|"):
                continue
            in_log = bool(self.server_log) and text.startswith("server log while")
            if in_log or (self.reproducer and text.startswith("reproduce:")):
                continue
            out.append(line)
        return "\n".join(out)

    @property
    def server_log(self) -> str:
        return next(
            (str(t.extra["server_log"]) for t in self.tests if t.extra.get("server_log")), self.log
        )


# The core's own message for a test that met a dead server (plugin.infer_live_server): one death,
# many tests.
_DIED = re.compile(r"the server process (\d+) has died")


def _short(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def _not_run(results: SessionResults, target: str) -> str:
    count = sum(1 for t in results.tests if t.target == target and t.outcome == Outcome.NOT_RUN)
    return f"; {count} test{'s' if count > 1 else ''} {Outcome.NOT_RUN.words}" if count else ""


def _crash_cause(results: SessionResults, target: TargetRecord, crash: Crash) -> Cause:
    """A death of a launched server (``TargetRecord.crashes``): what was running, why it ended, what
    came of it.
    """
    when = (
        f" while {', '.join(map(_short, crash.during))} ran"
        if crash.during
        else f" after {_short(crash.after)}"
        if crash.after
        else ""
    )
    gave_up = (
        "" if crash.restarted or crash is not target.crashes[-1] else _not_run(results, target.id)
    )
    return Cause(
        f"died:{target.id}:{crash.pid}",
        f"{target.id}: the server {crash.why}{when}; it {crash.then}{gave_up}",
        "",
        "critical",
    )


def _core_cause(results: SessionResults, row: str, test: TestRecord) -> Cause | None:
    """A cause the core itself reports, whatever the suite: a server that did not start or cannot be
    reached (its first test's failure), a death, with the tests that were running when it came and
    those that met it after."""
    target = results.targets.get(test.target)
    if (
        target is not None
        and target.error
        and (error := target.error.splitlines()[0]) in test.message
    ):
        # an endpoint's error says what could not be reached
        title = (
            f"{target.id} did not start: {error}" if target.launched else f"{target.id}: {error}"
        )
        return Cause(f"start:{target.id}", title + _not_run(results, target.id), "", "critical")
    crash = (
        next((c for c in target.crashes if test.nodeid in c.during), None)
        if target is not None
        else None
    )
    if crash is not None:
        return Cause(f"died:{test.target}:{crash.pid}", "", row, "critical")
    if (died := _DIED.search(test.message)) is not None:
        return Cause(
            f"died:{test.target}:{died[1]}",
            f"the server process died (pid {died[1]}): the tests after it could not run",
            row,
            "critical",
        )
    return None


def _default_cause(row: str, test: TestRecord) -> Cause:
    """One finding per matrix row; a check's message that repeats its id (``[chat.n] ...``) is not
    repeated in the title."""
    severity = "minor" if test.extra.get("severity") == "warning" else "major"
    head = headline_of(test.message).removeprefix(f"[{row}] ")
    return Cause(
        row,
        f"{row}: {head}" if head else row,
        severity=severity,
        reference=references(test.message),
    )


def problems(results: SessionResults, label) -> list[Problem]:
    """Failed and errored tests folded into their root causes (each suite's ``Table.cause``), worst
    and widest first.
    """
    found: dict[tuple[str, str], Problem] = {}
    # each death is a finding, whether or not a test failed on it
    for target in results.targets.values():
        for crash in target.crashes:
            death = _crash_cause(results, target, crash)
            found[("", death.key)] = Problem("", death, log=crash.log_tail)
    for test in results.tests:
        if test.outcome not in PROBLEMS:
            continue
        suite, row = test.suite or "", row_key(test)
        cause = _core_cause(results, row, test)
        if cause is not None:
            # a server that died or never started is the core's finding, whichever suites' tests met
            # it
            suite = ""
        else:
            table = _table_of(results, suite)
            cause = (
                table.cause(row, test.message) if table is not None else None
            ) or _default_cause(row, test)
        if not cause.reference and (ref := references(test.message)):
            cause = Cause(cause.key, cause.title, cause.place, cause.severity, ref)
        problem = found.setdefault((suite, cause.key), Problem(suite, cause))
        problem.tests.append(test)
        place = (label(test.target), cause.place)
        if place not in problem.places:
            problem.places.append(place)
    for problem in found.values():
        if not problem.places:  # a death no failed test met
            problem.places.append((label(problem.cause.key.split(":")[1]), ""))
    return sorted(found.values(), key=lambda p: p.rank)


def _table_of(results: SessionResults, suite: str) -> Table | None:
    """The suite's table, or an empty one of its type: a suite that recorded no table still groups
    its failures.
    """
    if suite in results.tables:
        return results.tables[suite]
    known = results.suites.get(suite)
    return known.table_type()() if known is not None else None


def notable(cells: dict[str, CheckCell], ids: list[str]) -> bool:
    """A matrix row worth showing by default: something failed on it, or the targets disagree (a
    missing cell included)."""
    outcomes = [cells[t].outcome if t in cells else None for t in ids]
    return any(o in NOTABLE for o in outcomes) or len(set(outcomes)) > 1


@dataclass(slots=True)
class Views:
    """What every renderer draws: the columns, the check matrix, and every section, checks first."""

    results: SessionResults
    ids: list[str]
    labels: list[str]
    checks: dict[str, dict[str, CheckCell]]
    sections: list[Section] = field(default_factory=list)
    # target -> how many of its tests had each outcome
    outcomes: dict[str, Counter[str]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)  # the failures by root cause, worst first
    limits: list[Limits] = field(default_factory=list)  # every measured unit against its limits
    # (target, suite) -> outcomes
    by_suite: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)

    def label(self, target: str) -> str:
        return self.labels[self.ids.index(target)] if target in self.ids else target

    def outcome_counts(self, target: str) -> str:
        """``171 passed, 36 failed, 1 not exercised``: every outcome a target's tests had, worst
        first, so what judged nothing is counted beside what passed."""
        return counts_text(self.outcomes.get(target, Counter()))

    @property
    def suite_sections(self) -> list[Section]:
        return self.sections[1:]

    @property
    def variants(self) -> list[str]:
        """The variant labels the targets carry (``TargetRecord.variant``), in order of appearance:
        a column each.
        """
        return list(
            dict.fromkeys(label for t in self.results.targets.values() for label in t.variant)
        )

    def evidence(self) -> list[tuple[str, str, str]]:
        """``(row, target label, what it judged)`` for each passed cell of the matrix that names it,
        in matrix order.
        """
        return [
            (row, self.label(target), cell.evidence)
            for row, cells in self.checks.items()
            for target, cell in cells.items()
            if cell.evidence
        ]

    def notable_checks(self) -> Section:
        """The check matrix's rows where something failed or the targets differ: what the reports
        show unfolded.
        """
        full = self.sections[0]
        return Section(
            full.title,
            full.heading,
            {r: c for r, c in full.rows.items() if notable(self.checks[r], self.ids)},
        )

    def verdict_rows(self) -> list[tuple[str, str, Counter[str]]]:
        """``(target, suite, counts)`` per target and suite in registration order; ``invalid``
        counts measurements that judged nothing."""
        order = list(self.results.suites)
        rows = []
        for target in self.ids:
            seen = {s for t, s in self.by_suite if t == target} | {
                lim.suite for lim in self.limits if lim.target == target
            }
            for suite in sorted(
                seen, key=lambda s: (order.index(s) if s in order else len(order), s)
            ):
                counts = Counter(self.by_suite.get((target, suite), {}))
                counts["invalid"] = sum(
                    1
                    for lim in self.limits
                    if lim.target == target and lim.suite == suite and lim.verdict == "invalid"
                )
                rows.append((target, suite, counts))
        return rows


def build_views(results: SessionResults) -> Views:
    ids = list(results.targets)
    labels = [column_label(results.targets[t]) for t in ids]
    if len(set(labels)) < len(labels):
        labels = ids
    checks = check_matrix(results)
    sections = [checks_section(checks)]
    order = list(results.suites)  # registration order, whatever order the tables were filled in
    for name, table in sorted(
        results.tables.items(),
        key=lambda item: order.index(item[0]) if item[0] in order else len(order),
    ):
        for section in table.sections():
            section.suite = name
            sections.append(section)
    outcomes: dict[str, Counter[str]] = {}
    by_suite: dict[tuple[str, str], Counter[str]] = {}
    for test in results.tests:
        outcomes.setdefault(test.target, Counter())[test.outcome] += 1
        by_suite.setdefault((test.target, test.suite or "other"), Counter())[test.outcome] += 1
    views = Views(results, ids, labels, checks, sections, outcomes, by_suite=by_suite)
    for name, table in results.tables.items():
        for limits in table.limits() if isinstance(table, Measured) else ():
            limits.suite = name
            views.limits.append(limits)
    views.problems = problems(results, views.label)
    return views


_VERSION_PART = re.compile(r"(\d+)|([^\d.+-]+)")
# llama.cpp names each release by its build number, b11312: numbered in order, so the number is the
# version
_BUILD = re.compile(r"b(\d+)")
_BUILD_IN_RANGE = re.compile(r"(?<=[=<>~!])(\s*)b(?=\d)")


def release_version(version: str | None) -> Version | None:
    """A framework's version as PEP 440, llama.cpp's build tag ``bN`` as the release N (builds are
    numbered in order: b9999 before b11312); None for no version or one that is neither (a bare
    commit)."""
    if version and (build := _BUILD.fullmatch(version.strip())):
        version = build[1]
    try:
        return Version(version) if version else None
    except InvalidVersion:
        return None


def release_range(versions: str) -> SpecifierSet:
    """A PEP 440 range whose bounds may be llama.cpp builds, ``>=b11000,<b11400`` (as
    ``>=11000,<11400``); raises ``InvalidSpecifier`` for neither."""
    return SpecifierSet(_BUILD_IN_RANGE.sub(r"\1", versions), prereleases=True)


def version_key(version: str | None) -> tuple:
    """Sort key for version strings: numbers numerically (0.10 after 0.9), unknown versions
    first.
    """
    if not version:
        return ((-1,),)
    return tuple((int(n), "") if n else (-1, s) for n, s in _VERSION_PART.findall(version))

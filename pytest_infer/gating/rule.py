"""The gate's rule, one clause per line of docs/guide/gate.md ("The rule").

The candidate passes only when every target, test and table row the baseline judged has a
counterpart the candidate judged, nothing is judged worse on the outcome order, no failure worsened
in kind, no server died where the baseline's did not, and every suite's own comparison (figures,
keyword shares, API drift under its typed rule) finds no regression. Anything unpaired or unjudged
is ``missing``: the verdict is then INCOMPLETE, never PASS.

Each clause reads one pair and returns findings; ``RULE`` lists them in the order the gate applies
them. The rule was grown one case at a time before (a crashed candidate, a vanished engine, a
removed field each passed): writing it as clauses lets tests/gating/test_rule_properties.py drop any
one and show a degradation that then passes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..outcomes import Outcome
from ..results.model import Crash, SessionResults, TestRecord
from ..results.views import CheckCell, headline_of, row_key
from ..table import UNMEASURED, Finding, Fixed, Measured, Pairing, Table

PASSING = frozenset(o for o in Outcome if o.passes)
DEVIATIONS = frozenset(o for o in Outcome if o.deviates)
VERDICTS = frozenset(o for o in Outcome if o.judged)  # the passes, the deviations and the refusal
BROKE = frozenset(o for o in Outcome if o.broke)
# The outcome order on judged rows: a step down is a regression, a step up an improvement.
RANK: dict[str, int] = {
    Outcome.FAILED: 0,
    Outcome.XFAIL: 1,
    Outcome.UNSUPPORTED: 1,
    Outcome.PASSED: 2,
    Outcome.FIXED: 2,
}
ABSENT = "not run"  # the side of a row whose results hold no test of it
IMPROVED: dict[str, str] = {
    Outcome.FAILED: Outcome.FIXED.value,
    Outcome.XFAIL: "known deviation fixed",
    Outcome.UNSUPPORTED: "now supported",
}
# A failure's kind, worst last: what it met decides how bad it is, whatever its outcome says.
FAILURE_KINDS = ("assertion", "5xx", "timeout", "death")
_KIND_OF = (
    ("death", re.compile(r"\bhas died\b|\bdied\b|killed by SIG|exited with code", re.IGNORECASE)),
    ("timeout", re.compile(r"timed out|timeout", re.IGNORECASE)),
    (
        "5xx",
        re.compile(r"\bHTTP 5\d\d\b|\bstatus(?: code)?:? 5\d\d\b|server[- ]error", re.IGNORECASE),
    ),
)
# quoted text (a backslash escapes a quote inside it, as Python's repr writes a body holding both
# quotes), hex ids and numbers
_VARIABLE = re.compile(
    r"'(?:\\.|[^'\\])*'?|\"(?:\\.|[^\"\\])*\"?|\b[0-9a-f]*\d[0-9a-f]*\b|\d+(?:\.\d+)?",
    re.IGNORECASE,
)


@dataclass(slots=True)
class PairRun:
    """What every clause reads of one pair: both sessions, the two targets, both check matrices."""

    baseline: SessionResults
    candidate: SessionResults
    pairing: Pairing
    before: dict[str, dict[str, CheckCell]]
    after: dict[str, dict[str, CheckCell]]
    # node ids whose measurement was invalid on either side: compared with nothing
    invalid: frozenset[str]

    @property
    def label(self) -> str:
        return self.pairing.label

    def rows(self) -> list[tuple[str, CheckCell | None, CheckCell | None]]:
        """``(row, baseline cell, candidate cell)`` of every check row either target holds, invalid
        ones left out.
        """
        b, c = self.pairing.baseline, self.pairing.candidate
        out = []
        for row in dict.fromkeys([*self.before, *self.after]):
            old, new = self.before.get(row, {}).get(b), self.after.get(row, {}).get(c)
            if (old is not None or new is not None) and not self.measured_invalid(old, new):
                out.append((row, old, new))
        return out

    def measured_invalid(self, *cells: CheckCell | None) -> bool:
        return any(
            t.nodeid in self.invalid for cell in cells if cell is not None for t in cell.tests
        )


@dataclass(frozen=True, slots=True)
class Clause:
    name: str
    statement: str  # the clause in the words docs/guide/gate.md uses
    judge: Callable[[PairRun], list[Finding]]


def _outcome(cell: CheckCell | None) -> str:
    return cell.outcome if cell is not None else ABSENT


def _reason(cell: CheckCell | None) -> str:
    if cell is None:
        return "the candidate did not run it"
    return cell.message.splitlines()[0][:300] if cell.message else ""


def _declaration(cell: CheckCell) -> str:
    """The expected-failure declaration an xfail cell ran under ("" where the results did not record
    it).
    """
    declared = (t.extra.get("xfail", "") for t in cell.tests if t.outcome == Outcome.XFAIL)
    return next((d for d in declared if d), "")


def step(old: CheckCell | None, new: CheckCell | None) -> tuple[str, str] | None:
    """``(kind, detail)`` of one row on the outcome order, None where it did not move (or only lost
    coverage, which ``coverage`` says). docs/gate-outcomes.md has every step."""
    o, n = _outcome(old), _outcome(new)
    if old is not None and new is not None and o == n:
        before, after = _declaration(old), _declaration(new)
        if o == Outcome.XFAIL and before and after and before != after:
            return "change", f"expected-failure declaration changed: {before!r} -> {after!r}"
        return None
    detail = (
        _reason(new)
        if old is not None
        else "; ".join(filter(None, ("the baseline did not run it", _reason(new))))
    )
    if o in RANK and n in RANK:
        if RANK[n] < RANK[o]:
            return "regression", detail
        if RANK[n] > RANK[o]:
            return "improvement", IMPROVED.get(o, "") if n in PASSING else ""
        return "change", detail
    # a pass lost to a row that judged nothing: it no longer vouches for the server
    if o in PASSING:
        return "regression", detail
    if n == Outcome.FAILED:  # the baseline never judged it: no pass on what it cannot compare
        return "regression", ": ".join(
            filter(None, (f"fails; the baseline never judged it (was {o})", _reason(new)))
        )
    if n in BROKE and o in VERDICTS - {Outcome.FAILED}:  # a declared or refused row it broke on
        return "regression", detail
    # judged, now not: ``coverage`` makes it missing, ``failure_kinds`` judges what it met
    if o in VERDICTS:
        return None
    # the candidate broke where the baseline ran the test
    if n in BROKE and o not in BROKE and old is not None:
        return "regression", detail
    if n in VERDICTS:
        return "change", f"newly judged: {n}; the baseline never judged it (was {o})"
    return "change", detail


def outcomes(run: PairRun) -> list[Finding]:
    found = []
    for row, old, new in run.rows():
        if (moved := step(old, new)) is not None:
            reproducer = new.reproducer if new is not None else ""
            found.append(
                Finding(
                    moved[0],
                    "check",
                    run.label,
                    row,
                    _outcome(old),
                    _outcome(new),
                    moved[1],
                    reproducer,
                )
            )
    return found


def coverage(run: PairRun) -> list[Finding]:
    """A row the baseline judged that the candidate did not, where the outcome order calls it
    nothing.
    """
    return [
        Finding(
            "missing",
            "check",
            run.label,
            row,
            _outcome(old),
            _outcome(new),
            f"judged by the baseline, not by the candidate: {_reason(new) or 'no verdict'}",
            new.reproducer if new is not None else "",
        )
        for row, old, new in run.rows()
        if old is not None
        and old.outcome in VERDICTS
        and (new is None or new.outcome not in VERDICTS)
        # else the outcome order has judged it (a lost pass, a broken declared row)
        and step(old, new) is None
    ]


def failure_kind(message: str) -> tuple[str, str]:
    """``(kind, signature)`` of a failure: what it met (``FAILURE_KINDS``) and its headline with the
    values that change between runs of one server (quoted text, numbers, ids) masked, so two runs
    failing alike compare equal."""
    head = headline_of(message)
    kind = next((name for name, pattern in _KIND_OF if pattern.search(head)), "assertion")
    return kind, _VARIABLE.sub("#", head)


def _kinds(cell: CheckCell) -> list[tuple[str, str]]:
    failing = [t for t in cell.tests if t.outcome in DEVIATIONS or t.outcome == Outcome.ERROR]
    return [failure_kind(t.message) for t in failing]


def failure_kinds(run: PairRun) -> list[Finding]:
    """A row failing on both sides whose failure worsened: a worse kind, or a failed assertion the
    baseline's did not show. The outcome order alone calls that no change."""
    found = []
    rank = {k: i for i, k in enumerate(FAILURE_KINDS)}
    for row, old, new in run.rows():
        if old is None or new is None or old.outcome not in DEVIATIONS:
            continue
        worse = new.outcome == Outcome.ERROR and old.outcome == Outcome.FAILED
        if new.outcome != old.outcome and not worse:
            continue
        was, now = _kinds(old), _kinds(new)
        if not was or not now:
            continue
        worst_was, worst_now = max(rank[k] for k, _ in was), max(rank[k] for k, _ in now)
        seen = {s for _, s in was}
        # not a better kind
        new_signatures = [s for k, s in now if s not in seen and rank[k] >= worst_was]
        if worst_now > worst_was:
            detail = (
                f"the failure worsened: {FAILURE_KINDS[worst_was]} -> {FAILURE_KINDS[worst_now]}"
            )
        # an error is no failed assertion: only its kind counts
        elif new_signatures and new.outcome == old.outcome:
            detail = f"a different failure: {new_signatures[0]}"
        else:
            continue
        found.append(
            Finding(
                "regression",
                "check",
                run.label,
                row,
                old.outcome,
                new.outcome,
                f"{detail}: {_reason(new)}",
            )
        )
    return found


def _death_rows(results: SessionResults, target: str) -> Counter[str]:
    """Where each of a target's servers died: the rows of the tests running then (else the test just
    ended).
    """
    tests = {t.nodeid: t for t in results.tests if t.target == target}
    record = results.targets.get(target)
    rows: Counter[str] = Counter()
    for crash in record.crashes if record is not None else []:
        rows[_where(crash, tests, target)] += 1
    return rows


def _where(crash: Crash, tests: dict[str, TestRecord], target: str) -> str:
    ids = crash.during or ([crash.after] if crash.after else [])
    where = sorted({row_key(tests.get(n) or TestRecord(n, target, "")) for n in ids})
    return ", ".join(where) or "(no test running)"


def deaths(run: PairRun) -> list[Finding]:
    """A death in the candidate the baseline did not have at the same test is a regression, excused
    by nothing (no declaration, no inconclusive outcome); the same deaths on both sides are none."""
    was = _death_rows(run.baseline, run.pairing.baseline)
    now = _death_rows(run.candidate, run.pairing.candidate)
    record = run.candidate.targets.get(run.pairing.candidate)
    why = {
        _where(c, {t.nodeid: t for t in run.candidate.tests}, run.pairing.candidate): c.why
        for c in (record.crashes if record else [])
    }
    found = []
    for where in sorted(set(was) | set(now)):
        if now[where] > was[where]:
            found.append(
                Finding(
                    "regression",
                    "server",
                    run.label,
                    f"death during {where}",
                    was[where],
                    now[where],
                    f"the candidate's server died ({why.get(where, '')}) where the baseline's did "
                    "not",
                )
            )
        elif now[where] < was[where]:
            found.append(
                Finding(
                    "improvement",
                    "server",
                    run.label,
                    f"death during {where}",
                    was[where],
                    now[where],
                )
            )
    return found


def measured(run: PairRun) -> list[Finding]:
    """A row whose measurement was invalid on either side is compared with nothing: missing."""
    b, c = run.pairing.baseline, run.pairing.candidate
    return [
        Finding("missing", "check", run.label, row, _outcome(old), _outcome(new), UNMEASURED)
        for row in dict.fromkeys([*run.before, *run.after])
        if run.measured_invalid(
            old := run.before.get(row, {}).get(b), new := run.after.get(row, {}).get(c)
        )
    ]


def tables(run: PairRun) -> list[Finding]:
    """Each suite's own comparison under its settings (``Table.compare``)."""
    found: list[Finding] = []
    for name, table in run.candidate.tables.items():
        found += table.compare(run.baseline.tables.get(name, Table()), run.pairing)
    return found


def table_rows(run: PairRun) -> list[Finding]:
    """Every row of a suite's table (a keyword, a load point, an endpoint's shape) the baseline
    holds for its target, the candidate holds for its own: a suite that vanished, or a row it no
    longer reached, is missing."""
    found = []
    for name, table in run.baseline.tables.items():
        mine = run.candidate.tables.get(name)
        after = (
            {
                (s.title, row)
                for s in mine.sections()
                for row, cells in s.rows.items()
                if run.pairing.candidate in cells
            }
            if mine
            else set()
        )
        for section in table.sections():
            for row, cells in section.rows.items():
                if run.pairing.baseline in cells and (section.title, row) not in after:
                    found.append(
                        Finding(
                            "missing",
                            name,
                            run.label,
                            f"{section.title}: {row}",
                            "recorded",
                            "absent",
                            "the baseline's table holds it, the candidate's does not",
                        )
                    )
    return found


RULE: tuple[Clause, ...] = (
    Clause("outcomes", "nothing is judged worse on the outcome order", outcomes),
    Clause("coverage", "every test the baseline judged, the candidate judged", coverage),
    Clause(
        "failure kinds",
        "no failure worsened in kind (4xx < 5xx < timeout < death, or another assertion)",
        failure_kinds,
    ),
    Clause("deaths", "no server died where the baseline's did not", deaths),
    Clause("measured", "every measurement compared is valid on both sides", measured),
    Clause("tables", "every suite's own comparison finds no regression", tables),
    Clause("table rows", "every table row the baseline holds, the candidate holds", table_rows),
)


def judge(run: PairRun, rule: tuple[Clause, ...] = RULE) -> list[Finding]:
    return [finding for clause in rule for finding in clause.judge(run)]


def fixed(
    run_before: dict[str, dict[str, CheckCell]],
    after: dict[str, dict[str, CheckCell]],
    b: str,
    c: str,
):
    """The checks whose deviation on the baseline target (a failure, or a declared one) is gone on
    the candidate: each failing test's message and reproducer, for the tables to find what that
    deviation made (``Pairing.fixed``)."""
    return tuple(
        Fixed(row, test.message, test.reproducer)
        for row, cells in run_before.items()
        if (old := cells.get(b)) is not None
        and (new := after.get(row, {}).get(c)) is not None
        and old.outcome in DEVIATIONS
        and new.outcome in PASSING
        for test in old.tests
        if test.outcome in DEVIATIONS
    )


def invalid(baseline: SessionResults, candidate: SessionResults, b: str, c: str) -> frozenset[str]:
    return frozenset(
        n
        for results, tid in ((baseline, b), (candidate, c))
        for t in results.tables.values()
        if isinstance(t, Measured)
        for n in t.unmeasured(tid)
    )

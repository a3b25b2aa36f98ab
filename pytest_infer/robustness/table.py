"""The robustness suite's results: per target, how the bad requests and abuses were answered,
counted.
"""

from __future__ import annotations

import re

from ..outcomes import Outcome
from ..table import Cause, Cell, Finding, Pairing, Section, Table, TargetTable

# What the reports show per target, in this order.
COUNTERS = ("tried", "4xx", "5xx", "accepted", "dropped", "hangs", "deaths", "wedged", "aborted")
# Answers a server must never give to bad input: each one is a failed test as well.
BAD_COUNTERS = frozenset({"5xx", "accepted", "dropped", "hangs", "deaths", "wedged"})


# How a bad request was mishandled (robustness.kit's failure messages): the class of answer is the
# root cause, the bad requests that met it are its places. (pattern, title, severity)
ANSWER_CLASSES = (
    (
        re.compile(r"server dead|unusable"),
        "the server died or became unusable on bad input",
        "critical",
    ),
    (
        re.compile(r"accepted with HTTP \d+ instead of a 4xx"),
        "bad input accepted (HTTP 2xx instead of a 4xx)",
        "critical",
    ),
    (re.compile(r"no answer:"), "no answer to bad input (hang)", "critical"),
    (
        re.compile(r"dropped without an answer"),
        "connection dropped without an answer to bad input",
        "major",
    ),
    (re.compile(r"HTTP 5\d\d \(a server error"), "a 5xx for bad input (clients retry it)", "major"),
    (
        re.compile(r"without the error envelope: (?P<why>[^;\n]*)"),
        "a 4xx without the error envelope",
        "minor",
    ),
)
_CASE = re.compile(r"bad request '(?P<case>[^']+)'")
_PARAM = re.compile(r"\[(?P<case>[^\]]+)\]$")


def _cause(row: str, message: str) -> Cause | None:
    for pattern, title, severity in ANSWER_CLASSES:
        if (match := pattern.search(message)) is not None:
            why = match.groupdict().get("why")
            title = f"{title}: {why}" if why else title
            case = _CASE.search(message) or _PARAM.search(row)
            place = case["case"] if case else row
            return Cause(f"answer: {title}", title, place, severity)
    return None


def _cell(counter: str, counts: dict[str, int]) -> Cell:
    """A counter's cell: a bad counter that counted something is drawn as a failure."""
    n = counts.get(counter, 0)
    return Cell(str(n), Outcome.FAILED if counter in BAD_COUNTERS and n else "")


class RobustnessTable(TargetTable):
    """``{target: {counter: n}}``."""

    kind = "robustness table"

    def tally(self, target: str) -> dict[str, int]:
        """The target's live counters (every counter present), for the suite's ``Guard`` to count
        into.
        """
        mine = self.counts.setdefault(target, {})
        for key in COUNTERS:
            mine.setdefault(key, 0)
        return mine

    def merge(self, other: Table) -> None:
        for target, counters in other.to_json().items():
            mine = self.counts.setdefault(target, {})
            for key, n in counters.items():
                mine[key] = mine.get(key, 0) + n

    def sections(self) -> list[Section]:
        counters = list(dict.fromkeys([*COUNTERS, *(k for c in self.counts.values() for k in c)]))
        rows = {
            counter: {t: _cell(counter, c) for t, c in self.counts.items()}
            for counter in counters
            if any(counter in c for c in self.counts.values())
        }
        return (
            [Section("Robustness: answers to bad input and abuse", "robustness", rows)]
            if rows
            else []
        )

    def cause(self, row: str, message: str) -> Cause | None:
        return _cause(row, message)

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        """A bad answer counted more often than before is listed; the failed tests themselves are
        what gates.
        """
        before = (
            baseline.to_json().get(pairing.baseline)
            if isinstance(baseline, RobustnessTable)
            else None
        )
        after = self.counts.get(pairing.candidate)
        if before is None or after is None:
            return []
        return [
            Finding(
                "change",
                "robustness",
                pairing.label,
                counter,
                before.get(counter, 0),
                after.get(counter, 0),
                "bad answers to bad input",
            )
            for counter in sorted(BAD_COUNTERS)
            if after.get(counter, 0) != before.get(counter, 0)
        ]

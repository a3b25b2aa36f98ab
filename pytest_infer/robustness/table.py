"""The robustness suite's results: per target, how the bad requests and abuses were answered, counted."""
from __future__ import annotations

from ..suite import Cell, Finding, Pairing, Section, Table, TargetTable

# What the reports show per target, in this order.
COUNTERS = ("tried", "4xx", "5xx", "accepted", "dropped", "hangs", "deaths", "wedged", "aborted")
# Answers a server must never give to bad input: each one is a failed test as well.
BAD_COUNTERS = frozenset({"5xx", "accepted", "dropped", "hangs", "deaths", "wedged"})


class RobustnessTable(TargetTable):
    """``{target: {counter: n}}``."""

    kind = "robustness table"

    def tally(self, target: str) -> dict[str, int]:
        """The target's live counters (every counter present), for the suite's ``Guard`` to count into."""
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
            counter: {t: Cell(str(c.get(counter, 0)), "failed" if counter in BAD_COUNTERS and c.get(counter) else "")
                      for t, c in self.counts.items()}
            for counter in counters if any(counter in c for c in self.counts.values())
        }
        return [Section("Robustness: answers to bad input and abuse", "robustness", rows)] if rows else []

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        """A bad answer counted more often than before is listed; the failed tests themselves are what gates."""
        before = baseline.to_json().get(pairing.baseline) if isinstance(baseline, RobustnessTable) else None
        after = self.counts.get(pairing.candidate)
        if before is None or after is None:
            return []
        return [
            Finding("change", "robustness", pairing.label, counter, before.get(counter, 0), after.get(counter, 0), "bad answers to bad input")
            for counter in sorted(BAD_COUNTERS) if after.get(counter, 0) != before.get(counter, 0)
        ]

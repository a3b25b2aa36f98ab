"""The structured suite's results: per target, JSON-Schema keyword x outcome class, counted in requests."""
from __future__ import annotations

import re
from collections.abc import Callable

from ..suite import Cause, Cell, Finding, Pairing, Section, Table, TargetTable

# Outcome classes of the matrix (docs/structured-output.md), worst first.
KEYWORD_CLASSES = ("invalid", "error", "truncated", "rejected", "valid")
# Wrong answers: worse than a clean refusal or a truncation.
WRONG_KEYWORD = frozenset({"invalid", "error"})


def keyword_status(counts: dict[str, int]) -> str:
    """One word per keyword: the worst outcome class with a non-zero count (``none`` if nothing ran)."""
    for klass in KEYWORD_CLASSES:
        if counts.get(klass, 0) > 0:
            return klass
    other = [k for k, n in counts.items() if n > 0]
    return sorted(other)[0] if other else "none"


def _share(counts: dict[str, int], classes: frozenset[str]) -> tuple[int, int]:
    return sum(n for k, n in counts.items() if k in classes), sum(counts.values())


def rise_p_value(before: tuple[int, int], after: tuple[int, int]) -> float:
    """One-sided Fisher exact p-value that the share ``hits / total`` is higher after than before."""
    from scipy.stats import fisher_exact

    (b, bn), (a, an) = before, after
    if bn == 0 or an == 0:
        return 1.0
    return float(fisher_exact([[a, an - a], [b, bn - b]], alternative="greater")[1])


# (classes, a significant rise is a ..., a significant fall is a ...); the first that moves significantly names the finding
SHARE_TESTS = (
    (WRONG_KEYWORD, "regression", "improvement"),  # silent wrong answers and errors
    (frozenset({"rejected"}), "regression", "improvement"),  # support dropped or gained
    (frozenset({"truncated"}), "change", "change"),  # answers cut off at max_tokens: a property of the model's text
)


def _keyword_finding(keyword: str, old: dict[str, int], new: dict[str, int], pairing: Pairing) -> Finding | None:
    o, n = keyword_status(old), keyword_status(new)
    moved = []
    for classes, rise, fall in SHARE_TESTS:
        b, a = _share(old, classes), _share(new, classes)
        if b[1] == 0 or a[1] == 0 or b[0] * a[1] == a[0] * b[1]:
            continue
        up = a[0] * b[1] > b[0] * a[1]
        p = rise_p_value(b, a) if up else rise_p_value(a, b)
        label = "/".join(sorted(classes))
        detail = f"{label} {b[0]}/{b[1]} -> {a[0]}/{a[1]} (one-sided Fisher p={p:.3g})"
        if p < pairing.alpha:
            return Finding(rise if up else fall, "keyword", pairing.label, keyword, o, n, f"{detail}; {_counts_text(old)} -> {_counts_text(new)}")
        moved.append(detail)
    if o == n:
        return None  # the shares that moved did so within chance, and the one-word status did not move
    if not moved:  # one class traded for another of the same group (invalid for error)
        return Finding("change", "keyword", pairing.label, keyword, o, n, f"{_counts_text(old)} -> {_counts_text(new)}")
    return Finding("noise", "keyword", pairing.label, keyword, o, n, f"{'; '.join(moved)}: below significance (alpha {pairing.alpha})")


# Failure messages that mean the server answered and the answer broke the schema: silent wrong output.
_SILENT = re.compile(r"broke the schema|failed open|let through|violation")
_PARAMS = re.compile(r"^(?P<test>[^\[]+)\[(?P<params>.*)\]$")


def _cause(row: str, message: str) -> Cause | None:
    """The same test and case on every request path (``response_format``, its streaming mode, the native field) is one cause."""
    from .plugin import REQUEST_PATHS

    match = _PARAMS.match(row)
    if match is None:
        return None
    test, params = match["test"], match["params"]
    # reverse order tries a path before any path it extends (response_format-stream before response_format)
    path = next((p for p in sorted(REQUEST_PATHS, reverse=True) if params == p or params.startswith(f"{p}-")), "")
    case = params[len(path):].lstrip("-")
    first = next((line for line in message.splitlines() if line.strip()), "").removeprefix("Failed: ").strip()
    key = f"{test}[{case}]" if case else test
    severity = "critical" if _SILENT.search(message.split("\n  request:")[0]) else "major"
    title = first if case and case in first else f"{key}: {first}" if first else key
    return Cause(key, title, path, severity)


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {klass}" for klass, n in counts.items() if n)


class StructuredTable(TargetTable):
    """``{target: {keyword: {class: count}}}``; the ``all`` row counts every request once."""

    kind = "structured table"

    def count(self, target: str, keyword: str, klass: str, by: int = 1) -> None:
        cells = self.counts.setdefault(target, {}).setdefault(keyword, {})
        cells[klass] = cells.get(klass, 0) + by

    def merge(self, other: Table) -> None:
        for target, rows in other.to_json().items():
            for keyword, cells in rows.items():
                for klass, n in cells.items():
                    self.count(target, keyword, klass, n)

    def by_keyword(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{keyword: {target: {class: count}}}``, keywords sorted."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for target, rows in self.counts.items():
            for keyword, counts in rows.items():
                out.setdefault(keyword, {})[target] = dict(counts)
        return dict(sorted(out.items()))

    def sections(self) -> list[Section]:
        rows = {
            keyword: {t: Cell(keyword_status(c), keyword_status(c), _counts_text(c)) for t, c in cells.items()}
            for keyword, cells in self.by_keyword().items()
        }
        return [Section("Structured output: keyword x outcome", "structured keyword", rows)] if rows else []

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        """Per keyword, the share of wrong answers (and of refusals) before and after, with a one-sided Fisher exact test.

        A keyword's one-word status saturates: once one answer is wrong it cannot get worse. The share
        can, and a test on it keeps a sampled run's luck (a few more answers cut off, one schema the model
        happened to break) from being called a regression. A significant rise is a regression, a fall an
        improvement; a moved share or status below significance is noise; a significant move in the
        share of cut-off answers is a change.
        """
        before = baseline.by_keyword() if isinstance(baseline, StructuredTable) else {}
        after = self.by_keyword()
        found = []
        for keyword in sorted(set(before) | set(after)):
            old, new = before.get(keyword, {}).get(pairing.baseline), after.get(keyword, {}).get(pairing.candidate)
            if old is None or new is None:
                continue
            finding = _keyword_finding(keyword, old, new, pairing)
            if finding is not None:
                found.append(finding)
        return found

    def cause(self, row: str, message: str) -> Cause | None:
        return _cause(row, message)

    def figures(self, label: Callable[[str], str]) -> list[tuple[str, str | None]]:
        from .plots import keyword_heatmap

        return [("Keyword matrix", keyword_heatmap(self.by_keyword(), label) if self.counts else None)]



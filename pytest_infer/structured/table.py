"""The structured suite's results: per target, JSON-Schema keyword (and corpus case) x outcome
class, counted in requests.

A corpus case counts in its own row, ``case:NAME`` (``CASE_ROW``), besides its keywords' rows: the
gate compares its share of valid answers as it compares a keyword's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..table import Cause, Cell, Finding, Pairing, Section, Table, TargetTable
from .options import REQUEST_PATHS
from .plots import keyword_heatmap

# Answer classes of the matrix (docs/structured-output.md), worst first.
KEYWORD_CLASSES = ("invalid", "error", "truncated", "rejected", "valid")
# Wrong answers: worse than a clean refusal or a truncation.
WRONG_KEYWORD = frozenset({"invalid", "error"})


def keyword_status(counts: dict[str, int]) -> str:
    """One word per keyword: the worst outcome class with a non-zero count (``none`` if nothing
    ran).
    """
    for klass in KEYWORD_CLASSES:
        if counts.get(klass, 0) > 0:
            return klass
    other = [k for k, n in counts.items() if n > 0]
    return sorted(other)[0] if other else "none"


def _share(counts: dict[str, int], classes: frozenset[str]) -> tuple[int, int]:
    return sum(n for k, n in counts.items() if k in classes), sum(counts.values())


def rise_p_value(before: tuple[int, int], after: tuple[int, int]) -> float:
    """One-sided Fisher exact p-value that the share ``hits / total`` is higher after than before:
    the chance, with the hits' total and both sample sizes fixed, that ``after`` holds ``a`` of them
    or more (hypergeometric tail; exact integers, so no scipy for every gate)."""
    (b, bn), (a, an) = before, after
    if bn == 0 or an == 0:
        return 1.0
    hits = a + b
    tail = sum(
        math.comb(hits, k) * math.comb(an + bn - hits, an - k) for k in range(a, min(hits, an) + 1)
    )
    return tail / math.comb(an + bn, an)


# (classes, a significant rise is a ..., a significant fall is a ...); the first that moves
# significantly names the finding
SHARE_TESTS = (
    (WRONG_KEYWORD, "regression", "improvement"),  # silent wrong answers and errors
    (frozenset({"rejected"}), "regression", "improvement"),  # support dropped or gained
    # answers the grammar was judged on: fewer (cut off at max_tokens, refused) is less of the
    # schema honoured
    (frozenset({"valid"}), "improvement", "regression"),
    # cut off more, with no other share moving: the model's text
    (frozenset({"truncated"}), "change", "change"),
)
CASE_ROW = "case:"  # the row prefix of a corpus case (keyword rows never hold it)


def case_row(name: str) -> str:
    return f"{CASE_ROW}{name}"


def _row_finding(
    row: str, old: dict[str, int], new: dict[str, int], pairing: Pairing
) -> Finding | None:
    """A keyword's or a case's finding (area ``keyword`` or ``case``; a case is named without its
    prefix).
    """
    area, subject = (
        ("case", row.removeprefix(CASE_ROW)) if row.startswith(CASE_ROW) else ("keyword", row)
    )
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
            return Finding(
                rise if up else fall,
                area,
                pairing.label,
                subject,
                o,
                n,
                f"{detail}; {_counts_text(old)} -> {_counts_text(new)}",
            )
        moved.append(detail)
    if o == n:
        # the shares that moved did so within chance, and the one-word status did not move
        return None
    if not moved:  # one class traded for another of the same group (invalid for error)
        return Finding(
            "change",
            area,
            pairing.label,
            subject,
            o,
            n,
            f"{_counts_text(old)} -> {_counts_text(new)}",
        )
    return Finding(
        "noise",
        area,
        pairing.label,
        subject,
        o,
        n,
        f"{'; '.join(moved)}: below significance (alpha {pairing.alpha})",
    )


# Failure messages that mean the server answered and the answer broke the schema: silent wrong
# output.
_SILENT = re.compile(r"broke the schema|failed open|let through|violation")
_PARAMS = re.compile(r"^(?P<test>[^\[]+)\[(?P<params>.*)\]$")


def _cause(row: str, message: str) -> Cause | None:
    """The same test and case on every request path (``response_format``, its streaming mode, the
    native field) is one cause."""
    match = _PARAMS.match(row)
    if match is None:
        return None
    test, params = match["test"], match["params"]
    # reverse order tries a path before any path it extends (response_format-stream before
    # response_format)
    path = next(
        (
            p
            for p in sorted(REQUEST_PATHS, reverse=True)
            if params == p or params.startswith(f"{p}-")
        ),
        "",
    )
    case = params[len(path) :].lstrip("-")
    first = (
        next((line for line in message.splitlines() if line.strip()), "")
        .removeprefix("Failed: ")
        .strip()
    )
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

    def by_row(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{row: {target: {class: count}}}`` for every row, keywords and cases, sorted."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        for target, rows in self.counts.items():
            for row, counts in rows.items():
                out.setdefault(row, {})[target] = dict(counts)
        return dict(sorted(out.items()))

    def by_keyword(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{keyword: {target: {class: count}}}``, keywords sorted (the ``all`` row included, cases
        not).
        """
        return {row: cells for row, cells in self.by_row().items() if not row.startswith(CASE_ROW)}

    def by_case(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{case: {target: {class: count}}}``: the corpus cases, named without their row
        prefix.
        """
        return {
            row.removeprefix(CASE_ROW): cells
            for row, cells in self.by_row().items()
            if row.startswith(CASE_ROW)
        }

    def sections(self) -> list[Section]:
        def rows(table: dict[str, dict[str, dict[str, int]]]) -> dict[str, dict[str, Cell]]:
            def cell(counts: dict[str, int]) -> Cell:
                return Cell(keyword_status(counts), keyword_status(counts), _counts_text(counts))

            return {name: {t: cell(c) for t, c in cells.items()} for name, cells in table.items()}

        parts = [
            ("Structured output: keyword x outcome", "structured keyword", rows(self.by_keyword())),
            ("Structured output: corpus case x outcome", "structured case", rows(self.by_case())),
        ]
        return [Section(title, heading, found) for title, heading, found in parts if found]

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        """Per keyword and per corpus case, the shares of wrong, refused and valid answers before
        and after, each with a one-sided Fisher exact test at the pairing's alpha.

        A row's one-word status saturates: once one answer is wrong it cannot get worse. The shares
        can, and a test on them keeps a sampled run's luck (a few more answers cut off, one schema
        the model happened to break) from being called a regression. More wrong answers or refusals,
        or fewer valid ones (answers now cut off at the token limit: the grammar was judged on
        less), are a regression when significant; the reverse an improvement; a move below
        significance is noise.
        """
        before = baseline.by_row() if isinstance(baseline, StructuredTable) else {}
        after = self.by_row()
        found = []
        for row in sorted(set(before) | set(after)):
            old, new = (
                before.get(row, {}).get(pairing.baseline),
                after.get(row, {}).get(pairing.candidate),
            )
            if old is None or new is None:
                continue
            finding = _row_finding(row, old, new, pairing)
            if finding is not None:
                found.append(finding)
        return found

    def cause(self, row: str, message: str) -> Cause | None:
        return _cause(row, message)

    def figures(self, label: Callable[[str], str]) -> list[tuple[str, str | None]]:
        return [
            (
                "Keyword matrix",
                keyword_heatmap(self.by_keyword(), keyword_status, label) if self.counts else None,
            )
        ]

"""The consistency suite's results: per target, greedy answers alone against in a batch (identical,
near-tie flips, divergences outside the top-k, where they part), the structured corpus's answers
valid and the tool parser's scripts parsed alone and in a batch, and each per-request parameter
check's verdict on the mixed batch."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..outcomes import Outcome, words
from ..table import Cause, Cell, Finding, Pairing, Section, Table, TargetTable

# The numerics rule (docs/consistency.md): on tokens both the server and the reference chose, a
# server's logprob may differ from the reference's by at most this much (nats). Set from measured
# runs (docs/consistency.md: the figures).
MAX_LOGPROB_DIFF = 0.5

# failure messages of the suite's tests (suites/consistency) -> root causes: (pattern, title,
# severity)
CAUSES = (
    (
        re.compile(r"schemas valid alone were not in a batch"),
        "a request's schema is not applied to its own answer in a batch",
        "critical",
    ),
    (
        re.compile(r"scripts parsed as scripted alone were not in a batch"),
        "a request's tool calls are not parsed from its own text in a batch",
        "critical",
    ),
    (
        re.compile(r"changed in a batch though the server runs in its batch-invariant mode"),
        "greedy answers change in a batch in the engine's batch-invariant mode",
        "critical",
    ),
    (
        re.compile(r"changed in a batch beyond a near-tie"),
        "greedy answers change in a batch beyond a near-tie (a different computation)",
        "critical",
    ),
    (
        re.compile(r"^(?P<what>[a-z_ ]+): .*(?:in the batch|differently in the batch)"),
        "a request's own parameters are not kept in a batch",
        "critical",
    ),
    (
        re.compile(r"was not answered \((?P<what>[^)]*)\)"),
        "requests in a batch are not answered",
        "major",
    ),
    (
        re.compile(r"part from the reference beyond a near-tie|differs from the reference by"),
        "the server's numbers part from the reference implementation",
        "critical",
    ),
)
# the parts judged alone and under load (underload.py): what the gate calls them, and a right answer
UNDER_LOAD = {
    "structured": ("structured answers valid", "valid"),
    "tools": ("tool calls parsed as scripted", "parsed as scripted"),
}
# A parameter check's cell: drawn as its outcome; inconclusive as an invalid measurement.
PARAM_CSS = {
    **{o: o.value for o in (Outcome.PASSED, Outcome.FAILED, Outcome.NOT_EXERCISED)},
    Outcome.INCONCLUSIVE: "invalid",
}


def _batch_rows(b: dict[str, Any]) -> dict[str, Cell]:
    """One target's rows of greedy answers alone against in a batch."""
    share = b["identical"] / b["prompts"]
    return {
        "identical answers": Cell(
            f"{b['identical']}/{b['prompts']}",
            "" if share == 1 else Outcome.FAILED if b["outside_top_k"] else "",
            value=share,
        ),
        "near-tie flips": Cell(str(b["near_ties"]), value=float(b["near_ties"])),
        "divergences outside the top-k": Cell(
            str(b["outside_top_k"]),
            Outcome.FAILED if b["outside_top_k"] else "",
            value=float(b["outside_top_k"]),
        ),
        "divergences without logprobs": Cell(
            str(b["unclassified"]),
            "invalid" if b["unclassified"] else "",
            value=float(b["unclassified"]),
        ),
        "first divergence (token)": Cell(
            ", ".join(map(str, b["first_divergence"])) or "none",
            "",
            "; ".join(b.get("divergences", [])),
        ),
        "other requests in flight": Cell(
            f"{b['in_flight']} (overlapping: {b['overlapped']}/{b['prompts']})"
        ),
    }


def _under_load_rows(right: str) -> Callable[[dict[str, Any]], dict[str, Cell]]:
    """One target's rows of cases answered ``right`` alone against in a batch (underload.py)."""

    def rows(g: dict[str, Any]) -> dict[str, Cell]:
        n = g["cases"]
        return {
            f"{right} alone": Cell(f"{g['right_alone']}/{n}", value=g["right_alone"] / n),
            f"{right} in the batch": Cell(
                f"{g['right_in_batch']}/{n}", value=g["right_in_batch"] / n
            ),
            f"{right} alone twice, not in the batch": Cell(
                f"{len(g['broken'])}/{g['held_to']}",
                Outcome.FAILED if g["broken"] else "",
                ", ".join(g["broken"]),
                value=float(len(g["broken"])),
            ),
            "other requests in flight": Cell(
                f"{g['in_flight']} (overlapping: {g['overlapped']}/{n})"
            ),
        }

    return rows


def _numerics_rows(n: dict[str, Any]) -> dict[str, Cell]:
    """One target's rows of numerics against the reference."""
    return {
        "greedy tokens agreeing with the reference": Cell(
            f"{n['agreed']}/{n['compared']}", value=n["agreed"] / n["compared"]
        ),
        "largest logprob difference on them": Cell(
            f"{n['max_logprob_diff']:.4f}", value=n["max_logprob_diff"]
        ),
        "disagreements: near-ties": Cell(str(n["near_ties"])),
        "disagreements: outside the top-k": Cell(
            str(n["outside_top_k"]),
            Outcome.FAILED if n["outside_top_k"] else "",
            "; ".join(json.dumps(d) for d in n.get("disagreements", []))[:500],
        ),
    }


# (title, column, part of a target's counts, the count that says it was measured, its rows)
SECTIONS: tuple[tuple[str, str, str, str, Callable[[dict[str, Any]], dict[str, Cell]]], ...] = (
    (
        "Consistency: greedy answers alone and in a batch",
        "alone vs batch",
        "batch",
        "prompts",
        _batch_rows,
    ),
    (
        "Consistency: structured answers alone and in a batch",
        "schemas alone vs batch",
        "structured",
        "cases",
        _under_load_rows(UNDER_LOAD["structured"][1]),
    ),
    (
        "Consistency: tool calls parsed alone and in a batch",
        "scripts alone vs batch",
        "tools",
        "cases",
        _under_load_rows(UNDER_LOAD["tools"][1]),
    ),
    (
        "Consistency: numerics against the reference (transformers)",
        "numerics",
        "numerics",
        "compared",
        _numerics_rows,
    ),
)


class ConsistencyTable(TargetTable):
    """``{target: {"batch": {prompts, in_flight, overlapped, identical, near_ties, outside_top_k,
    unclassified, first_divergence, divergences}, "structured" and "tools": {cases, in_flight,
    right_alone, right_in_batch, held_to, overlapped, broken}, "params": {check: {"outcome",
    "message"}}}}``."""

    kind = "consistency table"

    def target(self, target: str) -> dict[str, Any]:
        mine = self.counts.setdefault(target, {})
        mine.setdefault("batch", {})
        mine.setdefault("params", {})
        return mine

    def merge(self, other: Table) -> None:
        for target, theirs in other.to_json().items():
            mine = self.target(target)
            for part in ("batch", "numerics", *UNDER_LOAD):
                if theirs.get(part):
                    mine[part] = theirs[part]
            mine["params"].update(theirs.get("params", {}))

    def sections(self) -> list[Section]:
        out = []
        for title, column, part, present, rows in SECTIONS:
            grid: dict[str, dict[str, Cell]] = {}
            for target, data in self.counts.items():
                values = data.get(part) or {}
                if values.get(present):
                    for row, cell in rows(values).items():
                        grid.setdefault(row, {})[target] = cell
            if grid:
                out.append(Section(title, column, grid))
        params: dict[str, dict[str, Cell]] = {}
        for target, data in self.counts.items():
            for check, verdict in sorted(data.get("params", {}).items()):
                outcome = verdict.get("outcome", "")
                params.setdefault(check, {})[target] = Cell(
                    words(outcome), PARAM_CSS.get(outcome, ""), verdict.get("message", "")[:500]
                )
        if params:
            out.append(
                Section(
                    "Consistency: each request keeps its own parameters in a batch",
                    "parameter",
                    params,
                )
            )
        return out

    def cause(self, row: str, message: str) -> Cause | None:
        for pattern, title, severity in CAUSES:
            if (match := pattern.search(message)) is not None:
                what = match.groupdict().get("what") or row
                return Cause(f"consistency: {title}", title, what.strip()[:120], severity)
        return None

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        """Fewer identical greedy answers than the baseline is listed (a regression where the
        candidate's new divergences leave the top-k); a parameter check that passed and now fails is
        a regression."""
        before = (
            baseline.to_json().get(pairing.baseline)
            if isinstance(baseline, ConsistencyTable)
            else None
        )
        after = self.counts.get(pairing.candidate)
        if before is None or after is None:
            return []
        found = []
        old, new = before.get("batch") or {}, after.get("batch") or {}
        if old.get("prompts") and new.get("prompts"):
            was, now = old["identical"] / old["prompts"], new["identical"] / new["prompts"]
            if now < was:
                kind = "regression" if new["outside_top_k"] > old["outside_top_k"] else "change"
                found.append(
                    Finding(
                        kind,
                        "consistency",
                        pairing.label,
                        "greedy answers identical alone and in a batch",
                        f"{was:.0%}",
                        f"{now:.0%}",
                        f"outside the top-k: {old['outside_top_k']} -> {new['outside_top_k']}; "
                        "near-tie flips: "
                        f"{old['near_ties']} -> {new['near_ties']}",
                    )
                )
        old_n, new_n = before.get("numerics") or {}, after.get("numerics") or {}
        if old_n.get("compared") and new_n.get("compared"):
            was, now = old_n["agreed"] / old_n["compared"], new_n["agreed"] / new_n["compared"]
            # the rule (docs/consistency.md): greedy decoding against a fixed reference is
            # deterministic, so any drop in agreement is the server's numbers moving; so is a
            # largest difference that crosses the suite's limit
            crossed = new_n["max_logprob_diff"] > MAX_LOGPROB_DIFF >= old_n["max_logprob_diff"]
            if now < was or crossed:
                found.append(
                    Finding(
                        "regression",
                        "consistency",
                        pairing.label,
                        "numerics against the reference",
                        f"{old_n['agreed']}/{old_n['compared']} agree, max diff "
                        f"{old_n['max_logprob_diff']:.4f}",
                        f"{new_n['agreed']}/{new_n['compared']} agree, max diff "
                        f"{new_n['max_logprob_diff']:.4f}",
                        "greedy tokens agreeing with the transformers reference, largest logprob "
                        "difference on them "
                        f"(limit {MAX_LOGPROB_DIFF})",
                    )
                )
        for part, (subject, right) in UNDER_LOAD.items():
            old_g, new_g = before.get(part) or {}, after.get(part) or {}
            if old_g.get("cases") and new_g.get("cases"):
                newly = sorted(set(new_g["broken"]) - set(old_g["broken"]))
                if newly:
                    found.append(
                        Finding(
                            "regression",
                            "consistency",
                            pairing.label,
                            f"{subject} alone and in a batch",
                            f"{len(old_g['broken'])} broken in the batch",
                            f"{len(new_g['broken'])} broken in the batch",
                            f"{right} alone, not in a batch of {new_g['in_flight']}: "
                            f"{', '.join(newly)}",
                        )
                    )
        for check, verdict in after.get("params", {}).items():
            was_outcome = (before.get("params", {}).get(check) or {}).get("outcome")
            if verdict.get("outcome") == Outcome.FAILED and was_outcome == Outcome.PASSED:
                found.append(
                    Finding(
                        "regression",
                        "consistency",
                        pairing.label,
                        f"parameters in a batch: {check}",
                        "kept",
                        "not kept",
                        verdict.get("message", "")[:300],
                    )
                )
        return found

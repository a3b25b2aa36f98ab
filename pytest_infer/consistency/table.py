"""The consistency suite's results: per target, greedy answers alone against in a batch (identical, near-tie flips,
divergences outside the top-k, where they part), and each per-request parameter check's verdict on the mixed batch."""

from __future__ import annotations

import re
from typing import Any

from ..table import Cause, Cell, Finding, Pairing, Section, Table, TargetTable

# failure messages of the suite's tests (suites/consistency) -> root causes: (pattern, title, severity)
CAUSES = (
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
    (re.compile(r"was not answered \((?P<what>[^)]*)\)"), "requests in a batch are not answered", "major"),
)
PARAM_CSS = {"passed": "passed", "failed": "failed", "inconclusive": "invalid", "not_exercised": "not_exercised"}


class ConsistencyTable(TargetTable):
    """``{target: {"batch": {prompts, in_flight, overlapped, identical, near_ties, outside_top_k, unclassified,
    first_divergence, divergences}, "params": {check: {"outcome", "message"}}}}``."""

    kind = "consistency table"

    def target(self, target: str) -> dict[str, Any]:
        mine = self.counts.setdefault(target, {})
        mine.setdefault("batch", {})
        mine.setdefault("params", {})
        return mine

    def merge(self, other: Table) -> None:
        for target, theirs in other.to_json().items():
            mine = self.target(target)
            if theirs.get("batch"):
                mine["batch"] = theirs["batch"]
            mine["params"].update(theirs.get("params", {}))

    def sections(self) -> list[Section]:
        out = []
        batch: dict[str, dict[str, Cell]] = {}
        for target, data in self.counts.items():
            b = data.get("batch") or {}
            if not b.get("prompts"):
                continue
            share = b["identical"] / b["prompts"]
            rows = {
                "identical answers": Cell(
                    f"{b['identical']}/{b['prompts']}",
                    "" if share == 1 else "failed" if b["outside_top_k"] else "",
                    value=share,
                ),
                "near-tie flips": Cell(str(b["near_ties"]), value=float(b["near_ties"])),
                "divergences outside the top-k": Cell(
                    str(b["outside_top_k"]), "failed" if b["outside_top_k"] else "", value=float(b["outside_top_k"])
                ),
                "divergences without logprobs": Cell(
                    str(b["unclassified"]), "invalid" if b["unclassified"] else "", value=float(b["unclassified"])
                ),
                "first divergence (token)": Cell(
                    ", ".join(map(str, b["first_divergence"])) or "none", "", "; ".join(b.get("divergences", []))
                ),
                "other requests in flight": Cell(f"{b['in_flight']} (overlapping: {b['overlapped']}/{b['prompts']})"),
            }
            for row, cell in rows.items():
                batch.setdefault(row, {})[target] = cell
        if batch:
            out.append(
                Section(
                    "Consistency: greedy answers alone and in a batch",
                    "alone vs batch",
                    batch,
                )
            )
        params: dict[str, dict[str, Cell]] = {}
        for target, data in self.counts.items():
            for check, verdict in sorted(data.get("params", {}).items()):
                outcome = verdict.get("outcome", "")
                params.setdefault(check, {})[target] = Cell(
                    outcome.replace("_", " "), PARAM_CSS.get(outcome, ""), verdict.get("message", "")[:500]
                )
        if params:
            out.append(Section("Consistency: each request keeps its own parameters in a batch", "parameter", params))
        return out

    def cause(self, row: str, message: str) -> Cause | None:
        for pattern, title, severity in CAUSES:
            if (match := pattern.search(message)) is not None:
                what = match.groupdict().get("what") or row
                return Cause(f"consistency: {title}", title, what.strip()[:120], severity)
        return None

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        """Fewer identical greedy answers than the baseline is listed (a regression where the candidate's new
        divergences leave the top-k); a parameter check that passed and now fails is a regression."""
        before = baseline.to_json().get(pairing.baseline) if isinstance(baseline, ConsistencyTable) else None
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
                        kind, "consistency", pairing.label, "greedy answers identical alone and in a batch",
                        f"{was:.0%}", f"{now:.0%}",
                        f"outside the top-k: {old['outside_top_k']} -> {new['outside_top_k']}; near-tie flips: "
                        f"{old['near_ties']} -> {new['near_ties']}",
                    )
                )  # fmt: skip
        for check, verdict in after.get("params", {}).items():
            was_outcome = (before.get("params", {}).get(check) or {}).get("outcome")
            if verdict.get("outcome") == "failed" and was_outcome == "passed":
                found.append(
                    Finding(
                        "regression", "consistency", pairing.label, f"parameters in a batch: {check}", "kept",
                        "not kept", verdict.get("message", "")[:300],
                    )
                )  # fmt: skip
        return found

"""The security suite's results: per target, what each route answered without the key, what error
answers disclosed, and what one hostile request did to everyone else's latency."""

from __future__ import annotations

import re
from typing import Any

from ..outcomes import Outcome
from ..table import Cause, Cell, Finding, Pairing, Section, Table, TargetTable
from .routes import PROTECTED

# failure messages of the suite's tests (suites/security) -> root causes: (pattern, title, severity)
CAUSES = (
    (
        re.compile(r"answer(?:s)? a caller without the key: (?P<what>[^\n]*)"),
        "routes that serve without the API key",
        "critical",
    ),
    (
        re.compile(r"error answers disclose (?P<what>[^\n:]*)"),
        "error answers disclose internals",
        "major",
    ),
    (
        re.compile(r"hostile request '(?P<what>[^']+)'"),
        "one request stalls every other client",
        "major",
    ),
    (
        re.compile(r"over the documented limit '(?P<what>[^']+)'"),
        "a request over a documented limit is served",
        "major",
    ),
)


class SecurityTable(TargetTable):
    """``{target: {"routes": {"METHOD path": probe}, "leaks": [leak], "errors_judged": n, "stalls":
    {kind: stall}}}``."""

    kind = "security table"

    def target(self, target: str) -> dict[str, Any]:
        mine = self.counts.setdefault(target, {})
        for key, empty in (("routes", {}), ("leaks", []), ("errors_judged", 0), ("stalls", {})):
            mine.setdefault(key, empty)
        return mine

    def merge(self, other: Table) -> None:
        for target, theirs in other.to_json().items():
            mine = self.target(target)
            mine["routes"].update(theirs.get("routes", {}))
            mine["stalls"].update(theirs.get("stalls", {}))
            mine["leaks"] += [leak for leak in theirs.get("leaks", []) if leak not in mine["leaks"]]
            mine["errors_judged"] += theirs.get("errors_judged", 0)

    def sections(self) -> list[Section]:
        out = []
        routes: dict[str, dict[str, Cell]] = {}
        for target, data in self.counts.items():
            for name, probe in data.get("routes", {}).items():
                verdict = probe.get("verdict", "")
                bad = verdict == "open" and probe.get("kind") in PROTECTED
                text = (
                    f"{verdict} ({probe.get('no_key')}/{probe.get('wrong_key')})"
                    if verdict != "not reached"
                    else f"not reached ({probe.get('keyed')})"
                )
                routes.setdefault(f"{name} [{probe.get('kind')}]", {})[target] = Cell(
                    text, Outcome.FAILED if bad else "", probe.get("reproducer", "")
                )
        if routes:
            out.append(
                Section(
                    "Security: each route without the key (answer without / with a wrong key)",
                    "route",
                    routes,
                )
            )
        leaks: dict[str, dict[str, Cell]] = {}
        for target, data in self.counts.items():
            for leak in data.get("leaks", []):
                row = f"{leak['what']} in {leak['where']}"
                excerpt = f"{leak['request']}: {leak['excerpt']}"
                leaks.setdefault(row, {})[target] = Cell(excerpt, Outcome.FAILED)
            if data.get("errors_judged"):
                leaks.setdefault("error answers judged", {})[target] = Cell(
                    str(data["errors_judged"]), "", value=float(data["errors_judged"])
                )
        if leaks:
            out.append(Section("Security: what error answers disclose", "leak", leaks))
        stalls: dict[str, dict[str, Cell]] = {}
        for target, data in self.counts.items():
            for kind, stall in data.get("stalls", {}).items():
                value = stall.get("stall_s")
                text = "n/a" if value is None else f"{value * 1000:.0f} ms"
                verdict = Outcome.of(stall.get("verdict", ""))
                if verdict is Outcome.NOT_EXERCISED:
                    text = f"{verdict.words}: {stall.get('hostile_outcome') or 'refused'}"
                elif stall.get("overlapping") is not None and value is not None:
                    text += f" ({stall['overlapping']} in flight)"
                if stall.get("recovered") is False:
                    text += ", not recovered"
                shown = (Outcome.FAILED, Outcome.PASSED, Outcome.NOT_EXERCISED)
                css = stall.get("verdict", "") if verdict in shown else ""
                stalls.setdefault(kind, {})[target] = Cell(
                    text,
                    css,
                    stall.get("why", ""),
                    value=None if value in (None, float("inf")) else value,
                )
        if stalls:
            out.append(
                Section(
                    "Security: one hostile request, the others' stall (worst TTFT while it ran "
                    "less the median before)",
                    "hostile request",
                    stalls,
                )
            )
        return out

    def cause(self, row: str, message: str) -> Cause | None:
        for pattern, title, severity in CAUSES:
            if (match := pattern.search(message)) is not None:
                return Cause(f"security: {title}", title, match["what"].strip()[:120], severity)
        return None

    def compare(self, baseline: Table, pairing: Pairing) -> list[Finding]:
        """A route the baseline refused and the candidate serves without the key gates; a new kind
        of leak is listed.
        """
        before = (
            baseline.to_json().get(pairing.baseline)
            if isinstance(baseline, SecurityTable)
            else None
        )
        after = self.counts.get(pairing.candidate)
        if before is None or after is None:
            return []
        found = []
        for name, probe in after.get("routes", {}).items():
            old = before.get("routes", {}).get(name, {})
            if probe.get("verdict") == "open" and old.get("verdict") == "refused":
                kind = "regression" if probe.get("kind") in PROTECTED else "change"
                found.append(
                    Finding(
                        kind,
                        "security",
                        pairing.label,
                        f"{name} [{probe.get('kind')}]",
                        "refused without the key",
                        "answers without the key",
                        f"HTTP {probe.get('no_key')} without a key",
                        probe.get("reproducer", ""),
                    )
                )
            elif probe.get("verdict") == "refused" and old.get("verdict") == "open":
                found.append(
                    Finding(
                        "improvement",
                        "security",
                        pairing.label,
                        f"{name} [{probe.get('kind')}]",
                        "answers without the key",
                        "refused without the key",
                    )
                )
        old_leaks = {(leak["what"], leak["where"]) for leak in before.get("leaks", [])}
        for leak in after.get("leaks", []):
            if (leak["what"], leak["where"]) not in old_leaks:
                found.append(
                    Finding(
                        "change",
                        "security",
                        pairing.label,
                        f"{leak['what']} in {leak['where']}",
                        "not seen",
                        leak["excerpt"],
                        f"in the answer to {leak['request']}",
                    )
                )
                old_leaks.add((leak["what"], leak["where"]))
        return found

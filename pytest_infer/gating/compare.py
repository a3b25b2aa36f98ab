"""Compare a candidate session with a baseline: pair the targets, apply the rule to each pair, give
the verdict.

Targets are paired by id, else by framework when each side has exactly one target of it (``vllm
0.31.0`` baseline v ``vllm 0.32.0`` candidate), or explicitly. Each pair is judged by ``rule.RULE``
clause by clause; a baseline target that pairs with none is missing, and a side that judged nothing
(its server never became ready, its file holds no tests) is compared with nothing but its deaths.
Regressions fail the gate; anything missing makes it INCOMPLETE; improvements, fixed deviations,
noise and other changes are listed so a reviewer sees them. Every step of a check's outcome and the
finding it makes: docs/gate-outcomes.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..results.model import SessionResults
from ..results.views import check_matrix, counts_text, target_label
from ..suite import Suite
from ..table import ALPHA, UNMEASURED, Finding, Measured, Pairing, Table
from . import rule

# "missing": what the baseline judged and the candidate has no judged counterpart of; it makes the
# verdict INCOMPLETE
KINDS = ("regression", "missing", "improvement", "noise", "change")
PASS = "PASS: no regressions"
EXIT_PASS, EXIT_REGRESSION, EXIT_INCOMPLETE = 0, 1, 2
__all__ = ["Finding", "GateResult", "compare", "not_judged", "pair_targets"]


@dataclass(slots=True)
class GateResult:
    pairs: list[tuple[str, str]] = field(default_factory=list)
    pair_labels: list[str] = field(default_factory=list)
    unpaired: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # "check (target)" whose measurement was invalid on either side
    unmeasured: list[str] = field(default_factory=list)
    # per pair, how its timing was judged: in turns, or across sessions
    timing: list[str] = field(default_factory=list)
    # what the suites listed without judging (Measured.verdict_note)
    notes: list[str] = field(default_factory=list)
    # "baseline vllm 0.31.0: the server never became ready (...)": a side of a pair that judged
    # nothing, not compared
    not_judged: list[str] = field(default_factory=list)
    # "0.1.0 -> 0.2.0" where the two files' plugin versions differ: the checks themselves may have
    plugin: str = ""

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    @property
    def regressions(self) -> list[Finding]:
        return self.of("regression")

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    @property
    def incomplete(self) -> bool:
        """Something the gate was given could not be compared: it cannot pass."""
        return not self.pairs or bool(self.not_judged or self.of("missing"))

    @property
    def exit_code(self) -> int:
        """0 pass, 1 a regression, 2 incomplete: what ``pytest-infer compare`` and a gated pytest
        run exit with.
        """
        return EXIT_REGRESSION if self.failed else EXIT_INCOMPLETE if self.incomplete else EXIT_PASS

    @property
    def verdict(self) -> str:
        plugin = (
            f"; PLUGIN CHANGED: pytest-infer {self.plugin} (its checks may judge differently: a "
            "difference may be the"
            " plugin's)"
            if self.plugin
            else ""
        )
        if not self.pairs:
            return "NO COMPARISON: no target of the candidate matches one of the baseline" + plugin
        n = len(self.regressions)
        lacking = [f for f in self.of("missing") if f.detail != UNMEASURED]
        missing = [
            *(f"NOT JUDGED: {why}" for why in self.not_judged),
            *(
                [
                    f"NOT MEASURED: {', '.join(self.unmeasured)} (an invalid measurement: not "
                    "compared)"
                ]
                if self.unmeasured
                else []
            ),
            *([f"MISSING: {_missing(lacking)}"] if lacking else []),
        ]
        if n:
            return "; ".join([f"FAIL: {n} regression{'s' if n != 1 else ''}", *missing]) + plugin
        if missing:
            return "; ".join(["INCOMPLETE: no regressions in what was compared", *missing]) + plugin
        return (f"{PASS} ({'; '.join(self.notes)})" if self.notes else PASS) + plugin

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "failed": self.failed,
            "exit_code": self.exit_code,
            **asdict(self),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateResult:
        return cls(
            pairs=[tuple(p) for p in data.get("pairs", [])],
            pair_labels=list(data.get("pair_labels", [])),
            unpaired=list(data.get("unpaired", [])),
            rules=list(data.get("rules", [])),
            findings=[Finding(**f) for f in data.get("findings", [])],
            warnings=list(data.get("warnings", [])),
            unmeasured=list(data.get("unmeasured", [])),
            timing=list(data.get("timing", [])),
            notes=list(data["notes"]) if "notes" in data else _notes_in(data.get("verdict")),
            not_judged=list(data.get("not_judged", [])),
            plugin=str(data.get("plugin", "")),
        )


def _missing(found: list[Finding], shown: int = 3) -> str:
    """``3 of what the baseline judged have no counterpart (target vllm 0.31.0, check chat.n,
    ...)``.
    """
    names = [f"{f.area} {f.subject}" for f in found[:shown]] + (
        ["..."] if len(found) > shown else []
    )
    have = "has" if len(found) == 1 else "have"
    return (
        f"{len(found)} of what the baseline judged {have} no counterpart judged "
        f"({', '.join(names)})"
    )


def gate_of(results: SessionResults) -> GateResult | None:
    """The verdict a saved results file holds, if its run compared with a baseline."""
    return GateResult.from_dict(results.gate) if results.gate else None


def _notes_in(verdict: Any) -> list[str]:
    """A gate stored before its notes had a field of their own kept them only in its verdict:
    ``PASS: ... (note)``.
    """
    head, sep, note = str(verdict or "").partition(f"{PASS} (")
    return [note.removesuffix(")")] if sep and not head else []


def pair_targets(
    baseline: SessionResults,
    candidate: SessionResults,
    explicit: dict[str, str] | None = None,
    *,
    exclusive: bool = False,
) -> tuple[list[tuple[str, str]], list[str]]:
    """``[(baseline_id, candidate_id)]`` and the ids left unpaired (with the side they are on).

    A target named in an explicit pair, on either side, is not paired again: baseline and candidate
    may be one results file (an interleaved session), where ``base=cand`` must not also give
    ``cand -> base``. ``exclusive``: the explicit pairs only (a history compares two versions of a
    file that holds many)."""
    pairs = [
        (b, c)
        for b, c in (explicit or {}).items()
        if b in baseline.targets and c in candidate.targets
    ]
    if exclusive:
        return pairs, []
    named = {t for pair in pairs for t in pair}
    left_b = [t for t in baseline.targets if t not in named]
    left_c = [t for t in candidate.targets if t not in named]
    for tid in list(left_b):
        if tid in left_c and baseline.targets[tid].framework == candidate.targets[tid].framework:
            pairs.append((tid, tid))
            left_b.remove(tid)
            left_c.remove(tid)
    for framework in sorted({baseline.targets[t].framework for t in left_b}):
        b = [t for t in left_b if baseline.targets[t].framework == framework]
        c = [t for t in left_c if candidate.targets[t].framework == framework]
        if len(b) == 1 and len(c) == 1:
            pairs.append((b[0], c[0]))
            left_b.remove(b[0])
            left_c.remove(c[0])
    unpaired = [f"baseline {t}" for t in left_b] + [f"candidate {t}" for t in left_c]
    return pairs, unpaired


def not_judged(results: SessionResults, target: str) -> str:
    """Why ``target`` judged nothing, "" where it judged something: such a side has nothing to
    compare with.

    Nothing is judged when its server never became ready (``TargetRecord.error``), its file holds no
    tests list, or none of its tests reached a verdict; a target with no test at all (results built
    in code, not by a session) judged something if a suite's table holds a row of it."""
    if "tests" in results.missing:
        return "the results file has no tests list: nothing was recorded"
    record = results.targets.get(target)
    counts = Counter(t.outcome for t in results.tests if t.target == target)
    tests = f"its tests: {counts_text(counts)}" if counts else "no test of it recorded"
    if record is not None and record.error:
        return f"the server never became ready ({record.error.splitlines()[0][:200]}); {tests}"
    if any(counts[o] for o in rule.VERDICTS):
        return ""
    if not counts and any(
        target in cells
        for table in results.tables.values()
        for s in table.sections()
        for cells in s.rows.values()
    ):
        return ""
    return f"no test reached a verdict on the server; {tests}"


def plugin_change(baseline: SessionResults, candidate: SessionResults) -> str:
    """``"0.1.0 -> 0.2.0"`` where the plugin that wrote the two files differs ("" where it is the
    same): its checks may have changed under the server."""
    b, c = baseline.plugin_version or "unrecorded", candidate.plugin_version or "unrecorded"
    return "" if b == c else f"{b} -> {c}"


def code_warnings(baseline: SessionResults, candidate: SessionResults) -> list[str]:
    """A difference between two runs is the server's only if both ran the same checks: say when they
    may not have.
    """
    b, c = baseline.environment.get("git", {}), candidate.environment.get("git", {})
    warnings = []
    if b.get("commit") and c.get("commit") and b["commit"] != c["commit"]:
        warnings.append(
            "baseline and candidate ran different suite code "
            f"({b.get('describe') or b['commit'][:12]} v "
            f"{c.get('describe') or c['commit'][:12]}): a difference may come from the suites, not "
            "the server"
        )
    elif b.get("dirty") or c.get("dirty"):
        warnings.append(
            "a run came from a checkout with uncommitted changes: the suites may have differed "
            "between runs"
        )
    return warnings


def gate_rules(suites: Mapping[str, Suite], settings: Mapping[str, Any]) -> list[str]:
    """The rules of every suite given settings, as each suite's table describes them."""
    return [
        rule
        for name, value in settings.items()
        if name in suites
        for rule in suites[name].table_type().gate_rules(value)
    ]


def compare(
    baseline: SessionResults,
    candidate: SessionResults,
    settings: Mapping[str, Any] | None = None,
    *,
    pairs: dict[str, str] | None = None,
    exclusive: bool = False,
    alpha: float = ALPHA,
    clauses: tuple[rule.Clause, ...] = rule.RULE,
) -> GateResult:
    """``settings``: each suite's gate settings by suite name, for its ``Table.compare``
    (``Pairing.settings``).
    """
    settings = dict(settings or {})
    paired, unpaired = pair_targets(baseline, candidate, pairs, exclusive=exclusive)
    result = GateResult(
        pairs=paired,
        unpaired=unpaired,
        rules=gate_rules(candidate.suites, settings),
        warnings=code_warnings(baseline, candidate),
        plugin=plugin_change(baseline, candidate),
    )
    # a history names its pairs: the file's other versions are no part of this step
    if not exclusive:
        result.findings += vanished(baseline, paired)
    before, after = check_matrix(baseline), check_matrix(candidate)
    for b, c in paired:
        label = f"{target_label(baseline.targets[b])} -> {target_label(candidate.targets[c])}"
        pairing = Pairing(b, c, label, alpha, settings, rule.fixed(before, after, b, c))
        result.pair_labels.append(pairing.label)
        run = rule.PairRun(
            baseline, candidate, pairing, before, after, rule.invalid(baseline, candidate, b, c)
        )
        unjudged = [
            f"{side} {target_label(results.targets[tid])}: {why}"
            for side, results, tid in (("baseline", baseline, b), ("candidate", candidate, c))
            if (why := not_judged(results, tid))
        ]
        if unjudged:  # nothing of it is an improvement or a pass; a death is still a death
            result.not_judged += unjudged
            result.findings += [f for f in rule.judge(run, clauses) if f.area == "server"]
            continue
        found = rule.judge(run, clauses)
        result.findings += found
        result.unmeasured += [f"{f.subject} on {label}" for f in found if f.detail == UNMEASURED]
        for name, table in candidate.tables.items():
            if isinstance(table, Measured) and (
                mode := table.timing_mode(baseline.tables.get(name, Table()), pairing)
            ):
                result.timing.append(f"{pairing.label}: {mode}")
    result.notes = [
        note
        for name, table in candidate.tables.items()
        if isinstance(table, Measured) and (note := table.verdict_note(result.findings))
    ]
    order = {k: i for i, k in enumerate(KINDS)}
    result.findings.sort(key=lambda f: order[f.kind])
    return result


def vanished(baseline: SessionResults, paired: list[tuple[str, str]]) -> list[Finding]:
    """A baseline target that judged something and pairs with no candidate target: an engine the
    candidate lost.
    """
    kept = {b for b, _ in paired}
    return [
        Finding(
            "missing",
            "target",
            "",
            target_label(record),
            "judged",
            "absent",
            "the baseline judged this target; the candidate has none that pairs with it",
        )
        for tid, record in baseline.targets.items()
        if tid not in kept and not not_judged(baseline, tid)
    ]

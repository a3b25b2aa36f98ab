"""Compare a candidate session with a baseline: what regressed, what improved, what is noise.

Targets are paired by id, else by framework when each side has exactly one
target of it (``vllm 0.31.0`` baseline v ``vllm 0.32.0`` candidate), or
explicitly. For each pair the gate compares the check outcomes, then hands the
pair to every suite's table (``Table.compare``: keyword status, SLO figures
under the rules, ...). Only regressions fail the gate; improvements, fixed
deviations, noise and other changes are listed so a reviewer sees them. A test
whose measurement was invalid on either side (``Table.unmeasured``) is compared
with nothing, and the gate cannot pass: its verdict is INCOMPLETE. Every step of a check's outcome and the
finding it makes: docs/gate-outcomes.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..results.model import SessionResults
from ..results.views import CheckCell, check_matrix, target_label
from ..suite import Finding, Pairing, Table
from .drift import DriftCalibration
from .rules import Rule
from .significance import ALPHA

BAD_OUTCOMES = frozenset({"failed", "error", "not_run"})  # a candidate that cannot start has regressed
PASSING = frozenset({"passed", "fixed"})  # "fixed": a declared deviation that passed
ABSENT = "not run"  # the side of a row whose results hold no test of it
IMPROVED = {
    "failed": "fixed",
    "error": "fixed",
    "not_run": "fixed",
    "xfail": "known deviation fixed",
    "unsupported": "now supported",
}
KINDS = ("regression", "improvement", "noise", "change")
NOT_GATED = "not gated"  # a timing move across sessions with no drift calibration: listed, not judged (slo.table)
UNMEASURED = "measurement invalid on one side: no verdict on the server"
__all__ = ["Finding", "GateResult", "compare", "pair_targets"]


@dataclass(slots=True)
class GateResult:
    pairs: list[tuple[str, str]] = field(default_factory=list)
    pair_labels: list[str] = field(default_factory=list)
    unpaired: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)  # "check (target)" whose measurement was invalid on either side
    timing: list[str] = field(default_factory=list)  # per pair, how its timing was judged: in turns, or across sessions

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    @property
    def regressions(self) -> list[Finding]:
        return self.of("regression")

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    @property
    def verdict(self) -> str:
        if not self.pairs:
            return "NO COMPARISON: no target of the candidate matches one of the baseline"
        n = len(self.regressions)
        missing = f"NOT MEASURED: {', '.join(self.unmeasured)} (an invalid measurement: not compared)"
        if n:
            return f"FAIL: {n} regression{'s' if n != 1 else ''}" + (f"; {missing}" if self.unmeasured else "")
        if self.unmeasured:
            return f"INCOMPLETE: no regressions in what was measured; {missing}"
        ungated = sum(1 for f in self.findings if f.area == "slo" and NOT_GATED in f.detail)
        moves = f"{ungated} timing move{'s' if ungated != 1 else ''}"
        if ungated:
            return f"PASS: no regressions ({moves} across sessions {NOT_GATED}: no drift calibration for them)"
        return "PASS: no regressions"

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "failed": self.failed, **asdict(self)}

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
        )


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
    pairs = [(b, c) for b, c in (explicit or {}).items() if b in baseline.targets and c in candidate.targets]
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


def _declaration(cell: CheckCell) -> str:
    """The expected-failure declaration an xfail cell ran under ("" where the results did not record it)."""
    return next((t.extra.get("xfail", "") for t in cell.tests if t.outcome == "xfail" and t.extra.get("xfail")), "")


def _reason(cell: CheckCell) -> str:
    return cell.message.splitlines()[0][:300] if cell.message else ""


def _step(old: CheckCell | None, new: CheckCell | None) -> tuple[str, str] | None:
    """``(kind, detail)`` of one row's step from baseline to candidate, None where nothing moved.

    Any step away from a pass is a regression (a check that stopped judging has stopped vouching for the
    server); any step into a pass is an improvement; a step into a failure from anything but a failure or a
    pass is a regression; the rest are changes. Two sides that agree (the same outcome, an xfail under the
    same declaration) say nothing."""
    o, n = old.outcome if old else ABSENT, new.outcome if new else ABSENT
    if old is not None and new is not None and o == n:
        before, after = _declaration(old), _declaration(new)
        if o == "xfail" and before and after and before != after:
            return "change", f"expected-failure declaration changed: {before!r} -> {after!r}"
        return None
    detail = _reason(new) if new is not None else "the candidate did not run it"
    if old is None:
        detail = "; ".join(filter(None, ("the baseline did not run it", detail)))
    if o in PASSING and n not in PASSING:
        return "regression", detail
    if n in PASSING and o not in PASSING:
        return "improvement", IMPROVED.get(o, f"now passes (was {o})")
    if n in BAD_OUTCOMES and o not in BAD_OUTCOMES and old is not None:
        return "regression", detail
    if o in BAD_OUTCOMES and n in ("unsupported", "xfail"):
        return "improvement", ""
    return "change", detail


def _compare_checks(
    before: dict[str, dict[str, CheckCell]],
    after: dict[str, dict[str, CheckCell]],
    pairing: Pairing,
    unmeasured: set[str],
) -> list[Finding]:
    """``unmeasured``: node ids whose measurement was invalid; a row that holds one is a change, never a regression."""
    found = []
    pair = pairing.label
    for row in dict.fromkeys([*before, *after]):
        old, new = before.get(row, {}).get(pairing.baseline), after.get(row, {}).get(pairing.candidate)
        o, n = old.outcome if old else ABSENT, new.outcome if new else ABSENT
        if any(t.nodeid in unmeasured for cell in (old, new) if cell is not None for t in cell.tests):
            found.append(Finding("change", "check", pair, row, o, n, UNMEASURED))
            continue
        step = _step(old, new)
        if step is not None:
            found.append(Finding(step[0], "check", pair, row, o, n, step[1], new.reproducer if new else ""))
    return found


def code_warnings(baseline: SessionResults, candidate: SessionResults) -> list[str]:
    """A difference between two runs is the server's only if both ran the same checks: say when they may not have."""
    b, c = baseline.environment.get("git", {}), candidate.environment.get("git", {})
    warnings = []
    if b.get("commit") and c.get("commit") and b["commit"] != c["commit"]:
        warnings.append(
            f"baseline and candidate ran different suite code ({b.get('describe') or b['commit'][:12]} v "
            f"{c.get('describe') or c['commit'][:12]}): a difference may come from the suites, not the server"
        )
    elif b.get("dirty") or c.get("dirty"):
        warnings.append(
            "a run came from a checkout with uncommitted changes: the suites may have differed between runs"
        )
    return warnings


def compare(
    baseline: SessionResults,
    candidate: SessionResults,
    rules: tuple[Rule, ...] = (),
    *,
    pairs: dict[str, str] | None = None,
    exclusive: bool = False,
    alpha: float = ALPHA,
    drift: DriftCalibration | None = None,
) -> GateResult:
    """``drift``: how far timing moves between sessions on this machine (``pytest-infer calibrate``); without it,
    timing measured in separate sessions is listed, not gated. Timing measured in turns is gated either way."""
    paired, unpaired = pair_targets(baseline, candidate, pairs, exclusive=exclusive)
    result = GateResult(
        pairs=paired,
        unpaired=unpaired,
        rules=[r.describe() for r in rules],
        warnings=code_warnings(baseline, candidate),
    )
    before, after = check_matrix(baseline), check_matrix(candidate)
    for b, c in paired:
        label = f"{target_label(baseline.targets[b])} -> {target_label(candidate.targets[c])}"
        pairing = Pairing(b, c, label, rules, alpha, drift)
        result.pair_labels.append(pairing.label)
        invalid = {n for t in baseline.tables.values() for n in t.unmeasured(b)} | {
            n for t in candidate.tables.values() for n in t.unmeasured(c)
        }
        checks = _compare_checks(before, after, pairing, invalid)
        result.findings += checks
        result.unmeasured += [f"{f.subject} on {pairing.label}" for f in checks if f.detail == UNMEASURED]
        for name, table in candidate.tables.items():
            result.findings += table.compare(baseline.tables.get(name, Table()), pairing)
            if mode := table.timing_mode(baseline.tables.get(name, Table()), pairing):
                result.timing.append(f"{pairing.label}: {mode}")
    order = {k: i for i, k in enumerate(KINDS)}
    result.findings.sort(key=lambda f: order[f.kind])
    return result

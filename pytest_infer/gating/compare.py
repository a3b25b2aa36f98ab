"""Compare a candidate session with a baseline: what regressed, what improved, what is noise.

Targets are paired by id, else by framework when each side has exactly one
target of it (``vllm 0.31.0`` baseline v ``vllm 0.32.0`` candidate), or
explicitly. For each pair the gate looks at three things of the one results
model: check outcomes, the structured-output keyword status, and the SLO
figures named by the rules. Only regressions fail the gate; improvements,
fixed deviations, noise and other changes are listed so a reviewer sees them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..results.model import SessionResults
from ..results.views import check_matrix, keyword_matrix, keyword_status, slo_points, target_label
from .rules import Rule, higher_is_better, rule_for
from .stats import ALPHA, significance

BAD_OUTCOMES = frozenset({"failed", "error", "not_run"})  # a candidate that cannot start has regressed
# Keyword classes that are wrong answers (docs: structured-output): worse than a clean refusal or a truncation.
WRONG_KEYWORD = frozenset({"invalid", "error"})
KINDS = ("regression", "improvement", "noise", "change")


@dataclass(slots=True)
class Finding:
    kind: str  # one of KINDS
    area: str  # "check", "keyword", "slo"
    pair: str  # "vllm 0.31.0 -> vllm 0.32.0"
    subject: str  # the check, keyword or "load point: metric"
    before: Any
    after: Any
    detail: str = ""
    reproducer: str = ""

    def line(self) -> str:
        text = f"[{self.area}] {self.subject}: {self.before} -> {self.after} ({self.pair})"
        return f"{text}; {self.detail}" if self.detail else text


@dataclass(slots=True)
class GateResult:
    pairs: list[tuple[str, str]] = field(default_factory=list)
    pair_labels: list[str] = field(default_factory=list)
    unpaired: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

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
        return f"FAIL: {n} regression{'s' if n != 1 else ''}" if n else "PASS: no regressions"

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
        )


def pair_targets(
    baseline: SessionResults, candidate: SessionResults, explicit: dict[str, str] | None = None
) -> tuple[list[tuple[str, str]], list[str]]:
    """``[(baseline_id, candidate_id)]`` and the ids left unpaired (with the side they are on)."""
    pairs = [(b, c) for b, c in (explicit or {}).items() if b in baseline.targets and c in candidate.targets]
    left_b = [t for t in baseline.targets if t not in {b for b, _ in pairs}]
    left_c = [t for t in candidate.targets if t not in {c for _, c in pairs}]
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


def _compare_checks(baseline: SessionResults, candidate: SessionResults, b: str, c: str, pair: str) -> list[Finding]:
    before, after = check_matrix(baseline), check_matrix(candidate)
    found = []
    for row in dict.fromkeys([*before, *after]):
        old, new = before.get(row, {}).get(b), after.get(row, {}).get(c)
        if old is None or new is None:
            if old is not None and old.outcome != "skipped":
                found.append(Finding("change", "check", pair, row, old.outcome, "not run"))
            elif new is not None and new.outcome != "skipped":
                found.append(Finding("change", "check", pair, row, "not run", new.outcome))
            continue
        o, n = old.outcome, new.outcome
        if o == n or "skipped" in (o, n):
            continue
        if o == "passed" and (n in BAD_OUTCOMES or n == "unsupported"):
            kind, detail = "regression", new.message.splitlines()[0][:300] if new.message else ""
        elif o in BAD_OUTCOMES and n in ("passed", "unsupported", "xfail"):
            kind, detail = "improvement", "fixed" if n == "passed" else ""
        elif o == "xfail" and n in ("fixed", "passed"):
            kind, detail = "improvement", "known deviation fixed"
        elif o == "unsupported" and n == "passed":
            kind, detail = "improvement", "now supported"
        elif n in BAD_OUTCOMES and o not in BAD_OUTCOMES:
            kind, detail = "regression", new.message.splitlines()[0][:300] if new.message else ""
        else:
            kind, detail = "change", ""
        found.append(Finding(kind, "check", pair, row, o, n, detail, new.reproducer))
    return found


def _compare_keywords(baseline: SessionResults, candidate: SessionResults, b: str, c: str, pair: str) -> list[Finding]:
    before, after = keyword_matrix(baseline), keyword_matrix(candidate)
    found = []
    for keyword in sorted(set(before) | set(after)):
        old_counts, new_counts = before.get(keyword, {}).get(b), after.get(keyword, {}).get(c)
        if old_counts is None or new_counts is None:
            continue
        o, n = keyword_status(old_counts), keyword_status(new_counts)
        if o == n:
            continue
        detail = f"{old_counts} -> {new_counts}"
        if (n in WRONG_KEYWORD and o not in WRONG_KEYWORD) or (o == "valid" and n == "rejected"):
            kind = "regression"  # new silent wrong answers or errors, or support dropped
        elif o in WRONG_KEYWORD and n not in WRONG_KEYWORD or (o == "rejected" and n == "valid"):
            kind = "improvement"
        else:
            kind = "change"
        found.append(Finding(kind, "keyword", pair, keyword, o, n, detail))
    return found


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _compare_slo(
    baseline: SessionResults, candidate: SessionResults, b: str, c: str, pair: str, rules: tuple[Rule, ...], alpha: float
) -> list[Finding]:
    before = {p.key: p for p in slo_points(baseline) if p.target == b}
    after = {p.key: p for p in slo_points(candidate) if p.target == c}
    found = []
    for key in [k for k in before if k in after]:
        old, new = before[key], after[key]
        if "invalid" in (old.verdict, new.verdict):  # a saturated client measured itself: nothing to compare
            found.append(Finding("change", "slo", pair, key, old.verdict, new.verdict, "measurement invalid: figures not compared"))
            continue
        for metric in [m for m in old.metrics if m in new.metrics]:
            rule = rule_for(rules, metric)
            if rule is None:
                continue
            x, y = old.metrics[metric], new.metrics[metric]
            worse = rule.worsening(metric, x, y)
            unit = "%" if rule.relative else ""
            subject = f"{key}: {metric}"
            if worse > rule.threshold:
                sig = significance(metric, old.runs.get(metric, []), new.runs.get(metric, []), old.samples, new.samples,
                                   higher_is_better=higher_is_better(metric))
                p = f", p={sig.p_value:.3g}" if sig.p_value is not None else ""
                detail = f"{worse:+.1f}{unit} worse, limit {rule.describe()}; {sig.basis}{p}"
                kind = "regression" if sig.significant(alpha) else "noise"
                if kind == "noise":
                    detail += f" >= {alpha}: not significant"
                found.append(Finding(kind, "slo", pair, subject, _fmt(x), _fmt(y), detail))
            elif -worse > rule.threshold:
                found.append(Finding("improvement", "slo", pair, subject, _fmt(x), _fmt(y), f"{-worse:.1f}{unit} better"))
    return found


def code_warnings(baseline: SessionResults, candidate: SessionResults) -> list[str]:
    """A difference between two runs is the server's only if both ran the same checks: say when they may not have."""
    b, c = baseline.environment.get("git", {}), candidate.environment.get("git", {})
    warnings = []
    if b.get("commit") and c.get("commit") and b["commit"] != c["commit"]:
        warnings.append(f"baseline and candidate ran different suite code ({b.get('describe') or b['commit'][:12]} v "
                        f"{c.get('describe') or c['commit'][:12]}): a difference may come from the suites, not the server")
    elif b.get("dirty") or c.get("dirty"):
        warnings.append("a run came from a checkout with uncommitted changes: the suites may have differed between runs")
    return warnings


def compare(
    baseline: SessionResults,
    candidate: SessionResults,
    rules: tuple[Rule, ...] = (),
    *,
    pairs: dict[str, str] | None = None,
    alpha: float = ALPHA,
) -> GateResult:
    paired, unpaired = pair_targets(baseline, candidate, pairs)
    result = GateResult(pairs=paired, unpaired=unpaired, rules=[r.describe() for r in rules], warnings=code_warnings(baseline, candidate))
    for b, c in paired:
        pair = f"{target_label(baseline.targets[b])} -> {target_label(candidate.targets[c])}"
        result.pair_labels.append(pair)
        result.findings += _compare_checks(baseline, candidate, b, c, pair)
        result.findings += _compare_keywords(baseline, candidate, b, c, pair)
        result.findings += _compare_slo(baseline, candidate, b, c, pair, rules, alpha)
    order = {k: i for i, k in enumerate(KINDS)}
    result.findings.sort(key=lambda f: order[f.kind])
    return result

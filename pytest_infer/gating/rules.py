"""``--infer-fail-on=ttft_p99:10%,output_tps:5%`` parsed into rule objects at parse time.

A rule names a metric (an exact SLO figure name, its name without a unit
suffix such as ``_ms``, or an fnmatch pattern such as ``ttft_*``) and the
change it tolerates in the bad direction: relative (``10%``) or absolute in the
metric's own unit (``25`` or ``25ms`` for a ``*_ms`` figure). Which direction
is bad follows from the name: throughput-like figures must not fall, all
others (latencies, memory) must not rise.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from ..outcomes import InferError

# Short names a rule may use for the figures the SLO suite records (pytest_infer.metrics).
ALIASES = {"output_tps": "output_tokens_per_s", "tps": "output_tokens_per_s", "rps": "requests_per_s", "goodput": "goodput_rps"}
HIGHER_IS_BETTER = ("tps", "throughput", "tokens_per_s", "goodput", "attainment", "rps", "requests_per_s", "qps")
_THRESHOLD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%|[a-z]*)\s*$", re.IGNORECASE)


class RuleError(InferError, ValueError):
    """A ``--infer-fail-on`` entry that does not parse."""


def higher_is_better(metric: str) -> bool:
    name = metric.lower()
    return any(part in name for part in HIGHER_IS_BETTER)


@dataclass(frozen=True, slots=True)
class Rule:
    metric: str
    threshold: float
    relative: bool = True
    text: str = ""

    def matches(self, metric: str) -> bool:
        for pattern in (self.metric, ALIASES.get(self.metric)):
            if pattern is None:
                continue
            if fnmatch.fnmatchcase(metric, pattern):
                return True
            stem, _, suffix = metric.rpartition("_")
            if stem and suffix.isalpha() and len(suffix) <= 3 and fnmatch.fnmatchcase(stem, pattern):
                return True
        return False

    def worsening(self, metric: str, before: float, after: float) -> float:
        """How much worse ``after`` is than ``before`` (positive: worse), in this rule's terms."""
        delta = (before - after) if higher_is_better(metric) else (after - before)
        if not self.relative:
            return delta
        if before == 0:
            return 0.0 if delta <= 0 else float("inf")
        return delta / abs(before) * 100.0

    def exceeded(self, metric: str, before: float, after: float) -> bool:
        return self.worsening(metric, before, after) > self.threshold

    def describe(self) -> str:
        return self.text or f"{self.metric}:{self.threshold:g}{'%' if self.relative else ''}"


def parse_rule(text: str) -> Rule:
    metric, sep, threshold = text.strip().partition(":")
    if not sep or not metric.strip():
        raise RuleError(f"{text!r} is not METRIC:THRESHOLD (e.g. ttft_p99:10% or e2e_p99_ms:250)")
    match = _THRESHOLD.match(threshold)
    if not match:
        raise RuleError(f"{text!r}: threshold {threshold!r} is not a non-negative number, optionally with % (e.g. 10%)")
    number, unit = match.groups()
    relative = unit == "%"
    if unit and not relative and not metric.lower().endswith(f"_{unit.lower()}"):
        raise RuleError(f"{text!r}: an absolute threshold in {unit!r} needs a metric named *_{unit} (or use a percentage)")
    return Rule(metric.strip(), float(number), relative, text.strip())


def parse_rules(text: str) -> tuple[Rule, ...]:
    entries = [e for e in text.split(",") if e.strip()]
    if not entries:
        raise RuleError("no rules given (e.g. ttft_p99:10%,output_tps:5%)")
    rules = tuple(parse_rule(e) for e in entries)
    seen = [r.metric for r in rules]
    dupes = sorted({m for m in seen if seen.count(m) > 1})
    if dupes:
        raise RuleError(f"metric {', '.join(dupes)} is given more than one threshold")
    return rules


def rule_for(rules: tuple[Rule, ...], metric: str) -> Rule | None:
    """The first rule that names ``metric`` (rules are checked in the order given)."""
    return next((r for r in rules if r.matches(metric)), None)

"""``--infer-fail-on=ttft_p99:10%,output_tps:5%`` parsed into rule objects at parse time.

A rule names a figure (any spelling the metric catalogue resolves: ``ttft_p99``,
``ttft_p99_ms``, ``output_tps`` for ``output_tokens_per_s``; or an fnmatch
pattern such as ``ttft_*``) and the change it tolerates in the bad direction:
relative (``10%``) or absolute in the figure's own unit (``25`` or ``25ms`` for
a ``*_ms`` figure). The catalogue says which direction is bad: throughput-like
figures must not fall, all others (latencies, memory) must not rise.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from ..outcomes import InferError
from .metrics.catalogue import higher_is_better, resolve, split_unit

__all__ = ["Rule", "RuleError", "higher_is_better", "parse_rule", "parse_rules", "rule_for"]

_THRESHOLD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%|[a-z]*)\s*$", re.IGNORECASE)
_PATTERN = re.compile(r"[*?\[]")


class RuleError(InferError, ValueError):
    """A ``--infer-fail-on`` entry that does not parse."""


@dataclass(frozen=True, slots=True)
class Rule:
    metric: str
    threshold: float
    relative: bool = True
    text: str = ""

    def matches(self, metric: str) -> bool:
        """Does this rule gate the figure stored as ``metric``?

        A name matches every spelling of the same figure (an absolute rule only in the same unit); a
        pattern matches the stored name, the catalogue's name, or either without its unit, but
        never a figure with no direction (a request count, the window, a pid). A name the catalogue
        does not know matches itself, with or without a unit suffix.
        """
        seen = resolve(metric)
        if _PATTERN.search(self.metric):
            if seen is not None and seen.better is None:
                return False
            names = {metric, split_unit(metric)[0], *((seen.name, split_unit(seen.name)[0]) if seen else ())}
            return any(fnmatch.fnmatchcase(name, self.metric) for name in names)
        named = resolve(self.metric)
        if named is not None and seen is not None:
            return named.same(seen) and (self.relative or named.unit == seen.unit)
        return self.metric in (metric, split_unit(metric)[0])

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
        raise RuleError(
            f"{text!r}: an absolute threshold in {unit!r} needs a metric named *_{unit} (or use a percentage)"
        )
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

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
from dataclasses import dataclass, field

from ..outcomes import InferError
from .metrics.catalogue import Figure, higher_is_better, parse

__all__ = [
    "Rule",
    "RuleError",
    "higher_is_better",
    "parse_rule",
    "parse_rules",
    "rule_for",
    "worsening",
]

_THRESHOLD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%|[a-z]*)\s*$", re.IGNORECASE)
_PATTERN = re.compile(r"[*?\[]")


class RuleError(InferError, ValueError):
    """A ``--infer-fail-on`` entry that does not parse."""


def worsening(figure: Figure, before: float, after: float, *, relative: bool = True) -> float:
    """How much worse ``after`` is than ``before`` (positive: worse): in percent of ``before``, or
    in the figure's unit."""
    delta = (before - after) if figure.higher_is_better else (after - before)
    if not relative:
        return delta
    if before == 0:
        return 0.0 if delta <= 0 else float("inf")
    return delta / abs(before) * 100.0


@dataclass(frozen=True, slots=True)
class Rule:
    metric: str  # the figure, or an fnmatch pattern of figure names, as the rule's text names it
    threshold: float
    relative: bool = True
    text: str = ""
    # the figure it names; None: a pattern
    figure: Figure | None = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "figure", None if _PATTERN.search(self.metric) else parse(self.metric)
        )

    def matches(self, figure: Figure) -> bool:
        """Does this rule gate ``figure``?

        A name matches every spelling of the same figure (an absolute rule only in the same unit); a
        pattern matches the stored name, the catalogue's name, or either without its unit, but
        never a figure with no direction (a request count, the window, a pid). A name the catalogue
        does not know matches itself, with or without a unit suffix.
        """
        if self.figure is None:
            if figure.known and figure.better is None:
                return False
            return any(fnmatch.fnmatchcase(name, self.metric) for name in figure.names())
        return self.figure.same(figure) and (self.relative or self.figure.unit == figure.unit)

    def worsening(self, figure: Figure, before: float, after: float) -> float:
        """How much worse ``after`` is than ``before`` (positive: worse), in this rule's terms."""
        return worsening(figure, before, after, relative=self.relative)

    def exceeded(self, figure: Figure, before: float, after: float) -> bool:
        return self.worsening(figure, before, after) > self.threshold

    def describe(self) -> str:
        return self.text or f"{self.metric}:{self.threshold:g}{'%' if self.relative else ''}"


def parse_rule(text: str) -> Rule:
    metric, sep, threshold = text.strip().partition(":")
    if not sep or not metric.strip():
        raise RuleError(f"{text!r} is not METRIC:THRESHOLD (e.g. ttft_p99:10% or e2e_p99_ms:250)")
    match = _THRESHOLD.match(threshold)
    if not match:
        raise RuleError(
            f"{text!r}: threshold {threshold!r} is not a non-negative number, optionally with % "
            "(e.g. 10%)"
        )
    number, unit = match.groups()
    relative = unit == "%"
    if unit and not relative and not metric.lower().endswith(f"_{unit.lower()}"):
        raise RuleError(
            f"{text!r}: an absolute threshold in {unit!r} needs a metric named *_{unit} (or use a "
            "percentage)"
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


def rule_for(rules: tuple[Rule, ...], figure: Figure) -> Rule | None:
    """The first rule that names ``figure`` (rules are checked in the order given)."""
    return next((r for r in rules if r.matches(figure)), None)

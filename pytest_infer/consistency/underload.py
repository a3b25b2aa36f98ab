"""Answers under load: does what a server does right for a request alone still hold for that request
inside a busy batch?

A batching server compiles one grammar per request and must mask each request's tokens with its
own; its tool parser must read each request's own text. Two sets of cases are sent alone twice (the
control: a case answered right both times is what this server does with it), then all at once while
other requests are in flight:

- the structured corpus's schemas (``pytest_infer.structured.corpus``), each asked greedily with its
  token budget, judged by the structured suite's own classifier;
- the tool parser's scripted outputs (``conformance.checks.parsers.scripted_tool_requests``): one
  call, two, nested and escaped arguments, plain text with tools offered, each forced through the
  engine's constrained decoding and judged by whether the parser gives back exactly the script.

A case right alone twice and not in the batch fails, naming it and what came back; the share right
alone and in the batch is reported either way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..client.http import InferClient
from ..conformance.checks.parsers import parsed, parsed_as_scripted, scripted_tool_requests
from ..conformance.context import CheckContext
from ..outcomes import Outcome
from ..structured.classify import AnswerClass
from ..structured.corpus import CORPUS
from ..structured.runner import GREEDY, RESPONSE_FORMAT, StructuredRunner
from ..structured.strategies import token_budget
from .kit import at_once, filler, overlaps, send
from .mix import Verdict

HEAD_START = 0.05  # seconds the others go first, so they are running when the cases arrive


@dataclass(slots=True)
class Timed:
    """One case's answer: whether it was right, what the judge said, what came back, how to send it
    again, and when it was open."""

    right: bool
    said: str
    output: str
    curl: str
    started: float
    ended: float


@dataclass(slots=True)
class UnderLoad:
    """Each case's answers alone (twice) and in the batch, in the cases' order."""

    names: list[str]
    in_flight: int
    alone: list[Timed] = field(default_factory=list)
    again: list[Timed] = field(default_factory=list)
    batched: list[Timed] = field(default_factory=list)
    filler_spans: list[tuple[float, float]] = field(default_factory=list)

    def stable(self) -> list[int]:
        """The cases right alone both times: those the batch is held to."""
        return [i for i, (a, b) in enumerate(zip(self.alone, self.again)) if a.right and b.right]

    def overlapped(self) -> int:
        """Batched requests that ran while another request was in flight."""
        spans = [(t.started, t.ended) for t in self.batched] + self.filler_spans
        return sum(
            overlaps(spans[i], spans[:i] + spans[i + 1 :]) > 0 for i in range(len(self.batched))
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": len(self.names),
            "in_flight": self.in_flight,
            "right_alone": sum(t.right for t in self.alone),
            "right_in_batch": sum(t.right for t in self.batched),
            "held_to": len(self.stable()),
            "overlapped": self.overlapped(),
            "broken": [self.names[i] for i in self.stable() if not self.batched[i].right],
        }


def _span(client: InferClient, body: dict) -> tuple[float, float]:
    answer = send(client, body)
    return answer.started, answer.ended


def under_load(
    client: InferClient,
    names: list[str],
    ask: Callable[[int], Timed],
    filler_tokens: int,
    in_flight: int,
    timeout: float,
) -> UnderLoad:
    """``ask(i)`` for every case alone twice, then for all of them at once beside ``in_flight``
    others of ``filler_tokens`` each, long enough to still be running beside the cases."""
    out = UnderLoad(names, in_flight)
    for into in (out.alone, out.again):
        into += [ask(i) for i in range(len(names))]
    others = [filler(client.model, i, filler_tokens) for i in range(in_flight)]
    results: list[Any] = at_once(  # the fillers' spans, then the cases' answers
        [partial(_span, client, body) for body in others]
        + [partial(ask, i) for i in range(len(names))],
        [0.0] * len(others) + [HEAD_START if others else 0.0] * len(names),
        timeout,
    )
    out.filler_spans, out.batched = results[: len(others)], results[len(others) :]
    return out


def structured_under_load(client: InferClient, in_flight: int, timeout: float = 60.0) -> UnderLoad:
    """The corpus's schemas, greedily; the others ask four times the largest schema budget."""
    runner = StructuredRunner(client, sampling=GREEDY, timeout=timeout)
    cases = [
        (case.schema, runner.body(case.schema, RESPONSE_FORMAT, token_budget(case.instance)))
        for case in CORPUS.values()
    ]

    def ask(i: int) -> Timed:
        schema, body = cases[i]
        started = time.monotonic()
        # a runner of its own: its requests are counted apart, and the batch's run side by side
        attempt = runner.separate().send(schema, body)
        verdict = attempt.verdict
        return Timed(
            verdict.outcome is AnswerClass.VALID,
            f"{verdict.outcome.value}: {verdict.message[:160]}",
            attempt.output or "",
            attempt.curl,
            started,
            time.monotonic(),
        )

    budget = 4 * max(body["max_tokens"] for _, body in cases)
    return under_load(client, list(CORPUS), ask, budget, in_flight, timeout)


def tools_under_load(
    ctx: CheckContext, client: InferClient, in_flight: int, timeout: float = 60.0
) -> UnderLoad:
    """The tool parser's scripted outputs; ``NotExercised`` where the server's parser cannot be
    driven (``scripted_tool_requests``)."""
    cases = list(scripted_tool_requests(ctx).items())

    def ask(i: int) -> Timed:
        script, body = cases[i][1]
        answer = send(client, body)
        calls, content = parsed(answer.data)
        wrote = f"calls {json.dumps(calls, ensure_ascii=False)[:200]}, content {content[:80]!r}"
        right = answer.status == 200 and parsed_as_scripted(script, answer.data)
        return Timed(
            right,
            wrote if answer.status == 200 else f"HTTP {answer.status}: {answer.problem}",
            wrote,
            answer.reproducer,
            answer.started,
            answer.ended,
        )

    budget = 4 * max(body["max_tokens"] for _, (_, body) in cases)
    return under_load(client, [name for name, _ in cases], ask, budget, in_flight, timeout)


@dataclass(frozen=True, slots=True)
class Nouns:
    """How a verdict names its cases: ``"schemas"``, ``"corpus schemas"``, ``"valid"``."""

    plural: str
    what: str
    right: str


STRUCTURED = Nouns("schemas", "corpus schemas", "valid")
TOOLS = Nouns("scripts", "scripted tool outputs", "parsed as scripted")


def judge_under_load(u: UnderLoad, nouns: Nouns = STRUCTURED) -> Verdict:
    figures = u.to_json()
    n = len(u.names)
    shares = (
        f"{nouns.right} alone {figures['right_alone']} of {n}, in the batch "
        f"{figures['right_in_batch']} of {n}, with {u.in_flight} others in flight"
    )
    stable = u.stable()
    if not stable:
        return Verdict(
            Outcome.NOT_EXERCISED,
            f"no {nouns.what[:-1]} was {nouns.right} alone twice ({shares}): the server gets none "
            f"of them right greedily, so none can be held to it under load; first alone: "
            f"{u.alone[0].said if u.alone else 'none sent'}",
        )
    broken = [i for i in stable if not u.batched[i].right]
    if broken:
        details = "; ".join(
            f"{u.names[i]}: alone {u.alone[i].output!r:.80}, in the batch {u.batched[i].said}"
            for i in broken
        )
        return Verdict(
            Outcome.FAILED,
            f"{len(broken)} of {len(stable)} {nouns.plural} {nouns.right} alone were not in a "
            f"batch ({shares}): {details}\nreproduce (alone, then with {u.in_flight} others in "
            f"flight): {u.alone[broken[0]].curl}",
        )
    if not figures["overlapped"]:
        return Verdict(
            Outcome.NOT_EXERCISED,
            f"none of the {n} {nouns.plural} overlapped another request in flight: the server "
            "answered them one after another, so no batch was judged",
        )
    return Verdict(
        Outcome.PASSED,
        f"{len(stable)} {nouns.what} {nouns.right} alone (twice, greedy) stayed so in a batch "
        f"({shares}; {figures['overlapped']} overlapped another request)",
    )

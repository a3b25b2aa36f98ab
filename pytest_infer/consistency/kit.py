"""The consistency suite's machinery: answers sent alone and together, and how two answers to one
request compare.

A server that batches must give each request the answer it would have got alone: greedy output may
only move where the model's own top choices were nearly tied (vLLM's ``check_logprobs_close``: the
token one answer chose is among the other's top-k at the first position where they part), and every
request's own parameters (seed, stop strings, ``max_tokens``, ``logit_bias``, logprobs, ``n``, a
JSON schema, a tool choice) must reach that request and no other.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import httpx

from ..client.answers import CHAT, completion_problem
from ..client.http import InferClient

T = TypeVar("T")

# top_logprobs asked for: a divergence whose token is among these is a near-tie, not a wrong kernel
TOP_K = 5
# Fixed prompts of the alone-versus-batch check: short, ordinary, different from each other.
PROMPTS = (
    "Once upon a time, in a small village,",
    "Explain in one paragraph why the sky is blue.",
    "List three uses of a paperclip.",
    "Write a haiku about the sea.",
)
FILLER_PROMPT = "Tell me a long story about a dragon who learns to cook, number {i}."


def greedy(model: str, prompt: str, max_tokens: int, **extra: Any) -> dict:
    """A chat request at temperature 0 asking for ``TOP_K`` logprobs per token, unless ``extra``
    says otherwise.
    """
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": TOP_K,
        **extra,
    }


def filler(model: str, i: int, max_tokens: int) -> dict:
    """One of the other requests kept in flight: longer than the measured ones, so it is still
    running beside them.
    """
    return {
        "model": model,
        "messages": [{"role": "user", "content": FILLER_PROMPT.format(i=i)}],
        "max_tokens": max_tokens,
        "temperature": 0,
    }


@dataclass
class Answer:
    """One request's answer as the client saw it: the body sent, HTTP status, JSON (None: not JSON),
    when it was open, why it is not a correct chat completion (None: it is), and a curl line that
    sends it again."""

    body: dict
    status: int
    data: Any
    problem: str | None
    started: float
    ended: float
    reproducer: str

    def choice(self, i: int = 0) -> dict:
        choices = self.data.get("choices") if isinstance(self.data, dict) else None
        return (
            choices[i]
            if isinstance(choices, list) and len(choices) > i and isinstance(choices[i], dict)
            else {}
        )

    @property
    def choices(self) -> list:
        choices = self.data.get("choices") if isinstance(self.data, dict) else None
        return choices if isinstance(choices, list) else []

    def text(self, i: int = 0) -> str:
        content = (self.choice(i).get("message") or {}).get("content")
        return content if isinstance(content, str) else ""

    def finish_reason(self, i: int = 0) -> Any:
        return self.choice(i).get("finish_reason")

    def logprobs(self, i: int = 0) -> list[dict] | None:
        """``choices[i].logprobs.content``: one entry per token; None where the answer carries
        none.
        """
        lp = self.choice(i).get("logprobs")
        content = lp.get("content") if isinstance(lp, dict) else None
        return [e for e in content if isinstance(e, dict)] if isinstance(content, list) else None

    def tokens(self) -> list[str] | None:
        entries = self.logprobs()
        return None if entries is None else [str(e.get("token")) for e in entries]

    def top(self, position: int) -> list[str] | None:
        """The tokens of ``top_logprobs`` at ``position``; None where the answer has none there."""
        entries = self.logprobs()
        if entries is None or position >= len(entries):
            return None
        top = entries[position].get("top_logprobs")
        return (
            [str(t.get("token")) for t in top if isinstance(t, dict)]
            if isinstance(top, list) and top
            else None
        )

    def completion_tokens(self) -> Any:
        usage = self.data.get("usage") if isinstance(self.data, dict) else None
        return usage.get("completion_tokens") if isinstance(usage, dict) else None

    @property
    def span(self) -> tuple[float, float]:
        return self.started, self.ended

    def overlap(self, others: Sequence[Answer]) -> int:
        """How many of ``others`` were open at some moment while this one was."""
        return overlaps(self.span, [o.span for o in others if o is not self])


def overlaps(span: tuple[float, float], others: Sequence[tuple[float, float]]) -> int:
    """How many of the ``others`` (start, end) were open at some moment while ``span`` was, on the
    client's clock: whether requests overlapped on the server is what a batch test must show."""
    started, ended = span
    return sum(1 for s, e in others if s < ended and e > started)


def send(client: InferClient, body: dict) -> Answer:
    """POST ``body`` to the chat route; the answer judged as a correct chat completion or not, never
    raised.
    """
    started = time.monotonic()
    reproducer = client.curl("POST", CHAT, body)
    try:
        resp = client.post(CHAT, json=body)
        status, text = resp.status_code, resp.text
    except httpx.HTTPError as exc:
        return Answer(
            body,
            0,
            None,
            f"no answer: {type(exc).__name__}: {exc}",
            started,
            time.monotonic(),
            reproducer,
        )
    ended = time.monotonic()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    return Answer(
        body, status, data, completion_problem(CHAT, status, text), started, ended, reproducer
    )


def at_once(
    calls: Sequence[Callable[[], T]], delays: Sequence[float], timeout: float | None
) -> list[T]:
    """Each call on its own thread, all released together, each after its delay; their results in
    order."""
    if not calls:
        return []
    gate = threading.Barrier(len(calls))

    def one(call: Callable[[], T], delay: float) -> T:
        gate.wait(timeout=timeout)
        time.sleep(delay)
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(one, call, delay) for call, delay in zip(calls, delays)]
        return [f.result() for f in futures]


def send_together(
    client: InferClient,
    bodies: Sequence[dict],
    fillers: Sequence[dict] = (),
    head_start: float = 0.05,
) -> list[Answer]:
    """Every body at once, the fillers ``head_start`` seconds first (so they are running when the
    others arrive); the bodies' answers in order, then the fillers'."""
    delay = head_start if fillers else 0.0
    answers = at_once(
        [partial(send, client, body) for body in [*fillers, *bodies]],
        [0.0] * len(fillers) + [delay] * len(bodies),
        client.total_timeout,
    )
    return answers[len(fillers) :] + answers[: len(fillers)]


@dataclass(frozen=True)
class Divergence:
    """How a batched answer compares with the same request's answer alone.

    ``kind``: ``identical``; ``near-tie`` (the alone token is among the batched answer's top-k where
    they part); ``outside-top-k`` (it is not: a different computation, not a near-tie);
    ``unclassified`` (they part where the batched answer carries no logprobs to judge by).
    ``position``: the first token (or, without tokens, character) where they part; ``unit`` says
    which."""

    kind: str
    position: int | None = None
    unit: str = "token"
    alone: str = ""
    batched: str = ""
    batched_top: tuple[str, ...] = ()
    batched_in_alone_top: bool | None = None

    def describe(self) -> str:
        if self.kind == "identical":
            return "identical"
        where = f"{self.unit} {self.position}: alone {self.alone!r}, in the batch {self.batched!r}"
        if self.kind == "unclassified":
            return (
                f"differs at {where}; no top-k logprobs there to tell a near-tie from a wrong "
                "answer"
            )
        top = ", ".join(repr(t) for t in self.batched_top)
        inside = "among" if self.kind == "near-tie" else "not among"
        return (
            f"differs at {where}; the alone token is {inside} the batched answer's "
            f"top-{len(self.batched_top)} [{top}]"
        )


def compare(alone: Answer, batched: Answer) -> Divergence:
    """The first place ``batched`` parts from ``alone``, and whether that is a near-tie (vLLM's
    check_logprobs_close: the token the alone answer chose there is among the batched answer's
    top-k)."""
    a_tokens, b_tokens = alone.tokens(), batched.tokens()
    if alone.text() == batched.text() and (
        a_tokens is None or b_tokens is None or a_tokens == b_tokens
    ):
        return Divergence("identical")
    if a_tokens is None or b_tokens is None:
        position = next(
            (i for i, (x, y) in enumerate(zip(alone.text(), batched.text())) if x != y),
            min(len(alone.text()), len(batched.text())),
        )
        return Divergence(
            "unclassified",
            position,
            "character",
            alone.text()[position : position + 1],
            batched.text()[position : position + 1],
        )
    position = next(
        (i for i, (x, y) in enumerate(zip(a_tokens, b_tokens)) if x != y),
        min(len(a_tokens), len(b_tokens)),
    )
    alone_token = a_tokens[position] if position < len(a_tokens) else "(end)"
    batched_token = b_tokens[position] if position < len(b_tokens) else "(end)"
    top = batched.top(position)
    if top is None or position >= len(a_tokens):
        return Divergence("unclassified", position, "token", alone_token, batched_token)
    other_top = alone.top(position)
    back = None if other_top is None or position >= len(b_tokens) else batched_token in other_top
    kind = "near-tie" if alone_token in top else "outside-top-k"
    return Divergence(kind, position, "token", alone_token, batched_token, tuple(top), back)


@dataclass
class Tally:
    """The alone-versus-batch figures of one target, as its row of the suite's table stores them."""

    prompts: int = 0
    in_flight: int = 0
    overlapped: int = 0
    identical: int = 0
    near_ties: int = 0
    outside: int = 0
    unclassified: int = 0
    first_divergence: list[int] = field(default_factory=list)

    def count(self, divergence: Divergence) -> None:
        self.prompts += 1
        if divergence.kind == "identical":
            self.identical += 1
            return
        if divergence.position is not None:
            self.first_divergence.append(divergence.position)
        setattr(self, _FIELD[divergence.kind], getattr(self, _FIELD[divergence.kind]) + 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "prompts": self.prompts,
            "in_flight": self.in_flight,
            "overlapped": self.overlapped,
            "identical": self.identical,
            "near_ties": self.near_ties,
            "outside_top_k": self.outside,
            "unclassified": self.unclassified,
            "first_divergence": sorted(self.first_divergence),
        }


_FIELD = {"near-tie": "near_ties", "outside-top-k": "outside", "unclassified": "unclassified"}


def tokenize(client: InferClient, text: str) -> list[int] | None:
    """The model's token ids of ``text`` from the server's tokenize route (vLLM and SGLang:
    ``{prompt}``, llama.cpp: ``{content}``), without special tokens; None where the server has no
    such route."""
    for body in (
        {"model": client.model, "prompt": text, "add_special_tokens": False},
        {"content": text, "add_special": False},
    ):
        try:
            resp = client.post("/tokenize", json=body)
        except httpx.HTTPError:
            return None
        if resp.status_code == 404:
            return None
        try:
            tokens = resp.json().get("tokens")
        except (ValueError, AttributeError):
            continue
        if isinstance(tokens, list) and tokens and all(isinstance(t, int) for t in tokens):
            return tokens
    return None

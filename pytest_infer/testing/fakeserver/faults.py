"""Named deviations: servers wrong in one known way, each a small factory of a ``Deviation``
entered in ``DEVIATIONS`` under its name. ``FAULTS`` are those a process of its own can be
started with (``--fault NAME``), for lifecycle tests that need a server that can really die.

A new way to be wrong is a new factory here with ``@registered("its-name")`` (``fault=True``: a
``--fault`` too, for one that takes no argument); the handler that serves the APIs stays as it
is. tests/core/test_fake_server_layout.py holds each to a docstring and its name."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from .common import Deviation, Event, error_body, logprob_entry, top_logprobs

DEVIATIONS: dict[str, Callable[..., Deviation]] = {}
# The deviations a process of its own starts with (``--fault NAME``): each takes no argument.
FAULTS: dict[str, Callable[[], Deviation]] = {"none": Deviation}
Factory = TypeVar("Factory", bound=Callable[..., Deviation])


def registered(name: str, fault: bool = False) -> Callable[[Factory], Factory]:
    """Enters a factory in ``DEVIATIONS`` under ``name``, once; ``fault``: in ``FAULTS`` too."""

    def register(factory: Factory) -> Factory:
        if name in DEVIATIONS:
            raise ValueError(f"a deviation is already registered as {name!r}")
        DEVIATIONS[name] = factory
        if fault:
            FAULTS[name] = factory
        return factory

    return register


def _ends_process(request: Callable[[str, dict], bool]) -> Deviation:
    """A server whose process ends (exit 17) on the requests ``request`` picks."""

    def hook(path: str, body: dict) -> None:
        if request(path, body):
            os._exit(17)
        return None

    return Deviation(request=hook)


@registered("die-after")
def die_after(n: int) -> Deviation:
    """The process ends on its chat request number ``n + 1``: a server that dies mid-session."""
    seen = {"n": 0}

    def counted(path: str, body: dict) -> bool:
        if not path.startswith("/v1/chat"):
            return False
        seen["n"] += 1
        return seen["n"] > n

    return _ends_process(counted)


# die-after-3: launched vLLM's readiness probe's generation, its first structured request, and
# one test's.
FAULTS.update({f"die-after-{n}": partial(die_after, n) for n in (0, 1, 3)})


DIE_MARKER = "pytest-infer: end this process"


@registered("die-on-marker", fault=True)
def die_on_marker() -> Deviation:
    """A chat request whose messages carry ``DIE_MARKER`` ends the process: a crash a test
    provokes when it chooses."""

    def marked(path: str, body: dict) -> bool:
        return path.startswith("/v1/chat") and DIE_MARKER in json.dumps(body.get("messages"))

    return _ends_process(marked)


@registered("die-on-unknown-token-ids", fault=True)
def die_on_unknown_token_ids() -> Deviation:
    """Like SGLang 0.5.23 on a completions prompt of token ids outside the vocabulary: the
    process ends."""

    def unknown(path: str, body: dict) -> bool:
        prompt = body.get("prompt") if path == "/v1/completions" else None
        parts = prompt if isinstance(prompt, list) else []
        ids = [i for part in parts for i in (part if isinstance(part, list) else [part])]
        return any(isinstance(i, int) and not 0 <= i < 50_000 for i in ids)

    return _ends_process(unknown)


@registered("cannot-generate", fault=True)
def cannot_generate() -> Deviation:
    """Like an engine whose core died at start: routes answer, every generation is a 500."""
    return Deviation(
        request=lambda path, body: (
            (500, error_body("EngineCore encountered an issue", "InternalServerError"))
            if path.startswith("/v1/") and path != "/v1/models"
            else None
        )
    )


@registered("unlisted-model", fault=True)
def unlisted_model() -> Deviation:
    """Like transformers serve 5.17 on a machine without a hub cache: /v1/models lists nothing,
    though the server answers for the model it was launched with."""
    empty = {"object": "list", "data": []}
    return Deviation(request=lambda path, body: (200, empty) if path == "/v1/models" else None)


@registered("wrong-model", fault=True)
def wrong_model(name: str = "another-model") -> Deviation:
    """Like a proxy that rewrites ``model`` to ``name`` in every answer (chat, completions,
    Responses, Messages) and in every streamed event that names one; /v1/models still lists the
    model asked for."""

    def rename(value: Any) -> Any:
        if isinstance(value, list):
            return [rename(v) for v in value]
        if not isinstance(value, dict):
            return value
        items = value.items()
        return {k: name if k == "model" and isinstance(v, str) else rename(v) for k, v in items}

    return Deviation(
        response=lambda path, body, response: rename(response),
        events=lambda path, body, events: rename(events),
    )


@registered("grow-memory", fault=True)
def grow_memory() -> Deviation:
    """Like SGLang 0.5.23 on n=1_000_000: a request with a huge ``n`` makes the server grow
    without bound."""
    hoard: list[bytearray] = []

    def grow() -> None:
        while True:
            hoard.append(bytearray(b"x" * (64 * 2**20)))  # written, so resident
            time.sleep(0.05)

    def request(path: str, body: dict):
        if (body.get("n") or 1) > 1000:
            threading.Thread(target=grow, daemon=True).start()
        return None

    return Deviation(request=request)


@registered("empty-object", fault=True)
def empty_object() -> Deviation:
    """A null server: HTTP 200 ``{}`` to every request, malformed ones included. It answers
    nothing useful, so no check may pass against it."""
    return Deviation(request=lambda path, body: (200, {}), malformed=lambda path, raw: (200, {}))


@registered("not-found", fault=True)
def not_found() -> Deviation:
    """A null server: HTTP 404 with the error envelope to every request. Every refusal a check
    expects comes, and so does a refusal of every good request: no check may pass against it."""

    def answer(path: str, body: Any) -> tuple[int, Any]:
        return 404, error_body(f"no route {path}", "not_found_error")

    return Deviation(request=answer, malformed=answer)


@registered("open-route")
def open_route(route: str) -> Deviation:
    """The API key guards every route but ``route`` (a path): it serves a caller without the
    key."""
    return Deviation(authorize=lambda method, path: False if path == route else None)


TRACEBACK = (
    'Traceback (most recent call last):\n  File "/opt/engine/serving/chat.py", line 212, in'
    " create\nKeyError: 'messages'"
)


@registered("leak-in-errors")
def leak_in_errors(text: str = TRACEBACK, field: str = "message") -> Deviation:
    """Every error answer carries ``text`` appended to ``error.<field>`` (a traceback, a host
    path, the key)."""

    def error(path: str, status: int, body: Any) -> Any:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            inner = body["error"]
            return {**body, "error": {**inner, field: f"{inner.get(field) or ''} {text}".strip()}}
        return body

    return Deviation(error=error)


@registered("flat-errors")
def flat_errors() -> Deviation:
    """Every error answer is ``{"detail": message}`` (FastAPI's default), not the OpenAI
    envelope: a client finds no ``error.message`` to show."""

    def error(path: str, status: int, body: Any) -> Any:
        inner = body.get("error") if isinstance(body, dict) else None
        return {"detail": inner.get("message") if isinstance(inner, dict) else str(body)}

    return Deviation(error=error)


@registered("refuse-large")
def refuse_large(max_bytes: int, status: int = 413) -> Deviation:
    """Like a proxy in front of the server (nginx's ``client_max_body_size`` answers 413; a rate
    limiter 429): a request whose JSON is over ``max_bytes`` gets ``status`` with an error
    envelope of its own, whatever it asks."""

    def request(path: str, body: dict):
        if len(json.dumps(body)) > max_bytes:
            message = f"request of more than {max_bytes} bytes refused"
            return status, error_body(message, "proxy_error")
        return None

    return Deviation(request=request)


@registered("stall-others")
def stall_others(hostile: Callable[[dict], bool], seconds: float) -> Deviation:
    """A request ``hostile`` picks holds the one engine lock for ``seconds``; every other request
    waits for it."""
    lock = threading.Lock()

    def request(path: str, body: dict):
        if hostile(body):
            with lock:
                time.sleep(seconds)
        else:
            with lock:
                pass
        return None

    return Deviation(request=request)


@registered("stall-streams")
def stall_streams(hostile: Callable[[dict], bool], seconds: float, pace: float = 0.1) -> Deviation:
    """While a request ``hostile`` picks runs (``seconds``, then served), every other stream
    already past its first token pauses until it ends: each first token on time, the later ones
    held back (an engine whose heavy step holds the decoding of requests already streaming).
    Every other stream writes a token each ``pace`` seconds, so that some are streaming when the
    hostile request comes."""
    idle = threading.Event()
    idle.set()

    def request(path: str, body: dict):
        if hostile(body):
            idle.clear()
            try:
                time.sleep(seconds)
            finally:
                idle.set()
        return None

    def wait() -> None:
        time.sleep(pace)
        idle.wait(seconds + 5)

    def events(path: str, body: dict, events: list[Event]) -> list[Event]:
        if hostile(body):
            return events
        paced: list[Event] = []
        for i, event in enumerate(events):
            # after the role and first token
            paced += [event, wait] if i >= 1 and event != "[DONE]" else [event]
        return paced

    return Deviation(request=request, events=events)


@registered("slow-request")
def slow_request(pick: Callable[[dict], bool], seconds: float) -> Deviation:
    """A request ``pick`` picks takes ``seconds`` before it is served, and no other request waits
    for it: an expensive request on a server that batches fairly."""

    def request(path: str, body: dict):
        if pick(body):
            time.sleep(seconds)
        return None

    return Deviation(request=request)


@registered("shed-others")
def shed_others(hostile: Callable[[dict], bool], seconds: float) -> Deviation:
    """While a request ``hostile`` picks runs (``seconds``), every other request gets 503 with
    the error envelope: a server that sheds its load instead of serving it."""
    running = threading.Event()

    def request(path: str, body: dict):
        if hostile(body):
            running.set()
            try:
                time.sleep(seconds)
            finally:
                running.clear()
        elif running.is_set():
            return 503, error_body("the server is overloaded, try again later", "server_error")
        return None

    return Deviation(request=request)


# What a request carries beside its prompt: the parameters a batching server must keep with their
# own request.
SAMPLING_KEYS = (
    "temperature",
    "top_p",
    "seed",
    "stop",
    "max_tokens",
    "max_completion_tokens",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "n",
    "response_format",
    "structured_outputs",  # vLLM's guided decoding: the scripted outputs' forcing
    "tools",
    "tool_choice",
    "presence_penalty",
    "frequency_penalty",
)


def _swap_parameters(body: dict, other: dict) -> None:
    for key in SAMPLING_KEYS:
        mine, theirs = body.pop(key, None), other.pop(key, None)
        if theirs is not None:
            body[key] = theirs
        if mine is not None:
            other[key] = mine


@registered("shuffle-parameters")
def shuffle_parameters(window: float = 0.5) -> Deviation:
    """A batching server that mixes up its requests' parameters: two chat requests open within
    ``window`` seconds of each other swap everything they carry beside the prompt
    (SAMPLING_KEYS); a request with no partner in that time, one sent alone, keeps its own. Each
    waits up to ``window`` for a partner, so alone requests are that much slower."""
    lock = threading.Lock()
    waiting: list[tuple[dict, threading.Event]] = []

    def request(path: str, body: dict):
        if path != "/v1/chat/completions":
            return None
        with lock:
            if waiting:
                other, paired = waiting.pop(0)
                _swap_parameters(body, other)
                paired.set()
                return None
            paired = threading.Event()
            waiting.append((body, paired))
        if not paired.wait(window):
            with lock:
                if (body, paired) in waiting:
                    waiting.remove((body, paired))
        return None

    return Deviation(request=request)


def _in_batch(hold: float) -> tuple[Callable[[str, dict], None], Callable[[dict], bool]]:
    """A request hook that holds each chat request ``hold`` seconds, and a test of whether a body
    was open at the same time as another: how a fault tells a request in a batch from one
    alone."""
    lock = threading.Lock()
    open_now: set[int] = set()
    batched: set[int] = set()

    def request(path: str, body: dict) -> None:
        if path != "/v1/chat/completions":
            return None
        with lock:
            if open_now:
                batched.update(open_now | {id(body)})
            open_now.add(id(body))
        time.sleep(hold)
        with lock:
            open_now.discard(id(body))
        return None

    def was_batched(body: dict) -> bool:
        with lock:
            return id(body) in batched

    return request, was_batched


DIVERGE_KINDS = ("near-tie", "outside-top-k", "no-logprobs")


def _diverge(choice: dict, kind: str, position: int) -> None:
    """One chat choice's token at ``position`` changed as ``diverge_in_batch`` tells."""
    message = choice.get("message") or {}
    text = message.get("content") or ""
    if len(text) <= position:
        return
    alone = text[position]
    outside = [c for c in "zqxjkvbw" if c != alone]
    flipped = {"near-tie": next(c for c in "etaoinsh" if c != alone)}.get(kind, outside[0])
    message["content"] = text[:position] + flipped + text[position + 1 :]
    entries = (choice.get("logprobs") or {}).get("content")
    if kind == "no-logprobs" or not entries:
        choice["logprobs"] = None
        return
    k = len(entries[position]["top_logprobs"]) or 2
    top = [flipped, alone, *outside[1:]][:k] if kind == "near-tie" else outside[:k]
    entries[position] = {
        **logprob_entry(flipped, k),
        "top_logprobs": top_logprobs(top, step=0.01),
    }


@registered("diverge-in-batch")
def diverge_in_batch(kind: str, position: int = 3, hold: float = 0.1) -> Deviation:
    """Greedy answers that change when the request shared the server with another
    (``_in_batch``), at token ``position`` (one character each): ``near-tie``: the batched answer
    chose another token and lists the alone one second in its top logprobs (a near-tie that
    flipped); ``outside-top-k``: another token, the alone one nowhere in its top logprobs (a
    wrong computation); ``no-logprobs``: another token, and no logprobs to judge it by."""
    if kind not in DIVERGE_KINDS:
        raise ValueError(f"kind must be one of {DIVERGE_KINDS}")
    request, was_batched = _in_batch(hold)

    def response(path: str, body: dict, response: dict) -> dict:
        if path == "/v1/chat/completions" and was_batched(body):
            for choice in response.get("choices", []):
                _diverge(choice, kind, position)
        return response

    return Deviation(request=request, response=response)


@registered("perturb-logprobs")
def perturb_logprobs(delta: float) -> Deviation:
    """A kernel that moves the numbers: every logprob of a text completion's answer (the chosen
    token's and its top alternatives') shifted by ``delta`` nats, the tokens themselves
    unchanged."""

    def shifted(top: dict | None) -> dict | None:
        return None if top is None else {t: v + delta for t, v in top.items()}

    def response(path: str, body: dict, response: dict) -> dict:
        if path != "/v1/completions":
            return response
        for choice in response.get("choices", []):
            lp = choice.get("logprobs") or {}
            chosen, tops = lp.get("token_logprobs") or [], lp.get("top_logprobs") or []
            lp["token_logprobs"] = [None if v is None else v + delta for v in chosen]
            lp["top_logprobs"] = [shifted(top) for top in tops]
        return response

    return Deviation(response=response)


NULL_MODES: dict[str, Callable[[], Deviation]] = {
    "empty-object": empty_object,
    "not-found": not_found,
}

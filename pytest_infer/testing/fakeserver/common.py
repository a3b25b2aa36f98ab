"""What every API of the fake server shares: the model, the ``Deviation`` hooks, the error
envelope, the deterministic text, and the request rules the OpenAI APIs have in common."""

from __future__ import annotations

import hashlib
import json
import random
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

MODEL = "fake-model"
RESPONSES, MESSAGES = "/v1/responses", "/v1/messages"
# Streams of typed events: an "event:" line names each, no [DONE].
TYPED_STREAMS = (RESPONSES, MESSAGES)
ALPHABET = string.ascii_lowercase + "     "
CONTEXT_LENGTH = 2048
FINISH_REASONS = ("stop", "length")
# Scripted output: the fake honours vLLM's forced-text field (a regex that matches one text) and
# then parses the text as vLLM's hermes tool parser and a <think> reasoning parser do; the markup
# is one token each in /tokenize.
MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>")
TOOL_PARSER, REASONING_PARSER = "hermes", "qwen3"
_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r"}
# A dict (sent as JSON), a str (sent as-is after "data: "), bytes (sent raw), or a callable
# (called there).
Event = Any


@dataclass
class Deviation:
    """Hooks that turn the correct server into a wrong one. Every hook is optional.

    - ``request(path, body)``: return ``(status, json_body)`` to answer instead of the server.
    - ``response(path, body, response)``: rewrite a non-streamed JSON response (return it).
    - ``events(path, body, events)``: rewrite the list of SSE events, ``"[DONE]"`` included.
    - ``raw_stream(path, body, handler)``: take over the socket entirely (faults).
    - ``malformed(path, raw)``: return ``(status, json_body)`` to answer a body that is not a
      JSON object (the server's own answer is a 400; ``request`` never sees such a body).
    - ``authorize(method, path)``: return False to serve that route without the API key (an
      open route).
    - ``error(path, status, body)``: rewrite every error answer's JSON body (return it): what an
      error discloses.
    - ``headers(path, status)``: extra response headers for every JSON answer.
    """

    request: Callable[[str, dict], tuple[int, Any] | None] | None = None
    response: Callable[[str, dict, dict], dict] | None = None
    events: Callable[[str, dict, list[Event]], list[Event]] | None = None
    raw_stream: Callable[[str, dict, BaseHTTPRequestHandler], None] | None = None
    malformed: Callable[[str, bytes], tuple[int, Any] | None] | None = None
    authorize: Callable[[str, str], bool | None] | None = None
    error: Callable[[str, int, Any], Any] | None = None
    headers: Callable[[str, int], dict[str, str]] | None = None


def error_body(
    message: str,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class ErrorReply(Exception):
    def __init__(
        self,
        message: str,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code


class FakeState:
    """What the server does and what it saw; shared by all handler threads."""

    def __init__(
        self,
        deviation: Deviation | None = None,
        fault: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.deviation = deviation or Deviation()
        self.fault = fault
        # When set, /v1/* answers 401 without "Authorization: Bearer <api_key>".
        self.api_key = api_key
        # When set, a token id biased by +50 or more is every token written (``biased``).
        self.logit_bias = False
        self.requests: list[tuple[str, str, Any]] = []
        self.lock = threading.Lock()
        self.counter = 0
        # Prefix caching: a prompt seen before is served from the cache.
        self.cached_prompts: set[str] = set()
        self.responses: dict[str, dict] = {}  # stored Responses API objects, by id

    def cached_tokens(self, prompt: str) -> int:
        """Whole 16-token blocks of a prompt seen before (one token per character), as a block
        cache reports them."""
        with self.lock:
            seen = prompt in self.cached_prompts
            self.cached_prompts.add(prompt)
        return len(prompt) // 16 * 16 if seen else 0

    def next_id(self, prefix: str) -> str:
        with self.lock:
            self.counter += 1
            return f"{prefix}-{self.counter:06d}"


def generate_text(prompt: str, seed: int | None, temperature: float, length: int) -> str:
    """Deterministic for temperature 0 or a given seed; varies otherwise. The prompt's non-ASCII
    characters join the alphabet, as a real model writes back the rare characters it was shown."""
    if temperature == 0 or seed is not None:
        key = f"{prompt}|{seed if temperature else 'greedy'}"
        rng = random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))
    else:
        rng = random.Random()
    alphabet = ALPHABET + "".join(sorted({ch for ch in prompt if ord(ch) > 0x7F}))
    return "".join(rng.choice(alphabet) for _ in range(length)).replace("  ", " a")[:length]


def forced_text(body: dict) -> str | None:
    """The text a literal regex in ``structured_outputs.regex`` matches (None: no forced text)."""
    regex = (
        (body.get("structured_outputs") or {}).get("regex")
        if isinstance(body.get("structured_outputs"), dict)
        else None
    )
    if not isinstance(regex, str):
        return None
    out, chars = [], iter(regex)
    for ch in chars:
        out.append(_UNESCAPE.get(nxt := next(chars, ""), nxt) if ch == "\\" else ch)
    return "".join(out)


def forced_texts(forced: str, params: dict) -> list[tuple[str, str]]:
    """Each choice's (text, finish reason) when the text is forced: cut at the token limit."""
    limit = params["limit"]
    return [(forced[:limit], "stop" if len(forced) <= limit else "length")] * params["n"]


def parse_reasoning(text: str) -> tuple[str | None, str]:
    """(reasoning, content) of a text with a <think> block, as a reasoning parser splits it."""
    if MARKERS[1] not in text:
        return None, text
    thinking, _, content = text.partition(MARKERS[1])
    return thinking.removeprefix(MARKERS[0]), content


def parse_tool_calls(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(content, [(name, arguments JSON)]) of hermes-format text; no markup: all content."""
    content, found, rest = text.split(MARKERS[2])[0], [], text
    while MARKERS[2] in rest and MARKERS[3] in rest:
        _, _, rest = rest.partition(MARKERS[2])
        block, _, rest = rest.partition(MARKERS[3])
        call = json.loads(block)
        found.append((call["name"], json.dumps(call["arguments"], ensure_ascii=False)))
    return (content, found) if found else (text, [])


def check_range(body: dict, name: str, low: float, high: float) -> None:
    value = body.get(name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ErrorReply(f"{name} must be between {low} and {high}, got {value!r}", param=name)


def prompt_text(body: dict) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ErrorReply("messages must be a non-empty array", param="messages")
    parts = []
    for m in messages:
        roles = ("system", "user", "assistant", "tool", "developer")
        if not isinstance(m, dict) or m.get("role") not in roles:
            raise ErrorReply("each message needs a valid role", param="messages")
        content = m.get("content") or ""
        if not isinstance(content, (str, list)):
            message = "message content must be a string or an array of parts"
            raise ErrorReply(message, param="messages")
        parts.append(content if isinstance(content, str) else json.dumps(content))
    return encodable("\n".join(parts))


def encodable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ErrorReply("text is not valid Unicode (lone surrogate)", param="messages") from None
    return text


def apply_stop(text: str, stop: Any) -> tuple[str, str | None]:
    """The text cut before the first stop string in it, and that stop string (None: no stop in
    it)."""
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    found = [(i, s) for s in stops if s and (i := text.find(s)) >= 0]
    if not found:
        return text, None
    cut, fired = min(found, key=lambda pair: pair[0])
    return text[:cut], fired


def biased(bias: Any) -> str | None:
    """The character (token ids are code points, as /tokenize gives them) that ``logit_bias``
    pushes to the top: the highest bias of at least +50, as a real sampler then chooses it every
    time; None without one. A bias outside [-100, 100] or not keyed by a token id is refused, as
    vLLM does."""
    if bias is None:
        return None
    if not isinstance(bias, dict):
        raise ErrorReply("logit_bias must be an object of token ids to biases", param="logit_bias")
    best: tuple[float, str] | None = None
    for key, value in bias.items():
        if not str(key).isdigit() or not 0 <= int(key) < 0x110000 or isinstance(value, bool):
            raise ErrorReply(f"logit_bias: {key!r} is not a token id", param="logit_bias")
        if not isinstance(value, (int, float)) or not -100 <= value <= 100:
            message = f"logit_bias: {value!r} is not between -100 and 100"
            raise ErrorReply(message, param="logit_bias")
        if value >= 50 and (best is None or value > best[0]):
            best = (value, chr(int(key)))
    return best[1] if best else None


def logprob_entry(token: str, k: int) -> dict:
    alts = [token] + [c for c in "etaoinsh" if c != token][: max(0, k - 1)]
    return {
        "token": token,
        "logprob": -0.05,
        "bytes": list(token.encode()),
        "top_logprobs": top_logprobs(alts[:k]),
    }


def top_logprobs(tokens: list[str], step: float = 1.0) -> list[dict]:
    """The tokens, most likely first, each ``step`` nats less likely than the one before."""
    ranked = [(t, -0.05 - i * step) for i, t in enumerate(tokens)]
    return [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in ranked]


def _check_sampling(body: dict) -> None:
    """The ranges and types of the sampling parameters, as vLLM refuses them."""
    check_range(body, "temperature", 0, 2)
    check_range(body, "top_p", 0, 1)
    check_range(body, "n", 1, 128)
    check_range(body, "top_logprobs", 0, 20)
    check_range(body, "presence_penalty", -2, 2)
    check_range(body, "frequency_penalty", -2, 2)
    for name in ("max_tokens", "max_completion_tokens"):
        if body.get(name) is not None:
            check_range(body, name, 1, CONTEXT_LENGTH)
    seed = body.get("seed")
    in_range = isinstance(seed, int) and not isinstance(seed, bool) and -(2**63) <= seed < 2**63
    if seed is not None and not in_range:
        raise ErrorReply("seed must be a 64-bit integer", param="seed")
    if not isinstance(body.get("stream", False), bool):
        raise ErrorReply("stream must be a boolean", param="stream")
    stop = body.get("stop")
    if (
        stop is not None
        and not isinstance(stop, str)
        and not (isinstance(stop, list) and all(isinstance(s, str) for s in stop))
    ):
        raise ErrorReply("stop must be a string or a list of strings", param="stop")
    if body.get("stream_options") is not None and not body.get("stream"):
        message = "stream_options is only allowed when stream is true"
        raise ErrorReply(message, param="stream_options")


def validate(state: FakeState, body: dict) -> dict:
    """The request rules the OpenAI APIs share, then the sampling parameters ``choice`` reads."""
    if body.get("model") not in (MODEL, None):
        raise ErrorReply(
            f"The model `{body.get('model')}` does not exist.",
            param="model",
            status=404,
            code="model_not_found",
        )
    _check_sampling(body)
    limit = body.get("max_completion_tokens") or body.get("max_tokens") or 16
    temperature = 1.0 if body.get("temperature") is None else body["temperature"]
    if body.get("top_p") is not None and body["top_p"] <= 1e-6:
        temperature = 0  # only the most likely token is left to sample
    named = ("frequency_penalty", "presence_penalty")
    penalties = "".join(f"|{k}={body[k]}" for k in named if body.get(k))
    return {
        "n": body.get("n") or 1,
        "limit": limit,
        "temperature": temperature,
        "seed": body.get("seed"),
        "penalties": penalties,
        "biased": biased(body.get("logit_bias")) if state.logit_bias else None,
    }


def choice_texts(prompt: str, params: dict, stop: Any) -> list[tuple[str, str]]:
    return [choice(prompt, params, stop, i)[:2] for i in range(params["n"])]


def choice(prompt: str, params: dict, stop: Any, i: int) -> tuple[str, str, str | None]:
    """Choice ``i``'s text, its finish reason, and the stop string that ended it (None unless one
    did)."""
    seed = None if params["seed"] is None else params["seed"] + i
    text = generate_text(
        prompt + (f"#{i}" if params["n"] > 1 else "") + params.get("penalties", ""),
        seed,
        params["temperature"],
        params["limit"] + 8,
    )
    if params.get("biased"):  # a token pushed to the top by logit_bias is every token chosen
        text = params["biased"] * (params["limit"] + 8)
    text, fired = apply_stop(text, stop)
    if fired is not None and len(text) <= params["limit"]:
        return text, "stop", fired
    return text[: params["limit"]], "length", None

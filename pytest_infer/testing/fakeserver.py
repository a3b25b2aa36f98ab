"""A small OpenAI-compatible server that is spec-correct by default and wrong on demand.

Its one purpose is to prove that each check CAN fail: a test installs a
``Deviation`` (hooks that rewrite a request's handling, a response, or a
stream's events) and asserts the check reports exactly that deviation. It also
injects faults real engines won't produce on demand (hangs, malformed SSE,
death). Text is generated deterministically, one character per token.

Run in-process (``with FakeServer() as srv``) or as a process for lifecycle
tests: ``python -m pytest_infer.testing.fakeserver --port P [--fault NAME]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-model"
RESPONSES, MESSAGES = "/v1/responses", "/v1/messages"
TYPED_STREAMS = (RESPONSES, MESSAGES)  # streams of typed events: an "event:" line names each, no [DONE]
ALPHABET = string.ascii_lowercase + "     "
CONTEXT_LENGTH = 2048
FINISH_REASONS = ("stop", "length")
# Scripted output: the fake honours vLLM's forced-text field (a regex that matches one text) and then parses the
# text as vLLM's hermes tool parser and a <think> reasoning parser do; the markup is one token each in /tokenize.
MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>")
TOOL_PARSER, REASONING_PARSER = "hermes", "qwen3"
_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r"}
Event = Any  # a dict (sent as JSON), a str (sent as-is after "data: "), bytes (sent raw), or a callable (called there)


@dataclass
class Deviation:
    """Hooks that turn the correct server into a wrong one. Every hook is optional.

    - ``request(path, body)``: return ``(status, json_body)`` to answer instead of the server.
    - ``response(path, body, response)``: rewrite a non-streamed JSON response (return it).
    - ``events(path, body, events)``: rewrite the list of SSE events, ``"[DONE]"`` included.
    - ``raw_stream(path, body, handler)``: take over the socket entirely (faults).
    - ``malformed(path, raw)``: return ``(status, json_body)`` to answer a body that is not a JSON object
      (the server's own answer is a 400; ``request`` never sees such a body).
    - ``authorize(method, path)``: return False to serve that route without the API key (an open route).
    - ``error(path, status, body)``: rewrite every error answer's JSON body (return it): what an error discloses.
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
    message: str, type_: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class ErrorReply(Exception):
    def __init__(self, message: str, param: str | None = None, status: int = 400, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code


def generate_text(prompt: str, seed: int | None, temperature: float, length: int) -> str:
    """Deterministic for temperature 0 or a given seed; varies otherwise. The prompt's non-ASCII characters join
    the alphabet, as a real model writes back the rare characters it was shown."""
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


def _check_range(body: dict, name: str, low: float, high: float) -> None:
    value = body.get(name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ErrorReply(f"{name} must be between {low} and {high}, got {value!r}", param=name)


def _prompt_text(body: dict) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ErrorReply("messages must be a non-empty array", param="messages")
    parts = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool", "developer"):
            raise ErrorReply("each message needs a valid role", param="messages")
        content = m.get("content") or ""
        if not isinstance(content, (str, list)):
            raise ErrorReply("message content must be a string or an array of parts", param="messages")
        parts.append(content if isinstance(content, str) else json.dumps(content))
    return _encodable("\n".join(parts))


def _encodable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ErrorReply("text is not valid Unicode (lone surrogate)", param="messages") from None
    return text


def _apply_stop(text: str, stop: Any) -> tuple[str, str | None]:
    """The text cut before the first stop string in it, and that stop string (None: no stop in it)."""
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    found = [(i, s) for s in stops if s and (i := text.find(s)) >= 0]
    if not found:
        return text, None
    cut, fired = min(found, key=lambda pair: pair[0])
    return text[:cut], fired


def _response_text(response: dict) -> str:
    return "".join(part["text"] for item in response["output"] for part in item["content"])


def _biased(bias: Any) -> str | None:
    """The character (token ids are code points, as /tokenize gives them) that ``logit_bias`` pushes to the top: the
    highest bias of at least +50, as a real sampler then chooses it every time; None without one. A bias outside
    [-100, 100] or not keyed by a token id is refused, as vLLM does."""
    if bias is None:
        return None
    if not isinstance(bias, dict):
        raise ErrorReply("logit_bias must be an object of token ids to biases", param="logit_bias")
    best: tuple[float, str] | None = None
    for key, value in bias.items():
        if not str(key).isdigit() or not 0 <= int(key) < 0x110000 or isinstance(value, bool):
            raise ErrorReply(f"logit_bias: {key!r} is not a token id", param="logit_bias")
        if not isinstance(value, (int, float)) or not -100 <= value <= 100:
            raise ErrorReply(f"logit_bias: {value!r} is not between -100 and 100", param="logit_bias")
        if value >= 50 and (best is None or value > best[0]):
            best = (value, chr(int(key)))
    return best[1] if best else None


def _public(stored: dict) -> dict:
    """A stored response as the API shows it: without the prompt kept to continue a chain."""
    return {k: v for k, v in stored.items() if k != "_prompt"}


def _logprob_entry(token: str, k: int) -> dict:
    alts = [token] + [c for c in "etaoinsh" if c != token][: max(0, k - 1)]
    return {
        "token": token,
        "logprob": -0.05,
        "bytes": list(token.encode()),
        "top_logprobs": [{"token": t, "logprob": -0.05 - i, "bytes": list(t.encode())} for i, t in enumerate(alts[:k])],
    }


class FakeState:
    """What the server does and what it saw; shared by all handler threads."""

    def __init__(
        self, deviation: Deviation | None = None, fault: str | None = None, api_key: str | None = None
    ) -> None:
        self.deviation = deviation or Deviation()
        self.fault = fault
        self.api_key = api_key  # when set, /v1/* answers 401 without "Authorization: Bearer <api_key>"
        self.logit_bias = False  # when set, a token id biased by +50 or more is every token written (``_biased``)
        self.requests: list[tuple[str, str, Any]] = []
        self.lock = threading.Lock()
        self.counter = 0
        self.cached_prompts: set[str] = set()  # prefix caching: a prompt seen before is served from the cache
        self.responses: dict[str, dict] = {}  # stored Responses API objects, by id

    def cached_tokens(self, prompt: str) -> int:
        """Whole 16-token blocks of a prompt seen before (one token per character), as a block cache reports them."""
        with self.lock:
            seen = prompt in self.cached_prompts
            self.cached_prompts.add(prompt)
        return len(prompt) // 16 * 16 if seen else 0

    def next_id(self, prefix: str) -> str:
        with self.lock:
            self.counter += 1
            return f"{prefix}-{self.counter:06d}"


class Handler(BaseHTTPRequestHandler):
    server_version = "fakeserver/1.0"
    protocol_version = "HTTP/1.1"
    state: FakeState

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
        pass

    # --- transport -------------------------------------------------------
    def _send_json(self, status: int, body: Any) -> None:
        dev = self.state.deviation
        if status >= 400 and dev.error is not None:
            body = dev.error(self.path, status, body)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (dev.headers(self.path, status) if dev.headers else {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: list[Event], delay: float = 0.0) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in events:
            if callable(event):  # a pause mid-stream (``stall_streams``): nothing is sent
                event()
                continue
            if isinstance(event, bytes):
                payload = event
            elif isinstance(event, dict) and self.path in TYPED_STREAMS and "type" in event:
                payload = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
            else:
                text = event if isinstance(event, str) else json.dumps(event)
                payload = f"data: {text}\n\n".encode()
            try:
                self.wfile.write(payload)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            if delay:
                time.sleep(delay)

    def _unauthorized(self) -> bool:
        """Answer 401 (as vLLM does with VLLM_API_KEY) when a key is required and missing or wrong."""
        if (
            not self.state.api_key
            or not self.path.startswith("/v1")
            or self.headers.get("Authorization") == f"Bearer {self.state.api_key}"
        ):
            return False
        if (
            self.state.deviation.authorize is not None
            and self.state.deviation.authorize(self.command, self.path) is False
        ):
            return False
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send_json(401, error_body("Unauthorized", "authentication_error"))
        return True

    def do_GET(self) -> None:
        self.state.requests.append(("GET", self.path, None))
        if self._unauthorized():
            return
        dev = self.state.deviation
        if dev.request and (answer := dev.request(self.path, {})) is not None:
            return self._send_json(*answer)
        if self.path == "/health":
            return self._send_json(200, {})
        if self.path == "/version":
            return self._send_json(200, {"version": "9.9.9"})
        if self.path == "/v1/models":
            return self._send_json(200, {"object": "list", "data": [self._model_card()]})
        if self.path.startswith(RESPONSES + "/"):
            stored = self.state.responses.get(self.path.removeprefix(RESPONSES + "/"))
            if stored is None:
                return self._send_json(
                    404,
                    error_body(f"Response with id {self.path.rsplit('/', 1)[-1]!r} not found.", param="response_id"),
                )
            return self._send_json(200, _public(stored))
        if self.path.startswith("/v1/models/"):
            name = self.path.removeprefix("/v1/models/")
            if name == MODEL:
                return self._send_json(200, self._model_card())
            return self._send_json(
                404, error_body(f"model {name} not found", "invalid_request_error", "model", "model_not_found")
            )
        self._send_json(404, error_body(f"no route {self.path}", "not_found_error"))

    def _tokenize(self, body: dict) -> dict:
        """One token per character, its code point, as the prompt_tokens of a chat count them."""
        text = _prompt_text(body) if "messages" in body else body.get("prompt")
        if not isinstance(text, str):
            raise ErrorReply("prompt must be a string, or messages given", param="prompt")
        tokens, rest = [], text
        while rest:
            marker = next((m for m in MARKERS if rest.startswith(m)), None)
            tokens.append(0x110000 + MARKERS.index(marker) if marker else ord(rest[0]))
            rest = rest[len(marker or rest[0]) :]
        return {"count": len(tokens), "max_model_len": CONTEXT_LENGTH, "tokens": tokens}

    def _detokenize(self, body: dict) -> dict:
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) and 0 <= t < 0x110000 for t in tokens):
            raise ErrorReply("tokens must be a list of token ids", param="tokens")
        return {"prompt": "".join(map(chr, tokens))}

    def _model_card(self) -> dict:
        """The card with the context it refuses prompts past, advertised as vLLM does (``max_model_len``)."""
        return {
            "id": MODEL, "object": "model", "created": 1_700_000_000, "owned_by": "fakeserver",
            "max_model_len": CONTEXT_LENGTH,
        }  # fmt: skip

    def do_POST(self) -> None:
        if self._unauthorized():
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                raise ValueError("Content-Type must be application/json")
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body must be a JSON object")
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            self.state.requests.append(("POST", self.path, raw))
            dev = self.state.deviation
            if dev.malformed and (answer := dev.malformed(self.path, raw)) is not None:
                return self._send_json(*answer)
            return self._send_json(400, error_body(f"malformed JSON body: {exc}"))
        self.state.requests.append(("POST", self.path, body))
        dev = self.state.deviation
        if dev.request and (answer := dev.request(self.path, body)) is not None:
            return self._send_json(*answer)
        if dev.raw_stream is not None:
            return dev.raw_stream(self.path, body, self)
        routes = {
            "/v1/chat/completions": self._chat, "/v1/completions": self._completions, "/tokenize": self._tokenize,
            "/detokenize": self._detokenize,
            RESPONSES: self._responses, MESSAGES: self._messages, MESSAGES + "/count_tokens": self._count_tokens,
        }  # fmt: skip
        route = routes.get(self.path)
        if route is None and self.path.startswith(RESPONSES + "/") and self.path.endswith("/cancel"):
            route = self._cancel
        if route is None:
            return self._send_json(404, error_body(f"no route {self.path}", "not_found_error"))
        try:
            events_or_response = route(body)
        except ErrorReply as exc:
            if self.path.startswith(MESSAGES):  # the Anthropic error shape
                return self._send_json(
                    exc.status, {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}}
                )
            return self._send_json(exc.status, error_body(str(exc), param=exc.param, code=exc.code))
        except Exception as exc:  # a real server's bug: 500 with the envelope, never a dropped connection
            return self._send_json(500, error_body(f"internal error: {type(exc).__name__}", "internal_server_error"))
        if isinstance(events_or_response, list):
            events = dev.events(self.path, body, events_or_response) if dev.events else events_or_response
            return self._send_events(events)
        response = dev.response(self.path, body, events_or_response) if dev.response else events_or_response
        self._send_json(200, response)

    # --- shared validation ---------------------------------------------
    def _validate(self, body: dict) -> dict:
        if body.get("model") not in (MODEL, None):
            raise ErrorReply(
                f"The model `{body.get('model')}` does not exist.", param="model", status=404, code="model_not_found"
            )
        _check_range(body, "temperature", 0, 2)
        _check_range(body, "top_p", 0, 1)
        _check_range(body, "n", 1, 128)
        _check_range(body, "top_logprobs", 0, 20)
        _check_range(body, "presence_penalty", -2, 2)
        _check_range(body, "frequency_penalty", -2, 2)
        for name in ("max_tokens", "max_completion_tokens"):
            if body.get(name) is not None:
                _check_range(body, name, 1, CONTEXT_LENGTH)
        seed = body.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63):
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
            raise ErrorReply("stream_options is only allowed when stream is true", param="stream_options")
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or 16
        temperature = 1.0 if body.get("temperature") is None else body["temperature"]
        if body.get("top_p") is not None and body["top_p"] <= 1e-6:
            temperature = 0  # only the most likely token is left to sample
        penalties = "".join(f"|{k}={body[k]}" for k in ("frequency_penalty", "presence_penalty") if body.get(k))
        return {
            "n": body.get("n") or 1,
            "limit": limit,
            "temperature": temperature,
            "seed": seed,
            "penalties": penalties,
            "biased": _biased(body.get("logit_bias")) if self.state.logit_bias else None,
        }

    def _choice_texts(self, prompt: str, params: dict, stop: Any) -> list[tuple[str, str]]:
        return [self._choice(prompt, params, stop, i)[:2] for i in range(params["n"])]

    def _choice(self, prompt: str, params: dict, stop: Any, i: int) -> tuple[str, str, str | None]:
        """Choice ``i``'s text, its finish reason, and the stop string that ended it (None unless one did)."""
        seed = None if params["seed"] is None else params["seed"] + i
        text = generate_text(
            prompt + (f"#{i}" if params["n"] > 1 else "") + params.get("penalties", ""),
            seed,
            params["temperature"],
            params["limit"] + 8,
        )
        if params.get("biased"):  # a token pushed to the top by logit_bias is every token chosen
            text = params["biased"] * (params["limit"] + 8)
        text, fired = _apply_stop(text, stop)
        if fired is not None and len(text) <= params["limit"]:
            return text, "stop", fired
        return text[: params["limit"]], "length", None

    # --- chat -----------------------------------------------------------
    def _chat(self, body: dict) -> dict | list[Event]:
        params = self._validate(body)
        prompt = _prompt_text(body)
        if len(prompt) > CONTEXT_LENGTH:
            raise ErrorReply(
                f"prompt of {len(prompt)} tokens exceeds the context length {CONTEXT_LENGTH}", param="messages"
            )
        rf = body.get("response_format") or {}
        if body.get("response_format") is not None and (
            not isinstance(rf, dict) or rf.get("type") not in ("text", "json_object", "json_schema")
        ):
            raise ErrorReply(
                "response_format must be an object with type text, json_object or json_schema", param="response_format"
            )
        if rf.get("type") == "json_schema" and not isinstance((rf.get("json_schema") or {}).get("schema"), dict):
            raise ErrorReply("response_format.json_schema.schema is required", param="response_format")
        texts = self._choice_texts(prompt, params, body.get("stop"))
        if rf.get("type") in ("json_object", "json_schema"):
            texts = [(json.dumps({"answer": t[:8]}), "stop") for t, _ in texts]
        tool_calls = self._tool_calls(body)
        reasoning: str | None = None
        if (forced := forced_text(body)) is not None:
            texts = [(forced[: params["limit"]], "stop" if len(forced) <= params["limit"] else "length")] * params["n"]
            reasoning, content = parse_reasoning(texts[0][0])
            if body.get("tools") and body.get("tool_choice", "auto") == "auto" and texts[0][1] == "stop":
                content, calls = parse_tool_calls(content)
                tool_calls = [
                    {"id": self.state.next_id("call"), "type": "function", "function": {"name": n, "arguments": a}}
                    for n, a in calls
                ] or None
            texts = [(content, reason) for _, reason in texts]
        prompt_tokens = len(prompt)
        completion_tokens = sum(len(t) for t, _ in texts)
        k = body.get("top_logprobs") or 0
        cid, created = self.state.next_id("chatcmpl"), int(time.time())
        if not body.get("stream"):
            choices = []
            for i, (text, reason) in enumerate(texts):
                message: dict[str, Any] = {"role": "assistant", "content": text}
                if tool_calls is not None:
                    message = {
                        "role": "assistant",
                        "content": (text or None) if forced is not None else None,
                        "tool_calls": tool_calls,
                    }
                    reason = "tool_calls"
                if reasoning is not None:
                    message["reasoning"] = reasoning
                choices.append(
                    {
                        "index": i,
                        "message": message,
                        "logprobs": {"content": [_logprob_entry(c, k) for c in text]} if body.get("logprobs") else None,
                        "finish_reason": reason,
                    }
                )
            return {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": MODEL,
                "system_fingerprint": "fp_fake",
                "choices": choices,
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    "prompt_tokens_details": {"cached_tokens": self.state.cached_tokens(prompt)},
                },
            }
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL,
            "system_fingerprint": "fp_fake",
        }
        events: list[Event] = []
        for i, (text, reason) in enumerate(texts):
            events.append(
                {
                    **base,
                    "choices": [
                        {
                            "index": i,
                            "delta": {"role": "assistant", "content": ""},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ],
                }
            )
            for piece in (reasoning[: len(reasoning) // 2], reasoning[len(reasoning) // 2 :]) if reasoning else ():
                events.append(
                    {
                        **base,
                        "choices": [
                            {"index": i, "delta": {"reasoning": piece}, "logprobs": None, "finish_reason": None}
                        ],
                    }
                )
            if tool_calls is not None:
                for ch in text if forced is not None else "":
                    events.append(
                        {
                            **base,
                            "choices": [
                                {"index": i, "delta": {"content": ch}, "logprobs": None, "finish_reason": None}
                            ],
                        }
                    )
                for j, call in enumerate(tool_calls):
                    args = call["function"]["arguments"]
                    head = {
                        "index": j,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                    events.append(
                        {**base, "choices": [{"index": i, "delta": {"tool_calls": [head]}, "finish_reason": None}]}
                    )
                    for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                        events.append(
                            {
                                **base,
                                "choices": [
                                    {
                                        "index": i,
                                        "delta": {"tool_calls": [{"index": j, "function": {"arguments": piece}}]},
                                        "finish_reason": None,
                                    }
                                ],
                            }
                        )
                reason = "tool_calls"
            else:
                for ch in text:
                    lp = {"content": [_logprob_entry(ch, k)]} if body.get("logprobs") else None
                    events.append(
                        {
                            **base,
                            "choices": [{"index": i, "delta": {"content": ch}, "logprobs": lp, "finish_reason": None}],
                        }
                    )
            events.append({**base, "choices": [{"index": i, "delta": {}, "logprobs": None, "finish_reason": reason}]})
        if include_usage:
            events.append(
                {
                    **base,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                }
            )
        events.append("[DONE]")
        return events

    def _tool_calls(self, body: dict) -> list[dict] | None:
        tools = body.get("tools") or []
        choice = body.get("tool_choice", "auto" if tools else "none")
        if not tools or choice == "none":
            return None
        if choice == "auto":
            return None  # a fake model never volunteers a call
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            if name not in [t.get("function", {}).get("name") for t in tools]:
                raise ErrorReply(f"tool_choice names unknown tool {name!r}", param="tool_choice")
        elif body.get("parallel_tool_calls") and choice == "required":
            return [
                {
                    "id": self.state.next_id("call"),
                    "type": "function",
                    "function": {"name": t["function"]["name"], "arguments": json.dumps({"x": i})},
                }
                for i, t in enumerate(tools)
            ]
        else:
            name = tools[0]["function"]["name"]
        return [
            {
                "id": self.state.next_id("call"),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps({"x": 1})},
            }
        ]

    # --- Responses API -------------------------------------------------------
    def _responses(self, body: dict) -> dict | list[Event]:
        limit = body.get("max_output_tokens")
        params = self._validate({**body, "max_output_tokens": None, "max_tokens": limit})
        text_input = body.get("input")
        prompt = text_input if isinstance(text_input, str) else _prompt_text({"messages": text_input})
        previous = body.get("previous_response_id")
        if previous is not None:
            earlier = self.state.responses.get(previous)
            if earlier is None:
                raise ErrorReply(f"Response with id {previous!r} not found.", param="previous_response_id", status=404)
            prompt = earlier["_prompt"] + _response_text(earlier) + prompt
        if body.get("background") and body.get("store") is False:
            raise ErrorReply("background mode needs store: true", param="background")
        fmt = (body.get("text") or {}).get("format") or {}
        ((text, reason),) = self._choice_texts(prompt, {**params, "n": 1}, None)
        if fmt.get("type") in ("json_object", "json_schema"):
            text, reason = json.dumps({"ok": True}), "stop"
        rid, mid = self.state.next_id("resp"), self.state.next_id("msg")
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {"id": mid, "type": "message", "role": "assistant", "status": "completed", "content": [part]}
        status = "queued" if body.get("background") else "incomplete" if reason == "length" else "completed"
        response: dict[str, Any] = {
            "id": rid, "object": "response", "created_at": int(time.time()), "model": MODEL, "status": status,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "output": [item],
            "previous_response_id": previous, "background": bool(body.get("background")), "max_output_tokens": limit,
            "usage": {
                "input_tokens": len(prompt), "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": len(text), "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": len(prompt) + len(text),
            },
        }  # fmt: skip
        if body.get("store", True):
            self.state.responses[rid] = {**response, "_prompt": prompt}
        if not body.get("stream"):
            return response
        events: list[Event] = [
            {
                "type": "response.created",
                "response": {
                    **response,
                    "status": "in_progress",
                    "output": [],
                    "usage": None,
                    "incomplete_details": None,
                },
            },
            {
                "type": "response.in_progress",
                "response": {
                    **response,
                    "status": "in_progress",
                    "output": [],
                    "usage": None,
                    "incomplete_details": None,
                },
            },
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
            {
                "type": "response.content_part.added",
                "output_index": 0,
                "item_id": mid,
                "content_index": 0,
                "part": {"type": "output_text", "text": ""},
            },
        ]
        events += [
            {"type": "response.output_text.delta", "output_index": 0, "item_id": mid, "content_index": 0, "delta": ch}
            for ch in text
        ]
        events += [
            {"type": "response.output_text.done", "output_index": 0, "item_id": mid, "content_index": 0, "text": text},
            {"type": "response.content_part.done", "output_index": 0, "item_id": mid, "content_index": 0, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": f"response.{status}", "response": response},
        ]
        return [{**e, "sequence_number": i} for i, e in enumerate(events)]

    def _cancel(self, body: dict) -> dict:
        rid = self.path.removeprefix(RESPONSES + "/").removesuffix("/cancel")
        stored = self.state.responses.get(rid)
        if stored is None:
            raise ErrorReply(f"Response with id {rid!r} not found.", param="response_id", status=404)
        if not stored["background"]:
            raise ErrorReply("Cannot cancel a synchronous response.", param="response_id")
        stored["status"] = "cancelled"
        return _public(stored)

    # --- Anthropic Messages API ------------------------------------------------
    def _messages(self, body: dict) -> dict | list[Event]:
        """Anthropic's request rules first: model, max_tokens and messages required; temperature and top_p from 0 to
        1, top_k from 0; no role in messages but user and assistant (and system, which newer references admit)."""
        for name in ("model", "max_tokens", "messages"):
            if body.get(name) is None:
                raise ErrorReply(f"{name}: Field required", param=name)
        if not isinstance(body["max_tokens"], int):
            raise ErrorReply("max_tokens: Input should be a valid integer", param="max_tokens")
        _check_range(body, "temperature", 0, 1)
        top_k = body.get("top_k")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
            raise ErrorReply(f"top_k must be an integer >= 0, got {top_k!r}", param="top_k")
        roles = (
            [m.get("role") if isinstance(m, dict) else None for m in body["messages"]]
            if isinstance(body["messages"], list)
            else []
        )
        if any(role not in ("user", "assistant", "system") for role in roles):
            raise ErrorReply("messages: each role must be 'user' or 'assistant'", param="messages")
        params = self._validate({k: v for k, v in body.items() if k not in ("stop_sequences", "top_k")})
        prompt = _prompt_text(body)
        text, reason, stop = self._choice(prompt, {**params, "n": 1}, body.get("stop_sequences"), 0)
        message = {
            "id": self.state.next_id("msg"), "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "stop_sequence" if reason == "stop" else "max_tokens", "stop_sequence": stop,
            "usage": {"input_tokens": len(prompt), "output_tokens": len(text)},
        }  # fmt: skip
        if not body.get("stream"):
            return message
        events: list[Event] = [
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": len(prompt), "output_tokens": 0},
                },
            },
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "ping"},
        ]
        events += [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ch}} for ch in text
        ]
        events += [
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": stop},
                "usage": {"output_tokens": len(text)},
            },
            {"type": "message_stop"},
        ]
        return events

    def _count_tokens(self, body: dict) -> dict:
        return {"input_tokens": len(_prompt_text(body))}

    # --- legacy completions ------------------------------------------------
    def _completions(self, body: dict) -> dict | list[Event]:
        params = self._validate(body)
        prompt = body.get("prompt")
        prompts = [prompt] if isinstance(prompt, str) else prompt
        if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
            raise ErrorReply("prompt must be a string or a list of strings", param="prompt")
        if any(len(_encodable(p)) > CONTEXT_LENGTH for p in prompts):
            raise ErrorReply(f"prompt exceeds the context length {CONTEXT_LENGTH}", param="prompt")
        logprobs = body.get("logprobs")
        if logprobs is not None and (
            isinstance(logprobs, bool) or not isinstance(logprobs, int) or not 0 <= logprobs <= 5
        ):
            raise ErrorReply("logprobs must be an integer between 0 and 5", param="logprobs")
        cid, created = self.state.next_id("cmpl"), int(time.time())
        choices, completion_tokens = [], 0
        for p_index, p in enumerate(prompts):
            texts = self._choice_texts(p, params, body.get("stop"))
            if (forced := forced_text(body)) is not None:
                texts = [(forced[: params["limit"]], "stop" if len(forced) <= params["limit"] else "length")] * params[
                    "n"
                ]
            for j, (text, reason) in enumerate(texts):
                shown = (p + text) if body.get("echo") else text
                completion_tokens += len(text)
                lp = None
                if logprobs is not None:
                    offsets, pos = [], 0
                    for ch in shown:
                        offsets.append(pos)
                        pos += len(ch)
                    lp = {
                        "tokens": list(shown),
                        "token_logprobs": [None if body.get("echo") and i == 0 else -0.05 for i in range(len(shown))],
                        "top_logprobs": [
                            None if body.get("echo") and i == 0 else {ch: -0.05} for i, ch in enumerate(shown)
                        ],
                        "text_offset": offsets,
                    }
                choices.append(
                    {"index": p_index * params["n"] + j, "text": shown, "logprobs": lp, "finish_reason": reason}
                )
        prompt_tokens = sum(len(p) for p in prompts)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if not body.get("stream"):
            return {
                "id": cid,
                "object": "text_completion",
                "created": created,
                "model": MODEL,
                "choices": choices,
                "usage": usage,
            }
        base = {"id": cid, "object": "text_completion", "created": created, "model": MODEL}
        events: list[Event] = []
        for c in choices:
            for ch in c["text"]:
                events.append(
                    {**base, "choices": [{"index": c["index"], "text": ch, "logprobs": None, "finish_reason": None}]}
                )
            events.append(
                {
                    **base,
                    "choices": [
                        {"index": c["index"], "text": "", "logprobs": None, "finish_reason": c["finish_reason"]}
                    ],
                }
            )
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**base, "choices": [], "usage": usage})
        events.append("[DONE]")
        return events


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections past it: a batch of 16 at once lost some (the consistency
    # suite's). Real servers listen with a backlog in the hundreds or more (uvicorn: 2048).
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer is what the abort and stall checks do on purpose: nothing to print. Printed
        tracebacks from server threads came with pytest INTERNALERRORs in nested runs (CPython 3.11.7 "AST constructor
        recursion depth mismatch")."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeServer:
    """The fake server on a free loopback port, in a background thread."""

    def __init__(
        self,
        deviation: Deviation | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        logit_bias: bool = False,
    ) -> None:
        self.state = FakeState(deviation, api_key=api_key)
        self.state.logit_bias = logit_bias  # honour logit_bias (off: the default fake ignores it, as some servers do)
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.httpd = _HTTPServer((host, port), handler)
        # A short poll: stopping waits for the serving loop's next wake-up, and tests stop thousands of these.
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), name="fakeserver", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host if isinstance(host, str) else host.decode()}:{port}"

    @property
    def requests(self) -> list[tuple[str, str, Any]]:
        return self.state.requests

    def set_deviation(self, deviation: Deviation | None) -> None:
        self.state.deviation = deviation or Deviation()

    def forget(self) -> None:
        """What it saw, cached and stored, gone: tests that share one server each meet it as new."""
        with self.state.lock:
            self.state.requests.clear()
            self.state.cached_prompts.clear()
            self.state.responses.clear()

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# Faults selectable from the command line, for lifecycle tests that need a real process.
def _die_after(n: int) -> Deviation:
    seen = {"n": 0}

    def request(path: str, body: dict):
        if path.startswith("/v1/chat"):
            seen["n"] += 1
            if seen["n"] > n:
                os._exit(17)
        return None

    return Deviation(request=request)


DIE_MARKER = "pytest-infer: end this process"


def _die_on_marker() -> Deviation:
    """A chat request whose messages carry ``DIE_MARKER`` ends the process: a crash a test provokes when it chooses."""

    def request(path: str, body: dict):
        if path.startswith("/v1/chat") and DIE_MARKER in json.dumps(body.get("messages")):
            os._exit(17)
        return None

    return Deviation(request=request)


def _die_on_unknown_token_ids() -> Deviation:
    """Like SGLang 0.5.23 on a completions prompt of token ids outside the vocabulary: the process ends."""

    def request(path: str, body: dict):
        prompt = body.get("prompt") if path == "/v1/completions" else None
        ids = (
            [i for part in prompt for i in (part if isinstance(part, list) else [part])]
            if isinstance(prompt, list)
            else []
        )
        if any(isinstance(i, int) and not 0 <= i < 50_000 for i in ids):
            os._exit(17)
        return None

    return Deviation(request=request)


def _cannot_generate() -> Deviation:
    """Like an engine whose core died at start: routes answer, every generation is a 500."""
    return Deviation(
        request=lambda path, body: (
            (500, error_body("EngineCore encountered an issue", "InternalServerError"))
            if path.startswith("/v1/") and path != "/v1/models"
            else None
        )
    )


def _unlisted_model() -> Deviation:
    """Like transformers serve 5.17 on a machine without a hub cache: /v1/models lists nothing, though the server
    answers for the model it was launched with."""
    return Deviation(request=lambda path, body: (200, {"object": "list", "data": []}) if path == "/v1/models" else None)


def wrong_model(name: str = "another-model") -> Deviation:
    """Like a proxy that rewrites ``model`` to ``name`` in every answer (chat, completions, Responses, Messages) and in
    every streamed event that names one; /v1/models still lists the model asked for."""

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: name if k == "model" and isinstance(v, str) else rename(v) for k, v in value.items()}
        return [rename(v) for v in value] if isinstance(value, list) else value

    return Deviation(
        response=lambda path, body, response: rename(response), events=lambda path, body, events: rename(events)
    )


def _grow_memory() -> Deviation:
    """Like SGLang 0.5.23 on n=1_000_000: a request with a huge ``n`` makes the server grow without bound."""
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


def empty_object() -> Deviation:
    """A null server: HTTP 200 ``{}`` to every request, malformed ones included. It answers nothing useful, so no check
    may pass against it."""
    return Deviation(request=lambda path, body: (200, {}), malformed=lambda path, raw: (200, {}))


def not_found() -> Deviation:
    """A null server: HTTP 404 with the error envelope to every request. Every refusal a check expects comes, and so
    does a refusal of every good request: no check may pass against it."""

    def answer(path: str, body: Any) -> tuple[int, Any]:
        return 404, error_body(f"no route {path}", "not_found_error")

    return Deviation(request=answer, malformed=answer)


def open_route(route: str) -> Deviation:
    """The API key guards every route but ``route`` (a path): it serves a caller without the key."""
    return Deviation(authorize=lambda method, path: False if path == route else None)


TRACEBACK = (
    'Traceback (most recent call last):\n  File "/opt/engine/serving/chat.py", line 212, in create\nKeyError:'
    " 'messages'"
)


def leak_in_errors(text: str = TRACEBACK, field: str = "message") -> Deviation:
    """Every error answer carries ``text`` appended to ``error.<field>`` (a traceback, a host path, the key)."""

    def error(path: str, status: int, body: Any) -> Any:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            inner = body["error"]
            return {**body, "error": {**inner, field: f"{inner.get(field) or ''} {text}".strip()}}
        return body

    return Deviation(error=error)


def stall_others(hostile: Callable[[dict], bool], seconds: float) -> Deviation:
    """A request ``hostile`` picks holds the one engine lock for ``seconds``; every other request waits for it."""
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


def stall_streams(hostile: Callable[[dict], bool], seconds: float, pace: float = 0.1) -> Deviation:
    """While a request ``hostile`` picks runs (``seconds``, then served), every other stream already past its first
    token pauses until it ends: each first token on time, the later ones held back (an engine whose heavy step holds
    the decoding of requests already streaming). Every other stream writes a token each ``pace`` seconds, so that
    some are streaming when the hostile request comes."""
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
            paced += [event, wait] if i >= 1 and event != "[DONE]" else [event]  # after the role and first token
        return paced

    return Deviation(request=request, events=events)


def slow_request(pick: Callable[[dict], bool], seconds: float) -> Deviation:
    """A request ``pick`` picks takes ``seconds`` before it is served, and no other request waits for it: an expensive
    request on a server that batches fairly."""

    def request(path: str, body: dict):
        if pick(body):
            time.sleep(seconds)
        return None

    return Deviation(request=request)


def shed_others(hostile: Callable[[dict], bool], seconds: float) -> Deviation:
    """While a request ``hostile`` picks runs (``seconds``), every other request gets 503 with the error envelope: a
    server that sheds its load instead of serving it."""
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


def refuse_large(max_bytes: int, status: int = 413) -> Deviation:
    """Like a proxy in front of the server (nginx's ``client_max_body_size`` answers 413; a rate limiter 429): a request
    whose JSON is over ``max_bytes`` gets ``status`` with an error envelope of its own, whatever it asks."""

    def request(path: str, body: dict):
        if len(json.dumps(body)) > max_bytes:
            return status, error_body(f"request of more than {max_bytes} bytes refused", "proxy_error")
        return None

    return Deviation(request=request)


def flat_errors() -> Deviation:
    """Every error answer is ``{"detail": message}`` (FastAPI's default), not the OpenAI envelope: a client finds no
    ``error.message`` to show."""

    def error(path: str, status: int, body: Any) -> Any:
        inner = body.get("error") if isinstance(body, dict) else None
        return {"detail": inner.get("message") if isinstance(inner, dict) else str(body)}

    return Deviation(error=error)


NULL_MODES: dict[str, Callable[[], Deviation]] = {"empty-object": empty_object, "not-found": not_found}

# What a request carries beside its prompt: the parameters a batching server must keep with their own request.
SAMPLING_KEYS = (
    "temperature", "top_p", "seed", "stop", "max_tokens", "max_completion_tokens", "logit_bias", "logprobs",
    "top_logprobs", "n", "response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty",
)  # fmt: skip


def shuffle_parameters(window: float = 0.5) -> Deviation:
    """A batching server that mixes up its requests' parameters: two chat requests open within ``window`` seconds of
    each other swap everything they carry beside the prompt (SAMPLING_KEYS); a request with no partner in that time,
    one sent alone, keeps its own. Each waits up to ``window`` for a partner, so alone requests are that much slower."""
    lock = threading.Lock()
    waiting: list[tuple[dict, threading.Event]] = []

    def request(path: str, body: dict):
        if path != "/v1/chat/completions":
            return None
        with lock:
            if waiting:
                other, paired = waiting.pop(0)
                for key in SAMPLING_KEYS:
                    mine, theirs = body.pop(key, None), other.pop(key, None)
                    if theirs is not None:
                        body[key] = theirs
                    if mine is not None:
                        other[key] = mine
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
    """A request hook that holds each chat request ``hold`` seconds, and a test of whether a body was open at the same
    time as another: how a fault tells a request in a batch from one alone."""
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


def diverge_in_batch(kind: str, position: int = 3, hold: float = 0.1) -> Deviation:
    """Greedy answers that change when the request shared the server with another (``_in_batch``), at token
    ``position`` (one character each): ``near-tie``: the batched answer chose another token and lists the alone one
    second in its top logprobs (a near-tie that flipped); ``outside-top-k``: another token, the alone one nowhere in its
    top logprobs (a wrong computation); ``no-logprobs``: another token, and no logprobs to judge it by."""
    if kind not in DIVERGE_KINDS:
        raise ValueError(f"kind must be one of {DIVERGE_KINDS}")
    request, was_batched = _in_batch(hold)

    def response(path: str, body: dict, response: dict) -> dict:
        if path != "/v1/chat/completions" or not was_batched(body):
            return response
        for choice in response.get("choices", []):
            message = choice.get("message") or {}
            text = message.get("content") or ""
            if len(text) <= position:
                continue
            alone = text[position]
            outside = [c for c in "zqxjkvbw" if c != alone]
            flipped = {"near-tie": next(c for c in "etaoinsh" if c != alone)}.get(kind, outside[0])
            message["content"] = text[:position] + flipped + text[position + 1 :]
            entries = (choice.get("logprobs") or {}).get("content")
            if kind == "no-logprobs" or not entries:
                choice["logprobs"] = None
                continue
            k = len(entries[position]["top_logprobs"]) or 2
            top = [flipped, alone, *outside[1:]][:k] if kind == "near-tie" else outside[:k]
            entries[position] = {
                **_logprob_entry(flipped, k),
                "top_logprobs": [
                    {"token": t, "logprob": -0.05 - i * 0.01, "bytes": list(t.encode())} for i, t in enumerate(top)
                ],
            }
        return response

    return Deviation(request=request, response=response)


def perturb_logprobs(delta: float) -> Deviation:
    """A kernel that moves the numbers: every logprob of a text completion's answer (the chosen token's and its top
    alternatives') shifted by ``delta`` nats, the tokens themselves unchanged."""

    def response(path: str, body: dict, response: dict) -> dict:
        if path != "/v1/completions":
            return response
        for choice in response.get("choices", []):
            lp = choice.get("logprobs") or {}
            lp["token_logprobs"] = [None if v is None else v + delta for v in lp.get("token_logprobs") or []]
            lp["top_logprobs"] = [
                None if top is None else {t: v + delta for t, v in top.items()} for top in lp.get("top_logprobs") or []
            ]
        return response

    return Deviation(response=response)


FAULTS: dict[str, Callable[[], Deviation]] = {
    "none": Deviation,
    "die-after-0": lambda: _die_after(0),  # the first chat request ends the process
    "die-after-1": lambda: _die_after(1),
    "die-after-3": lambda: _die_after(
        3
    ),  # launched vLLM: the readiness probe's generation, its first structured request, one test's
    "cannot-generate": _cannot_generate,
    "unlisted-model": _unlisted_model,
    "wrong-model": wrong_model,
    "die-on-unknown-token-ids": _die_on_unknown_token_ids,
    "die-on-marker": _die_on_marker,
    "grow-memory": _grow_memory,
    **NULL_MODES,
}


@contextmanager
def serving_process(fault: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The fake server with ``fault`` (a name in FAULTS) in a process of its own, one that can really die; its base URL
    once it listens. ``env``: the process's whole environment (``VLLM_API_KEY`` sets its key)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", __name__, "--port", str(port), "--fault", fault], env=env)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="fakeserver")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--fault", choices=sorted(FAULTS), default="none")
    parser.add_argument("--startup-delay", type=float, default=0.0)
    parser.add_argument("--exit-at-start", type=int, default=None, help="print log lines, then exit with this code")
    parser.add_argument(
        "--print-env",
        action="append",
        default=[],
        help="log this variable's value at start (servers that dump their config)",
    )
    args = parser.parse_args(argv)
    for name in args.print_env:
        print(f"config: {name}={os.environ.get(name, '')}", flush=True)
    print(f"fakeserver starting on {args.host}:{args.port} (fault {args.fault})", flush=True)
    if args.exit_at_start is not None:
        for i in range(5):
            print(f"loading shard {i}", flush=True)
        print("RuntimeError: simulated start-up crash", flush=True)
        raise SystemExit(args.exit_at_start)
    time.sleep(args.startup_delay)
    server = FakeServer(FAULTS[args.fault](), args.host, args.port, api_key=os.environ.get("VLLM_API_KEY") or None)
    print("fakeserver ready", flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()

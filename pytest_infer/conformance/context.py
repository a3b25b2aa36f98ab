"""What a check talks to: raw HTTP and SSE through httpx, and the official openai SDK (sync and
async).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, Self, TypeVar

import httpx

from ..client.curl import curl_command
from ..client.endpoint import Endpoint
from ..client.errors import ERROR_HOOKS, carries_error
from ..client.sse import SSEStream, read_sse
from ..outcomes import MissingExtra, NotExercised, optional_module
from .failures import CheckFailure, Excused, Inconclusive, Unsupported, trim
from .table import DONE

if TYPE_CHECKING:
    from .scripts import Scripting

USER = [{"role": "user", "content": "Write a short story about a cat who learns to sail."}]
CLIENT_ERRORS = (400, 404, 422)
REFUSALS = (400, 404, 405, 422, 501)
AnyExchange = TypeVar("AnyExchange", "Exchange", "StreamExchange")
Judged = TypeVar("Judged")


@dataclass(slots=True)
class Exchange:
    """One request and its response, with the curl line that repeats it."""

    method: str
    path: str
    body: Any
    status: int
    text: str
    curl: str
    data: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == 200


@dataclass(slots=True)
class StreamExchange:
    """A streamed request: the strict SSE reading of its response, and the curl line."""

    body: Any
    curl: str
    sse: SSEStream
    path: str = ""

    @property
    def ok(self) -> bool:
        return self.sse.status == 200


@dataclass(slots=True)
class CheckContext:
    """The server under test, as the checks see it. ``unsupported`` maps feature -> reason."""

    endpoint: Endpoint
    framework: str = "endpoint"
    version: str | None = None
    tiny: bool = False
    # why the model takes no part in a tool conversation (a built-in base model whose template has
    # no tool role), so what only its choices would show is not judged; None: a model taken at its
    # word
    no_tools: str | None = None
    unsupported: dict[str, str] = field(default_factory=dict)
    http: httpx.Client | None = None
    shapes: Callable[[str, Any], None] | None = (
        None  # (endpoint, answer) of every 200 answer and streamed chunk: API drift
    )
    request_fields: Callable[[str, dict[str, str]], None] | None = (
        None  # (endpoint, {field: honoured|ignored|refused|error})
    )
    # how to force the model's text, and the parsers the server runs (scripts.py)
    scripting: Scripting | None = None
    # during a run with declarations (``CheckRegistry.run``): the declaration that excuses a failure
    # (its description, None: none does), and what was excused so far
    excuse: Callable[[CheckFailure], str | None] | None = None
    excused: list[Excused] = field(default_factory=list)
    _openai: Any = None
    _models: Any = None

    def __post_init__(self) -> None:
        if self.http is None:
            self.http = self.endpoint.http(timeout=self.timeout, event_hooks=ERROR_HOOKS)

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def timeout(self) -> float:
        return self.endpoint.timeout

    def close(self) -> None:
        if self._openai is not None:
            self._openai.close()
        assert self.http is not None
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- raw HTTP --------------------------------------------------------
    def curl(self, method: str, path: str, body: Any = None, *, stream: bool = False) -> str:
        return curl_command(
            method,
            f"{self.base_url}{path}",
            body,
            authenticated=bool(self.endpoint.api_key),
            stream=stream,
        )

    def request(
        self, method: str, path: str, body: Any = None, *, raw: bytes | None = None
    ) -> Exchange:
        """Send ``body`` as JSON (or ``raw`` bytes as they are) and keep the whole answer."""
        assert self.http is not None
        if raw is not None:
            resp = self.http.request(
                method, path, content=raw, headers={"Content-Type": "application/json"}
            )
            shown: Any = raw.decode("utf-8", "replace")
        else:
            resp = (
                self.http.request(method, path, json=body)
                if body is not None
                else self.http.request(method, path)
            )
            shown = body
        try:
            data = resp.json()
        except ValueError:
            data = None
        if self.shapes is not None and resp.status_code == 200 and isinstance(data, dict):
            self.shapes(f"{method} {path}", data)
        return Exchange(
            method,
            path,
            shown,
            resp.status_code,
            resp.text,
            self.curl(method, path, shown),
            data,
            dict(resp.headers),
        )

    def get(self, path: str) -> Exchange:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Exchange:
        return self.request("POST", path, body)

    def chat_body(self, **params: Any) -> dict[str, Any]:
        return {"model": self.model, "messages": USER, **params}

    def chat(self, **params: Any) -> Exchange:
        return self.post("/v1/chat/completions", self.chat_body(**params))

    def completion(self, **params: Any) -> Exchange:
        return self.post(
            "/v1/completions", {"model": self.model, "prompt": "Once upon a time", **params}
        )

    def stream(self, path: str, body: dict[str, Any], *, terminated: bool = True) -> StreamExchange:
        """POST ``body`` with ``stream: true`` and read the answer strictly as SSE (``terminated``:
        ends with [DONE])."""
        assert self.http is not None
        body = {**body, "stream": True}
        started = time.monotonic()
        with self.http.stream(
            "POST", path, json=body, headers={"Accept": "text/event-stream"}
        ) as resp:
            sse = read_sse(resp, started, terminated=terminated)
        if self.shapes is not None and sse.status == 200:
            for chunk in sse.chunks:
                self.shapes(f"POST {path} stream", chunk)
            if terminated and sse.done:
                # the terminator is part of the shape a client reads
                self.shapes(f"POST {path} stream", {DONE: True})
        return StreamExchange(body, self.curl("POST", path, body, stream=True), sse, path)

    def chat_stream(self, **params: Any) -> StreamExchange:
        return self.stream("/v1/chat/completions", self.chat_body(**params))

    # --- what the server exposes ------------------------------------------
    def models(self) -> Exchange:
        if self._models is None:
            self._models = self.get("/v1/models")
        return self._models

    def context_length(self) -> int | None:
        """The model's context where ``/v1/models`` advertises it (vLLM's ``max_model_len``,
        SGLang).
        """
        return self.endpoint.context_length(self.http)

    # --- the official SDK -------------------------------------------------
    def openai(self) -> Any:
        """The sync ``openai.OpenAI`` client, retries off (a retry must never hide a failure)."""
        if self._openai is None:
            # lazy: openai takes about a second to import; only the SDK checks need it
            import openai

            self._openai = openai.OpenAI(**self.endpoint.openai_kwargs())
        return self._openai

    def anthropic(self) -> Any:
        """A sync ``anthropic.Anthropic`` client on the same server, retries off; the key also goes
        as a bearer token, which is what OpenAI-compatible servers check (the SDK's own header is
        ``x-api-key``). Without the ``anthropic`` extra the check that needs it is not exercised,
        and says which extra to install."""
        try:
            anthropic = optional_module("anthropic", "anthropic", "the Messages API's SDK checks")
        except MissingExtra as exc:
            raise NotExercised(str(exc)) from exc
        return anthropic.Anthropic(
            base_url=self.base_url,
            api_key=self.endpoint.api_key or "EMPTY",
            default_headers=self.endpoint.headers,
            timeout=self.timeout,
            max_retries=0,
        )

    def async_openai(self) -> Any:
        """A new ``openai.AsyncOpenAI`` client; use it as ``async with``, inside the check's event
        loop.
        """
        # lazy: openai takes about a second to import; only the SDK checks need it
        import openai

        return openai.AsyncOpenAI(**self.endpoint.openai_kwargs())

    # --- verdicts -----------------------------------------------------------
    def fail(
        self, expected: str, got: Any, where: Exchange | StreamExchange | str | None = None
    ) -> NoReturn:
        """A failure that ends the check, excused or not (what comes after it cannot be judged)."""
        failure = CheckFailure(expected, got, _curl_of(where))
        self.excused_now(failure)
        raise failure

    def expect(
        self,
        condition: object,
        expected: str,
        got: Any,
        where: Exchange | StreamExchange | str | None = None,
    ) -> None:
        """A failed ``condition`` ends the check, unless a declaration excuses it: then it is
        recorded and the check goes on, so a failure no declaration names, later in the same check,
        still fails it."""
        if not condition:
            failure = CheckFailure(expected, got, _curl_of(where))
            if not self.excused_now(failure):
                raise failure

    def excused_now(self, failure: CheckFailure) -> bool:
        """Record ``failure`` where a declaration excuses it, or where it judges a request whose
        answer an excused failure already showed wrong (it follows from that one); False: it stays a
        failure."""
        if self.excuse is None:
            return False
        declaration = self.excuse(failure)
        if declaration is None and not (
            failure.curl and any(e.failure.curl == failure.curl for e in self.excused)
        ):
            return False
        self.excused.append(Excused(failure, declaration))
        return True

    def was_excused(self, failure: CheckFailure) -> bool:
        return any(e.failure is failure for e in self.excused)

    def expect_ok(self, ex: Exchange | StreamExchange, what: str) -> None:
        """A request that must succeed; its failure says what the check was trying to do."""
        if isinstance(ex, StreamExchange):
            if ex.sse.status != 200:
                self.fail(f"HTTP 200 for {what}", f"HTTP {ex.sse.status}: {ex.sse.raw}", ex)
        elif ex.status != 200:
            self.fail(f"HTTP 200 for {what}", f"HTTP {ex.status}: {ex.text}", ex)

    def offered(self, feature: str, ex: AnyExchange) -> AnyExchange:
        """An optional feature the server refuses outright (4xx/501) is "unsupported", in the
        server's own words.

        A server that accepts the request and gets it wrong is broken, not
        unsupported: only a refusal counts, and its message is the reason shown.
        """
        status = ex.sse.status if isinstance(ex, StreamExchange) else ex.status
        text = ex.sse.raw if isinstance(ex, StreamExchange) else ex.text
        if status in REFUSALS:
            raise Unsupported(feature, f"the server refuses it: HTTP {status}: {trim(text, 300)}")
        return ex

    def expect_json_object(self, ex: Exchange, what: str) -> dict[str, Any]:
        self.expect_ok(ex, what)
        self.expect(isinstance(ex.data, dict), f"a JSON object for {what}", ex.text, ex)
        return ex.data

    def expect_client_error(self, ex: Exchange | StreamExchange, what: str) -> None:
        status = ex.sse.status if isinstance(ex, StreamExchange) else ex.status
        text = ex.sse.raw if isinstance(ex, StreamExchange) else ex.text
        self.expect(
            status in CLIENT_ERRORS, f"HTTP 400/404/422 for {what}", f"HTTP {status}: {text}", ex
        )

    def expect_envelope(
        self,
        ex: Exchange | StreamExchange,
        problems_of: Callable[[Any], list[str]] | None = None,
        expected: str = "the error envelope",
    ) -> None:
        """The error body is what the SDK turns into a message (``envelope_problems`` unless told
        otherwise).
        """
        if isinstance(ex, StreamExchange):  # an error answered to stream=true comes as a plain body
            text = ex.sse.raw
            try:
                data = ex.sse.json()
            except ValueError:
                data = None
        else:
            text, data = ex.text, ex.data
        problems = (problems_of or envelope_problems)(data)
        self.expect(not problems, expected, f"{'; '.join(problems)}: {text}", ex)

    def expect_refused(self, ex: Exchange | StreamExchange, what: str) -> None:
        """Bad input: a 4xx with the error envelope."""
        self.expect_client_error(ex, what)
        self.expect_envelope(ex)

    def expect_stream(self, ex: StreamExchange, what: str) -> list[dict[str, Any]]:
        """A stream that must answer 200 with JSON chunks and no error event; returns the chunks.

        Framing faults (a missing ``[DONE]``, stray lines) are the business of
        ``stream.sse-framing`` alone, so one fault is reported once, not by every
        streaming check.
        """
        self.expect_ok(ex, what)
        self.expect(
            ex.sse.chunks,
            f"JSON chunks in the stream for {what}",
            "; ".join(ex.sse.problems) + f" | raw: {ex.sse.raw}",
            ex,
        )
        errors = [c for c in ex.sse.chunks if carries_error(c)]
        self.expect(not errors, f"no error event in the stream for {what}", errors, ex)
        return ex.sse.chunks

    def expect_framing(self, ex: StreamExchange, what: str) -> None:
        self.expect(
            not ex.sse.problems,
            f"well-formed SSE ending with 'data: [DONE]' for {what}",
            "; ".join(ex.sse.problems) + f" | raw: {ex.sse.raw}",
            ex,
        )

    def expect_typed_events(self, ex: StreamExchange, what: str) -> list[dict[str, Any]]:
        """A stream of typed events (Responses, Anthropic Messages): 200, sound framing, JSON
        objects whose ``type`` is the SSE event name where one is given; returns the events' data in
        order."""
        self.expect_ok(ex, what)
        self.expect(
            not ex.sse.problems,
            f"well-formed SSE for {what}",
            "; ".join(ex.sse.problems) + f" | raw: {ex.sse.raw}",
            ex,
        )
        self.expect(
            len(ex.sse.chunks) == len(ex.sse.events) and ex.sse.chunks,
            f"JSON object events for {what}",
            ex.sse.raw,
            ex,
        )
        for event, data in zip(ex.sse.events, ex.sse.chunks, strict=True):
            self.expect(
                isinstance(data.get("type"), str), f"a type in every event of {what}", data, ex
            )
            # no event line: the SSE default name
            named = event.event if event.event != "message" else data["type"]
            self.expect(
                named == data["type"],
                f"the event name to be its type {data['type']!r}",
                f"event: {event.event}",
                ex,
            )
        return ex.sse.chunks

    # --- evidence: what a pass judged --------------------------------------------
    def nonempty(
        self, value: Judged, what: str, where: Exchange | StreamExchange | str | None = None
    ) -> Judged:
        """``value`` where it holds something to judge; None or an empty string or collection leaves
        the check nothing to judge, so it is inconclusive, naming ``what`` was missing (an ``all()``
        over nothing is no pass)."""
        if value is None or (
            isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)) and not value
        ):
            curl = _curl_of(where)
            raise Inconclusive(f"nothing to judge: no {what}" + (f": {curl}" if curl else ""))
        return value

    def agree(
        self,
        want: Any,
        got: Any,
        expected: str,
        where: Exchange | StreamExchange | str | None = None,
    ) -> None:
        """``got`` equals ``want``, where ``want`` is there: two absent values (None on both sides)
        are not agreement."""
        self.nonempty(want, f"reference value for {expected}", where)
        self.expect(got == want, expected, got, where)

    def control(
        self,
        ex: AnyExchange,
        what: str,
        *,
        feature: str | None = None,
        problems_of: Callable[[Any], list[str]] | None = None,
    ) -> AnyExchange:
        """The positive control of a check that expects a refusal: ``ex`` is the same request
        without the fault, at the same route, and must get a correct answer; otherwise a refusal of
        the faulty request shows nothing (a server that refuses everything refuses it too), and the
        check is inconclusive, naming the control.

        ``feature``: a refusal of the control says the server does not offer it (unsupported).
        ``problems_of`` judges the answer (the JSON body, or a stream's chunks); by default what the
        route's answers must carry."""
        if feature is not None:
            self.offered(feature, ex)
        if isinstance(ex, StreamExchange):
            status, text, answer = ex.sse.status, ex.sse.raw, ex.sse.chunks
        else:
            status, text, answer = ex.status, ex.text, ex.data
        judge = problems_of or (
            lambda body: answer_problems(ex.path, body, stream=isinstance(ex, StreamExchange))
        )
        problems = [f"HTTP {status}"] if status != 200 else judge(answer)
        if problems:
            raise Inconclusive(
                f"the positive control failed: {what} (the same request without the fault) got "
                f"{'; '.join(problems)}: "
                f"{trim(text, 300)}; so a refusal of the faulty request shows nothing. Control: "
                f"{ex.curl}"
            )
        return ex

    def seeded(
        self, send: Any, feature: str, judge_now: Any = None, attempts: int = 3, seed: int = 1234
    ) -> Exchange:
        """Send ``send(seed)`` with a few seeds until a response ends by itself (finish_reason !=
        length).

        Constrained decoding on a random model may loop until ``max_tokens``;
        that says nothing about the server, so it is inconclusive, not a
        failure, unless ``judge_now(data)`` sees that the cut output already
        deviates (unconstrained text where JSON should start): then it is
        returned for the check to judge.
        """
        last: Exchange | None = None
        for i in range(attempts):
            last = send(seed + i)
            self.offered(feature, last)
            if not last.ok or not isinstance(last.data, dict):
                return last
            choices = last.data.get("choices") or [{}]
            if choices[0].get("finish_reason") != "length" or (
                judge_now is not None and judge_now(last.data)
            ):
                return last
        assert last is not None
        raise Inconclusive(
            f"the model ran to max_tokens with {attempts} seeds, so the output cannot be judged: "
            f"{last.curl}"
        )


def _curl_of(where: Exchange | StreamExchange | str | None) -> str:
    return where if isinstance(where, str) else where.curl if where is not None else ""


def envelope_problems(data: Any) -> list[str]:
    """What is wrong with an error body, measured against ``{"error": {"message", "type", "param",
    "code"}}``.
    """
    if not isinstance(data, dict) or not isinstance(data.get("error"), dict):
        return ['the body is not {"error": {...}}']
    err = data["error"]
    problems = []
    if not isinstance(err.get("message"), str) or not err.get("message"):
        problems.append("error.message is not a non-empty string")
    if not isinstance(err.get("type"), str):
        problems.append("error.type is not a string")
    return problems


def answer_problems(path: str, answer: Any, *, stream: bool = False) -> list[str]:
    """What keeps ``answer`` (a JSON body, or a stream's chunks) from being a correct answer of
    ``path``: the least a positive control must show. Only the route's core is judged here; each
    check judges the rest."""
    if stream:
        if not isinstance(answer, list) or not answer:
            return ["no JSON chunks in the stream"]
        errors = [c for c in answer if carries_error(c)]
        return [f"an error event {trim(errors[0], 200)}"] if errors else []
    if not isinstance(answer, dict) or not answer:
        return [f"the body is {trim(answer, 100)}, not a JSON object with an answer"]
    if carries_error(answer):
        return ["an error body"]
    route = path.split("?")[0]
    choices = answer.get("choices")
    first = (
        choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    )
    if route == "/v1/chat/completions" and not isinstance(first.get("message"), dict):
        return ["no choices[0].message"]
    if route == "/v1/completions" and not isinstance(first.get("text"), str):
        return ["no choices[0].text"]
    if route == "/v1/responses" and (answer.get("object") != "response" or not answer.get("id")):
        return [f"object is {answer.get('object')!r}, not a response with an id"]
    if route == "/v1/messages" and answer.get("type") != "message":
        return [f"type is {answer.get('type')!r}, not 'message'"]
    if route == "/v1/embeddings" and not (isinstance(answer.get("data"), list) and answer["data"]):
        return ["no data[] of embeddings"]
    return []


def object_or_empty(value: Any) -> dict[str, Any]:
    """``value`` where it is a JSON object, else {}: a malformed part of an answer is judged, never
    crashed on.
    """
    return value if isinstance(value, dict) else {}


def envelope_type_problems(data: Any) -> list[str]:
    """``param`` and ``code`` must be present and strings or null (the SDK types them so)."""
    if not isinstance(data, dict) or not isinstance(data.get("error"), dict):
        return ['the body is not {"error": {...}}']
    problems = []
    for key in ("param", "code"):
        if key not in data["error"]:
            problems.append(f"error.{key} is missing")
        elif not (data["error"][key] is None or isinstance(data["error"][key], str)):
            problems.append(
                f"error.{key} is {json.dumps(data['error'][key])}, not a string or null"
            )
    return problems

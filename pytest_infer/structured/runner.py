"""Send one schema to a server along one request path and classify what comes back.

A request path is how a framework takes a schema: the OpenAI ``response_format``
(streamed or not) or the framework's own extra field, shaped by its adapter
(``structured_output_field``, ``structured_output_body``). Every attempt keeps its
evidence (request body, raw output, validator message, ``curl`` line), so a
failure can be reported and replayed exactly. A failing attempt also keeps what
the server wrote to its log while the request ran (``Attempt.server_log``):
often the root cause in the server's own words, such as a grammar compiler's
warning that it ignores a keyword.
"""

from __future__ import annotations

import json
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from ..adapters import registry
from ..adapters.base import Adapter
from ..client.http import InferClient
from ..client.sse import read_sse
from .classify import AnswerClass, Classified, classify_output, classify_status

CHAT = "/v1/chat/completions"
# characters of schema shown in the prompt; the tiny model's context is 1024 tokens
PROMPT_SCHEMA_LIMIT = 300
LOG_LINES = 40  # server log lines kept per failing attempt (the last ones)
LOG_WAIT = 0.2  # seconds a failing attempt waits for log lines flushed after its response
LOG_POLL = 0.02


class ServerLog(Protocol):
    """Where a server's log can be read by window (``ServerInfo``): a mark now, the complete lines
    after it.
    """

    def log_mark(self) -> int: ...

    def log_since(self, mark: int, max_lines: int = 40) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class RequestPath:
    """One way of sending a schema: ``field`` names the body field, ``stream`` whether to stream;
    ``fields`` shapes a framework's own field (its adapter's ``structured_output_body``)."""

    name: str
    field: str = "response_format"
    stream: bool = False
    fields: Callable[[dict], dict[str, Any]] | None = None

    def schema_fields(self, schema: dict) -> dict[str, Any]:
        if self.fields is not None:
            return self.fields(schema)
        if self.field == "response_format":
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": schema, "strict": True},
                }
            }
        raise ValueError(f"no way to send a schema on field {self.field!r}")


RESPONSE_FORMAT = RequestPath("response_format")
RESPONSE_FORMAT_STREAM = RequestPath("response_format-stream", stream=True)


def native_path(adapter: Adapter) -> RequestPath | None:
    """The framework's own schema field as a request path, if its adapter names one."""
    field = adapter.structured_output_field
    if field is None:
        return None
    return RequestPath(
        f"{adapter.name}-{field}", field=field, fields=adapter.structured_output_body
    )


def paths_for(adapter: Adapter | str) -> list[RequestPath]:
    """Every path a framework takes a schema on: response_format, streamed, and its own field if it
    has one.

    ``adapter``: the server's (``infer_server.adapter``); a framework's name is deprecated (an
    unknown one has no field of its own).
    """
    if isinstance(adapter, str):
        warnings.warn(
            "paths_for(name) is deprecated: pass the server's adapter (infer_server.adapter)",
            DeprecationWarning,
            stacklevel=2,
        )
        found = registry.ADAPTERS.get(adapter)
        native = native_path(found) if found is not None else None
    else:
        native = native_path(adapter)
    return [RESPONSE_FORMAT, RESPONSE_FORMAT_STREAM, *([native] if native else [])]


@dataclass(frozen=True, slots=True)
class Sampling:
    """Seeded sampling: constrained decoding terminates and is deterministic per seed."""

    temperature: float = 0.8
    seed: int = 1234


# Greedy decoding: the text depends on the model and the grammar's mask only, not on a version's
# random stream, so the same schema gets the same answer from two versions unless their grammars
# differ.
GREEDY = Sampling(0.0, 0)


@dataclass(slots=True)
class Attempt:
    """One request and its verdict, with everything a reproducer needs."""

    schema: Any
    path: str
    body: dict
    verdict: Classified
    curl: str
    status: int | None = None
    output: str | None = None
    finish_reason: str | None = None
    seconds: float = 0.0
    server_log: tuple[str, ...] = ()  # for a failing attempt: the server's log lines while it ran

    def reproducer(self) -> dict[str, Any]:
        return {
            "signature": self.verdict.signature,
            "outcome": self.verdict.outcome.value,
            "message": self.verdict.message,
            "path": self.path,
            "schema": self.schema,
            "request": self.body,
            "status": self.status,
            "output": self.output,
            "finish_reason": self.finish_reason,
            "temperature": self.body.get("temperature"),
            "seed": self.body.get("seed"),
            "max_tokens": self.body.get("max_tokens"),
            "curl": self.curl,
            "server_log": list(self.server_log),
        }

    def describe(self) -> str:
        """The failure as a reader needs it: schema, output, message, the server's log lines,
        request, curl.
        """
        output = (
            self.output
            if self.output is None or len(self.output) < 2000
            else self.output[:2000] + "...(cut)"
        )
        return "\n".join(
            [
                f"{self.verdict.signature} via {self.path}: {self.verdict.message}",
                f"  schema:   {json.dumps(self.schema, ensure_ascii=False)}",
                f"  output:   {output!r} (HTTP {self.status}, finish_reason {self.finish_reason})",
                (
                    f"  sampling: temperature {self.body.get('temperature')}, seed "
                    f"{self.body.get('seed')}, max_tokens"
                    f" {self.body.get('max_tokens')}"
                ),
                *log_section(self.server_log),
                f"  request:  {json.dumps(self.body, ensure_ascii=False)}",
                f"  reproduce: {self.curl}",
            ]
        )


LOG_SECTION = "server log while this request ran:"


def log_section(lines: tuple[str, ...] | list[str]) -> list[str]:
    """The failure message's section of server log lines (none without lines)."""
    return [f"  {LOG_SECTION}", *(f"    | {line}" for line in lines)] if lines else []


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def prompt_for(schema: Any) -> str:
    text = json.dumps(schema, ensure_ascii=False)
    if len(text) <= PROMPT_SCHEMA_LIMIT:
        return f"Reply with only a JSON value that matches this JSON Schema: {text}"
    return "Reply with only a JSON value that matches the given JSON Schema."


def evidence_of(answers: dict[str, Counter[str]]) -> str:
    """Requests sent and what came back (each outcome's count), by request path, in one line."""
    return "; ".join(
        f"POST {CHAT} via {path}: {counts.total()} answers, "
        + ", ".join(f"{n} {outcome}" for outcome, n in counts.most_common())
        for path, counts in answers.items()
    )


class StructuredRunner:
    """Runs schemas against one server. ``alive`` says whether the server process still exists
    (for launched servers); reachability is always checked over HTTP as well. ``server_log``
    (the ``ServerInfo`` of a launched server) lets a failing attempt keep the log lines the server
    wrote while it ran."""

    def __init__(
        self,
        client: InferClient,
        *,
        sampling: Sampling = Sampling(),
        timeout: float = 60.0,
        alive: Callable[[], bool] | None = None,
        server_log: ServerLog | None = None,
    ) -> None:
        self.client = client
        self.server_log = server_log
        self.sampling = sampling
        self.timeout = timeout
        self._process_alive = alive or (lambda: True)
        self._cache: dict[tuple[str, str, int, Sampling], Attempt] = {}
        # request path -> each outcome's count of the requests it sent
        self.answers: dict[str, Counter[str]] = {}

    def separate(self) -> StructuredRunner:
        """A runner on the same server whose requests are counted apart: a probe several tests share
        is no test's evidence."""
        return StructuredRunner(
            self.client,
            sampling=self.sampling,
            timeout=self.timeout,
            alive=self._process_alive,
            server_log=self.server_log,
        )

    def evidence(self) -> str:
        """What this runner sent and what came back, by request path: what a pass judged ("" if it
        sent nothing).
        """
        return evidence_of(self.answers)

    def body(
        self, schema: Any, path: RequestPath, max_tokens: int, sampling: Sampling | None = None
    ) -> dict[str, Any]:
        sampling = sampling or self.sampling
        body: dict[str, Any] = {
            "model": self.client.model,
            "messages": [{"role": "user", "content": prompt_for(schema)}],
            "max_tokens": max_tokens,
            "temperature": sampling.temperature,
            "seed": sampling.seed,
            **path.schema_fields(schema),
        }
        if path.stream:
            body["stream"] = True
        return body

    def cached(
        self, schema: Any, path: RequestPath, max_tokens: int, sampling: Sampling | None = None
    ) -> Attempt | None:
        return self._cache.get(
            (path.name, canonical(schema), max_tokens, sampling or self.sampling)
        )

    def run(
        self,
        schema: Any,
        path: RequestPath,
        max_tokens: int,
        *,
        sampling: Sampling | None = None,
        fresh: bool = False,
        refuse: bool = False,
    ) -> Attempt:
        """One request; answers from the cache unless ``fresh`` (the server is taken as
        deterministic per seed).

        A failing attempt keeps the server's log lines written while it ran; with ``refuse`` (the
        schema must get a clean 4xx) every answer but a rejection counts as failing for that.
        """
        sampling = sampling or self.sampling
        key = (path.name, canonical(schema), max_tokens, sampling)
        if not fresh and key in self._cache:
            return self._cache[key]
        attempt = self.send(
            schema, self.body(schema, path, max_tokens, sampling), path=path, refuse=refuse
        )
        self._cache[key] = attempt
        return attempt

    def mark_log(self) -> int | None:
        """Where the server's log ends now, for ``logged_since``; None without a server log."""
        return self.server_log.log_mark() if self.server_log is not None else None

    def logged_since(self, mark: int | None) -> tuple[str, ...]:
        """The server's complete log lines after ``mark`` (the last ``LOG_LINES``).

        A server may flush a line a little after its answer (a log handler's buffer, the masking
        copier's thread): this polls for up to ``LOG_WAIT`` seconds, and stops as soon as there are
        lines and the log has stopped growing. Only failures call it, so passing requests never
        wait.
        """
        log = self.server_log
        if log is None or mark is None:
            return ()
        deadline = time.monotonic() + LOG_WAIT
        lines: list[str] = []
        seen = -1
        while True:
            size = log.log_mark()
            if size == seen and lines:
                break  # there are lines, and nothing more came since the last look
            if size != seen:
                lines, seen = log.log_since(mark, LOG_LINES), size
            if time.monotonic() >= deadline:
                break
            time.sleep(LOG_POLL)
        return tuple(lines)

    def send(
        self,
        schema: Any,
        body: dict[str, Any],
        *,
        path: RequestPath = RESPONSE_FORMAT,
        refuse: bool = False,
    ) -> Attempt:
        """Send ``body`` as it is (a request shaped by the caller, e.g. a grammar probe) and
        classify the answer against ``schema``."""
        attempt = Attempt(
            schema,
            path.name,
            body,
            Classified(AnswerClass.VALID),
            self.client.curl("POST", CHAT, body, stream=path.stream),
        )
        mark = self.mark_log()
        started = time.monotonic()
        try:
            if path.stream:
                self._streamed(attempt, body)
            else:
                self._plain(attempt, body)
        except httpx.TimeoutException as exc:
            attempt.verdict = self._lost(
                f"no answer within {self.timeout:g} s ({type(exc).__name__})", AnswerClass.TIMEOUT
            )
        except httpx.TransportError as exc:
            attempt.verdict = self._lost(
                f"the connection failed: {type(exc).__name__}: {exc}", AnswerClass.SERVER_ERROR
            )
        attempt.seconds = round(time.monotonic() - started, 3)
        outcome = attempt.verdict.outcome
        self.answers.setdefault(path.name, Counter())[outcome.value] += 1
        if outcome.failed or (refuse and outcome is not AnswerClass.REJECTED):
            attempt.server_log = self.logged_since(mark)
        return attempt

    def _lost(self, message: str, outcome: AnswerClass) -> Classified:
        if not self.reachable():
            return Classified(
                AnswerClass.DIED, f"{message}; afterwards the server no longer answers"
            )
        return Classified(outcome, message)

    def _plain(self, attempt: Attempt, body: dict) -> None:
        resp = self.client.post(CHAT, json=body, timeout=self.timeout)
        attempt.status = resp.status_code
        if (verdict := classify_status(resp.status_code, resp.text)) is not None:
            attempt.verdict = verdict
            return
        try:
            choice = resp.json()["choices"][0]
            attempt.output, attempt.finish_reason = (
                choice["message"].get("content"),
                choice.get("finish_reason"),
            )
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            attempt.verdict = Classified(
                AnswerClass.SERVER_ERROR,
                f"HTTP 200 without a chat completion ({type(exc).__name__}): {resp.text[:300]}",
            )
            return
        attempt.verdict = classify_output(attempt.schema, attempt.output, attempt.finish_reason)

    def _streamed(self, attempt: Attempt, body: dict) -> None:
        with self.client.stream("POST", CHAT, json=body, timeout=self.timeout) as resp:
            stream = read_sse(resp)
        attempt.status = stream.status
        if (verdict := classify_status(stream.status, stream.raw)) is not None:
            attempt.verdict = verdict
            return
        errors = [c["error"] for c in stream.chunks if isinstance(c.get("error"), dict)]
        if errors:  # refused inside the stream, after HTTP 200 (vLLM does this for a bad schema)
            code = errors[0].get("code")
            status = code if isinstance(code, int) else 500
            verdict = classify_status(status, json.dumps(errors[0])) or Classified(
                AnswerClass.SERVER_ERROR, json.dumps(errors[0])
            )
            attempt.verdict = Classified(
                verdict.outcome, f"in the stream after HTTP 200: {verdict.message}"
            )
            return
        # a stream cut off is a server error; one that only lacks 'data: [DONE]' after its
        # finish_reason is judged by its content here (the conformance suite reports the framing)
        broken = [
            p
            for p in stream.problems
            if "broke off" in p or ("[DONE]" in p and not self._finished(stream))
        ]
        parts: list[str] = []
        for chunk in stream.chunks:
            for choice in chunk.get("choices") or []:
                if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                if isinstance(delta.get("content"), str):
                    parts.append(delta["content"])
                attempt.finish_reason = choice.get("finish_reason") or attempt.finish_reason
        attempt.output = "".join(parts)
        if broken:
            attempt.verdict = self._lost(
                f"the stream did not end properly: {'; '.join(broken)}", AnswerClass.SERVER_ERROR
            )
            return
        attempt.verdict = classify_output(attempt.schema, attempt.output, attempt.finish_reason)

    @staticmethod
    def _finished(stream) -> bool:
        return any(
            isinstance(c, dict) and c.get("finish_reason")
            for chunk in stream.chunks
            for c in chunk.get("choices") or []
        )

    def reachable(self) -> bool:
        """Does the server still answer at all (process alive and ``GET /v1/models`` succeeds)?"""
        if not self._process_alive():
            return False
        try:
            return self.client.get("/v1/models", timeout=10).status_code == 200
        except httpx.HTTPError:
            return False

    def healthy(self) -> tuple[bool, str]:
        """Does an ordinary chat completion still succeed? (What a survival check asks after a bad
        schema.)
        """
        if not self._process_alive():
            return False, "the server process has died"
        try:
            body = {
                "model": self.client.model,
                "messages": [{"role": "user", "content": "Say hi."}],
                "max_tokens": 4,
                "temperature": 0,
            }
            resp = self.client.post(CHAT, json=body, timeout=self.timeout)
        except httpx.HTTPError as exc:
            return False, f"a normal request then failed: {type(exc).__name__}: {exc}"
        if resp.status_code != 200:
            return False, f"a normal request then got HTTP {resp.status_code}: {resp.text[:300]}"
        try:
            content = resp.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            return (
                False,
                f"a normal request then got HTTP 200 without a chat completion: {resp.text[:300]}",
            )
        return True, "a normal request still succeeds"

"""The robustness suite's machinery: send one bad request safely, classify the answer, count it.

Every request here is bounded (a deadline per request, a cap on the bytes read),
so a server that hangs or streams forever costs one timeout, not the session.
After a server dies or wedges, the remaining tests of that target fail fast
instead of each waiting out its own timeout.

A refusal proves something only where the same request without the fault is
served: so each bad request is preceded by its positive control (a known-good
request at the same route, answered with a correct completion), and the test is
inconclusive when that fails. "The server survived" means a known-good request
answered correctly afterwards, never merely an answer.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from ..client.answers import CHAT, COMPLETIONS, completion_problem, error_message, stream_problem
from ..client.endpoint import Endpoint
from ..client.errors import ERROR_HOOKS, envelope_problem
from ..client.http import InferClient
from ..client.sse import read_sse
from ..outcomes import Inconclusive

# seconds a bad request may take to be refused (capped by --infer-request-timeout)
REJECT_TIMEOUT = 30.0
MAX_BODY = 1 << 20  # bytes of an answer read at most: a gigabyte error page costs a megabyte
DEFAULT_CONTEXT = 131_072  # tokens assumed when the server does not advertise its context length


@dataclass(slots=True)
class BadRequest:
    """One bad request. ``body`` is a dict (sent as JSON) or bytes (sent as they are).

    ``control`` is the same request without the fault (a JSON body sent to ``path``); by default the
    kit's known-good request for the route (``known_good``), streamed when the case is."""

    id: str
    body: Any
    path: str = CHAT
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    stream: bool = False  # read as a stream: an accepted request is aborted after its first bytes
    control: dict[str, Any] | None = None

    def content(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body, ensure_ascii=False).encode("utf-8", "surrogatepass")


@dataclass(slots=True)
class Answer:
    """What came back for one request: ``kind`` is 4xx, 5xx, accepted, hang, dropped or death."""

    kind: str
    status: int | None = None
    text: str = ""
    seconds: float = 0.0
    error: str = ""


REPRODUCER_BODY = 4096  # bytes of body a reproducer spells out; larger ones are described


def reproducer(client: Any, case: BadRequest) -> str:
    """A shell line that sends exactly ``case``: its headers (no Content-Type where it had none,
    which curl would add), and its bytes even when they are not UTF-8, hold a NUL or start with
    ``@``."""
    # the URL and the key's variable, no body
    line = client.curl("POST", case.path, None, stream=case.stream)
    line += "".join(f" -H {shlex.quote(f'{k}: {v}')}" for k, v in case.headers.items())
    if not any(k.lower() == "content-type" for k in case.headers):
        line += " -H 'Content-Type:'"
    body = case.content()
    if len(body) > REPRODUCER_BODY:
        return (
            f"{line} --data-binary @body.json  # body: {len(body)} bytes, starting {body[:120]!r}"
        )
    if b"\0" not in body:  # an argument cannot carry a NUL
        try:
            return f"{line} --data-raw {shlex.quote(body.decode('utf-8'))}"
        except UnicodeDecodeError:
            pass
    # POSIX printf %b: \0ddd
    escaped = "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\0{b:03o}" for b in body)
    return f"printf '%b' {shlex.quote(escaped)} | {line} --data-binary @-"


def known_good(path: str, model: str, stream: bool = False) -> dict[str, Any] | None:
    """The small request every correct server answers at ``path`` (chat or text completions); None
    for other routes.
    """
    if path not in (CHAT, COMPLETIONS):
        return None
    prompt = (
        {"messages": [{"role": "user", "content": "Hello"}]}
        if path == CHAT
        else {"prompt": "Hello"}
    )
    return {
        "model": model,
        **prompt,
        "max_tokens": 4,
        "temperature": 0,
        **({"stream": True} if stream else {}),
    }


@dataclass
class Guard:
    """One target's robustness state: its tally in the session results and whether it is still
    up.
    """

    target: str
    server: Any  # ServerInfo: whether a launched process still runs
    endpoint: Endpoint  # its timeout is the deadline of one bad request
    tally: dict[str, int]
    down: str | None = None

    @property
    def timeout(self) -> float:
        return self.endpoint.timeout

    def count(self, key: str, by: int = 1) -> None:
        self.tally[key] = self.tally.get(key, 0) + by

    def send(self, case: BadRequest) -> Answer:
        """Send ``case`` with a hard deadline; read at most MAX_BODY bytes of the answer."""
        started = time.monotonic()
        deadline = started + self.timeout
        # a fresh connection per request, so one answer's closed connection is never blamed on the
        # next
        try:
            with (
                self.endpoint.http(timeout=self.timeout, event_hooks=ERROR_HOOKS) as fresh,
                fresh.stream(
                    "POST", case.path, content=case.content(), headers=case.headers
                ) as resp,
            ):
                chunks, size = [], 0
                for chunk in resp.iter_raw():
                    chunks.append(chunk)
                    size += len(chunk)
                    accepted_stream = case.stream and resp.status_code < 300
                    if size >= MAX_BODY or accepted_stream or time.monotonic() > deadline:
                        break
                text = b"".join(chunks)[:MAX_BODY].decode("utf-8", "replace")
                if time.monotonic() > deadline and not (case.stream and resp.status_code < 300):
                    return Answer(
                        "hang",
                        resp.status_code,
                        text,
                        time.monotonic() - started,
                        f"answer still arriving after {self.timeout:.0f}s",
                    )
        except httpx.TimeoutException as exc:
            return Answer(
                "hang",
                None,
                "",
                time.monotonic() - started,
                f"{type(exc).__name__} after {self.timeout:.0f}s",
            )
        except httpx.TransportError as exc:
            kind = "death" if not self.reachable() else "dropped"
            return Answer(
                kind, None, "", time.monotonic() - started, f"{type(exc).__name__}: {exc}"
            )
        seconds = time.monotonic() - started
        status = resp.status_code
        kind = "4xx" if 400 <= status < 500 else "5xx" if status >= 500 else "accepted"
        return Answer(kind, status, text, seconds)

    def reachable(self) -> bool:
        """The process is alive (launched servers) and the port answers at all."""
        if not self.server.alive():
            return False
        try:
            self.endpoint.models(timeout=5.0)
        except httpx.TransportError:
            return False
        return True

    def serves(self, case: BadRequest, timeout: float | None = None) -> str | None:
        """None if the known-good request ``case`` gets a correct answer now, else what came instead
        (a stream when ``case.stream``, read to its end).

        A fresh connection (a server that closes a kept-alive one after an error is not thereby
        down), the answer capped in size and time; transport errors and timeouts are raised for the
        caller to name."""
        with InferClient(
            self.endpoint, timeout=timeout or self.timeout, max_response_bytes=MAX_BODY
        ) as fresh:
            request = fresh.build_request(
                "POST", case.path, content=case.content(), headers=case.headers
            )
            resp = fresh.send(request, stream=True)
            try:
                if case.stream:
                    return stream_problem(case.path, read_sse(resp))
                return completion_problem(
                    case.path, resp.status_code, resp.read().decode("utf-8", "replace")
                )
            finally:
                resp.close()

    def control(self, client: Any, case: BadRequest) -> None:
        """The positive control of ``case``: the same request without the fault must be answered
        correctly first, or the case is ``Inconclusive`` (a refusal proves nothing where nothing is
        served), naming it and its curl."""
        good = (
            case.control
            if case.control is not None
            else known_good(case.path, self.server.model, case.stream)
        )
        if good is None:
            raise Inconclusive(
                f"{self.target}: bad request {case.id!r}: no known-good request for {case.path} to "
                "show it is "
                "served (give the BadRequest a control)"
            )
        control = BadRequest(f"{case.id}:control", good, case.path, stream=bool(good.get("stream")))
        curl = reproducer(client, control)
        try:
            why = self.serves(control)
        except httpx.TimeoutException as exc:
            why = f"no answer: {type(exc).__name__} after {self.timeout:.0f}s"
        except httpx.TransportError as exc:
            why = f"{type(exc).__name__}: {exc}"
        if why is not None:
            raise Inconclusive(
                f"{self.target}: bad request {case.id!r} not judged: its positive control (the "
                "same request "
                f"without the fault) was not answered correctly: {why}\ncontrol: {curl}"
            )

    def health(self, timeout: float | None = None) -> str | None:
        """None if a normal small chat request gets a correct chat completion now, else why not (and
        count a death or wedge). Any other answer (HTTP 200 ``{}``, an echo, an error) is no
        service."""
        try:
            why = self.serves(BadRequest("health", known_good(CHAT, self.server.model)), timeout)
        except httpx.TimeoutException:
            return self._mark(
                "wedged", f"a normal request got no answer within {timeout or self.timeout:.0f}s"
            )
        except httpx.TransportError as exc:
            if self.reachable():
                return self._mark("wedged", f"a normal request failed: {type(exc).__name__}: {exc}")
            return self._mark("deaths", f"the server is gone ({type(exc).__name__}: {exc})")
        if why is not None:
            return self._mark("wedged", f"a normal request got {why}")
        self.down = None
        return None

    def _mark(self, counter: str, reason: str) -> str:
        if self.down is None:  # count each loss once, not once per test that meets it
            self.count(counter)
        self.down = reason
        return reason

    def require_up(self) -> None:
        """Fail fast when an earlier test left the server dead or wedged (one short re-check)."""
        if self.down is not None and self.health(timeout=min(5.0, self.timeout)) is not None:
            pytest.fail(
                f"{self.target}: server unusable since an earlier test: {self.down}", pytrace=False
            )

    def expect_rejected(
        self, client: Any, case: BadRequest, record: Callable[[str, object], None] | None = None
    ) -> Answer:
        """Assert ``case`` gets a 4xx with the error envelope and the server still serves correctly
        afterwards; first, that the same request without the fault is served (``control``), else the
        case is inconclusive.

        ``record`` (the ``infer_record`` fixture) gets the reproducer of a failure, or what a pass
        judged, for the results and JUnit XML."""
        self.require_up()
        self.control(client, case)
        self.count("tried")
        answer = self.send(case)
        self.count({"hang": "hangs", "death": "deaths"}.get(answer.kind, answer.kind))
        if answer.kind == "death":
            self.down = f"died on bad request {case.id}"
        curl = reproducer(client, case)
        problems = []
        if answer.kind == "4xx":
            if (why := envelope_problem(answer.text)) is not None:
                problems.append(
                    f"HTTP {answer.status} without the error envelope: {why}; body: "
                    f"{answer.text[:300]!r}"
                )
        elif answer.kind == "accepted":
            problems.append(
                f"accepted with HTTP {answer.status} instead of a 4xx; body starts: "
                f"{answer.text[:200]!r}"
            )
        elif answer.kind == "5xx":
            problems.append(
                f"HTTP {answer.status} (a server error for bad input: clients retry 5xx); body: "
                f"{answer.text[:300]!r}"
            )
        elif answer.kind == "hang":
            problems.append(f"no answer: {answer.error}")
        else:
            problems.append(
                "connection "
                f"{'lost, server dead' if answer.kind == 'death' else 'dropped without an answer'}:"
                f" {answer.error}"
            )
        if (after := self.health()) is not None:
            problems.append(f"and afterwards the server is unusable: {after}")
        if problems:
            if record is not None:
                record("infer_reproducer", curl)
            pytest.fail(
                f"{self.target}: bad request {case.id!r}: "
                + "; ".join(problems)
                + f"\nreproduce: {curl}",
                pytrace=False,
            )
        if record is not None:
            record(
                "infer_evidence",
                f"POST {case.path}: the same request without the fault answered correctly; "
                f"{case.id} got HTTP"
                f" {answer.status} with the error envelope ({error_message(answer.text)[:120]!r}); "
                "a normal request"
                " was answered correctly after it",
            )
        return answer

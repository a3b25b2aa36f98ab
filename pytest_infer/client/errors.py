"""Every error answer the suites' HTTP clients read, kept for the security suite to judge what it
discloses.

An httpx response hook (``record_errors``) tees the body of each non-2xx answer as the caller reads
it (nothing is read that the caller does not read, so streams and size caps behave as before) and
files it in ``ERRORS`` when the response closes. The log is per process: under xdist each worker
judges the errors it saw.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

KEPT_BYTES = 8192  # of each error body: a stack trace shows itself in its first lines
KEPT_ANSWERS = 2000  # the newest ones; a session provokes a few hundred


def carries_error(data: object) -> bool:
    """A JSON object (a body, a stream event) whose ``error`` says something; a Responses object's
    ``"error": null`` is part of an answer, not an error."""
    return isinstance(data, dict) and data.get("error") is not None


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    origin: str  # scheme://host:port: which server answered
    method: str
    path: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: str
    sent: str = ""  # the request's body (its first KEPT_BYTES), which an error may echo


class ErrorLog:
    """A bounded, thread-safe list of error answers."""

    def __init__(self, size: int = KEPT_ANSWERS) -> None:
        self._answers: deque[ErrorAnswer] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, answer: ErrorAnswer) -> None:
        with self._lock:
            self._answers.append(answer)

    def snapshot(self) -> list[ErrorAnswer]:
        with self._lock:
            return list(self._answers)

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()


ERRORS = ErrorLog()


class _Tee(httpx.SyncByteStream):
    def __init__(
        self, inner: httpx.SyncByteStream, response: httpx.Response, log: ErrorLog
    ) -> None:
        self.inner, self.response, self.log = inner, response, log
        self.kept = bytearray()
        self.filed = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if len(self.kept) < KEPT_BYTES:
                self.kept += chunk[: KEPT_BYTES - len(self.kept)]
            yield chunk

    def close(self) -> None:
        if not self.filed:
            self.filed = True
            request = self.response.request
            origin = f"{request.url.scheme}://{request.url.netloc.decode()}"
            self.log.add(
                ErrorAnswer(
                    origin,
                    request.method,
                    request.url.path,
                    self.response.status_code,
                    tuple(self.response.headers.items()),
                    self.kept.decode("utf-8", "replace"),
                    _sent(request),
                )
            )
        self.inner.close()


def _sent(request: httpx.Request) -> str:
    try:
        return request.content[:KEPT_BYTES].decode("utf-8", "replace")
    except httpx.RequestNotRead:  # a streamed upload: nothing kept
        return ""


def record_errors(response: httpx.Response, log: ErrorLog | None = None) -> None:
    """httpx ``response`` event hook: file a non-2xx answer's status, headers and body (as read) in
    ``log``.
    """
    if response.status_code >= 400:
        response.stream = _Tee(response.stream, response, log or ERRORS)  # type: ignore[arg-type]


# an httpx.Client's event_hooks that file its error answers
ERROR_HOOKS = {"response": [record_errors]}


def envelope_problem(text: str) -> str | None:
    """Why ``text`` is not the OpenAI error envelope ``{"error": {"message": str, "type": ...}}``,
    or None.
    """
    try:
        data = json.loads(text)
    except ValueError:
        return "the body is not JSON"
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return (
            "no 'error' object (top-level keys: "
            f"{sorted(data) if isinstance(data, dict) else type(data).__name__})"
        )
    if not isinstance(error.get("message"), str) or not error["message"]:
        return "error.message is not a non-empty string"
    if "type" not in error:
        return "error.type is missing"
    return None

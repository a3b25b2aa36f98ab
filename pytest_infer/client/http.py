"""The client every test gets: httpx with retries off, plus a curl line for any request."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from .curl import curl_command
from .endpoint import Endpoint
from .errors import carries_error, record_errors
from .tls import tls

# an answer larger than this is a fault, not something to hold in memory
MAX_RESPONSE_BYTES = 64 << 20


class ResponseLimitExceeded(httpx.ReadError):
    """An answer ran past its size or time budget; raised while reading, so a gigabyte never reaches
    memory.
    """


class UnexpectedResponse(AssertionError):
    """A request that should have succeeded did not; the message says how, with a curl line."""


class _BoundedStream(httpx.SyncByteStream):
    """The response body, cut off past ``max_bytes`` or once the request's time is up (a trickling
    server).
    """

    def __init__(
        self, inner: httpx.SyncByteStream, request: httpx.Request, max_bytes: int, timeout: float
    ) -> None:
        self.inner, self.request, self.max_bytes, self.timeout = inner, request, max_bytes, timeout
        self.deadline = time.monotonic() + timeout

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        for chunk in self.inner:
            seen += len(chunk)
            if seen > self.max_bytes:
                raise ResponseLimitExceeded(
                    f"the response exceeded {self.max_bytes} bytes; reading stopped",
                    request=self.request,
                )
            if time.monotonic() > self.deadline:
                raise ResponseLimitExceeded(
                    f"the response was still arriving {self.timeout:.0f}s after its headers",
                    request=self.request,
                )
            yield chunk

    def close(self) -> None:
        self.inner.close()


class InferClient(httpx.Client):
    """An ``httpx.Client`` bound to the server under test.

    Retries are off (httpx has none by default; nothing here adds any), so a
    flaky server is seen, never papered over.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout: float | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        timeout = timeout or endpoint.timeout
        super().__init__(
            base_url=endpoint.base_url,
            timeout=timeout,
            headers=endpoint.headers,
            event_hooks={"response": [self._bound, record_errors]},
            verify=tls(),
        )
        self.endpoint = endpoint
        self.model = endpoint.model
        self.authenticated = bool(endpoint.api_key)
        self.max_response_bytes = max_response_bytes
        self.total_timeout = timeout

    def _bound(self, response: httpx.Response) -> None:
        limit, timeout = self.max_response_bytes, self.total_timeout
        stream = response.stream
        response.stream = _BoundedStream(stream, response.request, limit, timeout)  # type: ignore[arg-type]

    def curl(self, method: str, path: str, body: Any = None, *, stream: bool = False) -> str:
        return curl_command(
            method, f"{self.base_url}{path}", body, authenticated=self.authenticated, stream=stream
        )

    def chat(self, messages: list[dict] | str, **params: Any) -> httpx.Response:
        """POST /v1/chat/completions with this server's model unless ``model`` is given."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        return self.post(
            "/v1/chat/completions", json={"model": self.model, "messages": messages, **params}
        )

    def chat_completion(self, messages: list[dict] | str, **params: Any) -> dict:
        """A chat completion that must succeed: its JSON, or ``UnexpectedResponse`` saying what came
        instead.

        Catches what a status check misses: HTTP 200 whose body is an error, or is no completion at
        all.
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        body = {"model": self.model, "messages": messages, **params}
        resp = self.post("/v1/chat/completions", json=body)
        reproduce = self.curl("POST", "/v1/chat/completions", body)
        try:
            data = resp.json()
        except ValueError:
            raise UnexpectedResponse(
                f"HTTP {resp.status_code}, body is not JSON: {resp.text[:300]!r}\nreproduce: "
                f"{reproduce}"
            ) from None
        if resp.status_code != 200:
            raise UnexpectedResponse(
                f"HTTP {resp.status_code}: {resp.text[:500]}\nreproduce: {reproduce}"
            )
        if carries_error(data):
            raise UnexpectedResponse(
                f"HTTP 200 with an error body: {json.dumps(data)[:500]}\nreproduce: {reproduce}"
            )
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("choices"), list)
            or not data["choices"]
        ):
            raise UnexpectedResponse(
                f"HTTP 200 without choices: {resp.text[:500]!r}\nreproduce: {reproduce}"
            )
        return data

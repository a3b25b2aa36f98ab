"""The client every test gets: httpx with retries off, plus a curl line for any request."""
from __future__ import annotations

from typing import Any

import httpx

from .curl import curl_command


class InferClient(httpx.Client):
    """An ``httpx.Client`` bound to the server under test.

    Retries are off (httpx has none by default; nothing here adds any), so a
    flaky server is seen, never papered over.
    """

    def __init__(self, base_url: str, *, model: str, api_key: str | None = None, timeout: float = 120.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        super().__init__(base_url=base_url, timeout=timeout, headers=headers)
        self.model = model
        self.authenticated = bool(api_key)

    def curl(self, method: str, path: str, body: Any = None, *, stream: bool = False) -> str:
        return curl_command(method, f"{self.base_url}{path}", body, authenticated=self.authenticated, stream=stream)

    def chat(self, messages: list[dict] | str, **params: Any) -> httpx.Response:
        """POST /v1/chat/completions with this server's model unless ``model`` is given."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        return self.post("/v1/chat/completions", json={"model": self.model, "messages": messages, **params})

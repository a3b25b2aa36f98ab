"""The one value every client, load run and check takes to reach a server: where, which model, which
key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from .tls import tls

# how servers advertise a model's context
CONTEXT_KEYS = ("max_model_len", "context_length", "max_context_length")
# llama.cpp's, under the card's "meta": the context of one slot, what one request may use
META_CONTEXT_KEY = "n_ctx"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An OpenAI-compatible server: base URL (no ``/v1``), the model it serves, its API key, and
    timeouts.

    The key stays out of ``repr``, so an endpoint in a log or assertion message never shows it.
    """

    base_url: str
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 120.0

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def with_model(self, model: str) -> Endpoint:
        return Endpoint(self.base_url, model, self.api_key, self.timeout)

    def openai_kwargs(self) -> dict[str, Any]:
        """Arguments for the official ``openai`` SDK clients: retries off, since a retry must never
        hide a failure.
        """
        return {
            "base_url": f"{self.base_url}/v1",
            "api_key": self.api_key or "EMPTY",
            "max_retries": 0,
            "timeout": self.timeout,
        }

    def http(self, timeout: float | None = None, **kwargs: Any) -> httpx.Client:
        """A plain httpx client bound to this endpoint (its URL, key and timeout, the shared TLS
        context).
        """
        return httpx.Client(
            base_url=self.base_url,
            headers=self.headers,
            timeout=timeout or self.timeout,
            verify=tls(),
            **kwargs,
        )

    def models(self, client: Any = None, timeout: float | None = None) -> list[dict[str, Any]]:
        """The model cards of ``GET /v1/models``; ``[]`` when the answer is not a model list.

        ``client`` is an httpx client bound to this endpoint; without one a short-lived one is made.
        """
        own = client is None
        client = client or self.http(timeout)
        try:
            data = client.get("/v1/models", timeout=timeout or self.timeout).json()
        except ValueError:
            return []
        finally:
            if own:
                client.close()
        cards = data.get("data") if isinstance(data, dict) else None
        return [c for c in cards if isinstance(c, dict)] if isinstance(cards, list) else []

    def context_length(self, client: Any = None) -> int | None:
        """The served model's context in tokens where ``/v1/models`` advertises it (vLLM, SGLang,
        llama.cpp), else ``None``."""
        try:
            cards = self.models(client, timeout=10.0)
        except httpx.HTTPError:
            return None
        for card in cards:
            if self.model and card.get("id") not in (self.model, None):
                continue
            meta = card.get("meta")
            for value in (
                *map(card.get, CONTEXT_KEYS),
                meta.get(META_CONTEXT_KEY) if isinstance(meta, dict) else None,
            ):
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
        return None

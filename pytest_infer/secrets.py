"""Keeps API keys out of logs, reports, reproducers and result files."""

from __future__ import annotations

from collections.abc import Iterable

API_KEY_ENV = "PYTEST_INFER_API_KEY"
MASK = "***"


def redact(text: str, secrets: Iterable[str | None]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return text

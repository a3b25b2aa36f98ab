"""``curl`` commands that reproduce a request exactly, without leaking the API key."""

from __future__ import annotations

import json
import shlex
from urllib.parse import urlsplit

from ..secrets import API_KEY_ENV


def curl_command(
    method: str,
    url: str,
    body: object | None = None,
    *,
    authenticated: bool = False,
    stream: bool = False,
) -> str:
    """A copy-pasteable command; the key is referenced as ``$PYTEST_INFER_API_KEY``, never spelled
    out.
    """
    parts = ["curl", "-sS"]
    if stream:
        parts.append("-N")
    if method.upper() != "GET" or body is not None:
        parts += ["-X", method.upper()]
    parts.append(shlex.quote(url))
    if authenticated:
        parts += ["-H", f'"Authorization: Bearer ${API_KEY_ENV}"']
    if body is not None:
        data = body if isinstance(body, (str, bytes)) else json.dumps(body, ensure_ascii=False)
        if isinstance(data, bytes):
            data = data.decode("utf-8", "backslashreplace")
        parts += ["-H", "'Content-Type: application/json'", "-d", shlex.quote(data)]
    return " ".join(parts)


def curl_request(command: str) -> tuple[str, str, bool] | None:
    """``(method, URL path, streamed)`` of a line ``curl_command`` wrote: the request a reproducer
    repeats; None for a line it did not write."""
    try:
        parts = shlex.split(command)
    except ValueError:
        return None
    url = next((p for p in parts[1:] if p.startswith(("http://", "https://"))), None)
    if parts[:2] != ["curl", "-sS"] or url is None:
        return None
    method = parts[parts.index("-X") + 1] if "-X" in parts[:-1] else "GET"
    return method, urlsplit(url).path, "-N" in parts

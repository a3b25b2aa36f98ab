"""What an error answer tells a client it should never see: a stack trace, a source path, an
internal module or exception name, a host path, a secret.

Each error body is read as JSON where it is JSON, and every string in it is scanned on its own, so a
leak is named by its field (``error.message``); a body that is not JSON is scanned whole (``body``).
Headers are scanned too, but a ``Server`` banner (``uvicorn``) or a version header is information
every HTTP server gives, not a leak: only a header that carries one of the patterns below is. The
API key and the values of this process's environment variables that look secret (names with KEY,
TOKEN, SECRET, PASSWORD) are secrets wherever they appear.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

# (what leaked, pattern); the match is quoted, cut short, in the finding
PATTERNS = (
    (
        "stack trace",
        re.compile(
            r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+|\bat "
            r"[\w.$]+\([\w.]+:\d+\)",
            re.M,
        ),
    ),
    (
        "source file path",
        re.compile(r"(?:/[\w.+-]+)+/[\w.-]+\.(?:py|pyx|so|cpp|cc|cu|rs|go|java)\b"),
    ),
    (
        "host path",
        re.compile(
            r"(?<![\w/.])(?:/home/|/root/|/usr/(?:local/)?lib/|/opt/|/tmp/|/var/|[A-Z]:\\\\Users\\\\)[\w.@+/\\-]+"
        ),
    ),
    (
        "internal module",
        re.compile(
            r"\b(?:vllm|sglang|transformers|torch|xgrammar|outlines|llguidance|pydantic_core|fastapi|"
            r"starlette|uvicorn|text_generation_server|lmdeploy|tensorrt_llm)(?:\.\w+){2,}"
        ),
    ),
    (
        "exception name",
        re.compile(
            r"\b(?:[A-Z]\w*(?:Error|Exception)|KeyError|StopIteration|AssertionError)\b(?=\s*[:(']|$)",
            re.M,
        ),
    ),
)
SECRET_NAMES = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.I)
MIN_SECRET = 8  # shorter values ("1", "true") are no secret to look for
QUOTE = 80


@dataclass(frozen=True, slots=True)
class Leak:
    what: str  # stack trace, source file path, ..., secret
    where: str  # the field (error.message), ``body``, or ``header X``
    excerpt: str  # the leaking text, secrets masked


def environment_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they are secret, long enough to look for."""
    env = os.environ if environ is None else environ
    return [v for k, v in env.items() if SECRET_NAMES.search(k) and len(v) >= MIN_SECRET]


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


def _excerpt(text: str, start: int, end: int, secrets: Iterable[str]) -> str:
    shown = text[max(0, start - 20) : min(len(text), end + 40)]
    for secret in secrets:
        shown = shown.replace(secret, "***")
    return shown[:QUOTE] + ("…" if len(shown) > QUOTE else "")


# the envelope's classification fields: an error type there ("BadRequestError") is the API's, not a
# leak
CLASS_FIELDS = re.compile(r"(?:^|\.)(?:type|code|param|object)$")


def scan_text(
    text: str, where: str, secrets: Iterable[str] = (), public: Iterable[str] = ()
) -> list[Leak]:
    """``public``: text the client sent or can read anyway (its request's strings, the served
    model's id): an error that echoes it discloses nothing, so it is blanked before the patterns
    look."""
    secrets = [s for s in secrets if s]
    leaks = []
    for secret in secrets:
        if (i := text.find(secret)) >= 0:
            leaks.append(Leak("secret", where, _excerpt(text, i, i + len(secret), secrets)))
    for known in sorted(
        (p for p in public if len(p) >= 4 and p not in secrets), key=len, reverse=True
    ):
        text = text.replace(known, "<sent>")
    for what, pattern in PATTERNS:
        if what == "exception name" and CLASS_FIELDS.search(where):
            continue
        if (match := pattern.search(text)) is not None:
            leaks.append(Leak(what, where, _excerpt(text, match.start(), match.end(), secrets)))
    return leaks


def sent_strings(request_body: str) -> list[str]:
    """The strings of a request's JSON body (or the body itself): what an error may echo without
    disclosing anything.
    """
    try:
        data = json.loads(request_body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return [request_body] if request_body else []
    return [request_body, *(text for _, text in _strings(data, ""))]


def scan_body(body: str, secrets: Iterable[str] = (), public: Iterable[str] = ()) -> list[Leak]:
    """Every leak in an error body, by field where it is JSON."""
    secrets, public = list(secrets), list(public)
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return scan_text(body, "body", secrets, public)
    return [
        leak
        for where, text in _strings(data, "")
        for leak in scan_text(text, where or "body", secrets, public)
    ]


def scan_headers(headers: Iterable[tuple[str, str]], secrets: Iterable[str] = ()) -> list[Leak]:
    secrets = list(secrets)
    return [leak for name, value in headers for leak in scan_text(value, f"header {name}", secrets)]

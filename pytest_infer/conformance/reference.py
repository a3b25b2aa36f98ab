"""What the API references say of an answer's fields, per route and mode, as the gate's drift rule
reads them.

Two typed facts, and nothing guessed from a check's wording (a fixed ``chat.model`` once excused a
tool call's ``function.name`` turning null because its title held the word "name"):

- ``REQUIRED``: fields the reference requires in every answer (or chunk, or event) of that route and
  mode. Removing one breaks every client, and nothing excuses it.
- ``NOT_IN_MODE``: fields the reference puts in another route or mode only (``choices[].message`` is
  the non-streamed answer's; a chunk carries ``choices[].delta``). A server that served one there
  deviated; its removal is the end of that deviation, a change.
- ``ON_ITEMS``: fields the reference defines on one kind of item only (``summary`` is a Responses
  reasoning item's; a message item has none). Removed where the baseline served no item of that
  kind, it was on the wrong items.

Paths are the conformance table's (``choices[].delta.content``). Sources: docs/openai-conformance.md
(OpenAI's Chat Completions, Completions, Embeddings, Models and Responses objects) and the Anthropic
Messages object.
"""

from __future__ import annotations

CHAT = "POST /v1/chat/completions"
COMPLETIONS = "POST /v1/completions"
STREAM = " stream"

REQUIRED: dict[str, frozenset[str]] = {
    CHAT: frozenset(
        {
            "id",
            "object",
            "created",
            "model",
            "choices",
            "choices[].index",
            "choices[].message",
            "choices[].message.role",
            "choices[].finish_reason",
        }
    ),
    CHAT + STREAM: frozenset({"id", "object", "created", "model", "choices"}),
    COMPLETIONS: frozenset(
        {
            "id",
            "object",
            "created",
            "model",
            "choices",
            "choices[].index",
            "choices[].text",
            "choices[].finish_reason",
        }
    ),
    COMPLETIONS + STREAM: frozenset({"id", "object", "created", "model", "choices"}),
    "POST /v1/embeddings": frozenset(
        {"object", "data", "data[].object", "data[].index", "data[].embedding", "model"}
    ),
    "GET /v1/models": frozenset(
        {"object", "data", "data[].id", "data[].object", "data[].created", "data[].owned_by"}
    ),
    "POST /v1/responses": frozenset({"id", "object", "created_at", "model", "output", "status"}),
    "POST /v1/responses" + STREAM: frozenset({"type", "sequence_number"}),
    "POST /v1/messages": frozenset(
        {
            "id",
            "type",
            "role",
            "content",
            "model",
            "stop_reason",
            "usage",
            "usage.input_tokens",
            "usage.output_tokens",
        }
    ),
    "POST /v1/messages" + STREAM: frozenset({"type"}),
}

_DELTA = "a streamed chunk carries choices[].delta, never the whole message"
_MESSAGE = "a non-streamed answer carries choices[].message; choices[].delta is the stream's"
_TEXT = "choices[].text is the completions API's; a chat choice carries a message or a delta"
_CHAT_ONLY = "the completions API's choices carry text; message and delta are the chat API's"
NOT_IN_MODE: dict[str, dict[str, str]] = {
    CHAT: {"choices[].delta": _MESSAGE, "choices[].text": _TEXT},
    CHAT + STREAM: {"choices[].message": _DELTA, "choices[].text": _TEXT},
    COMPLETIONS: {"choices[].message": _CHAT_ONLY, "choices[].delta": _CHAT_ONLY},
    COMPLETIONS + STREAM: {"choices[].message": _CHAT_ONLY, "choices[].delta": _CHAT_ONLY},
}


_REASONING = frozenset({"reasoning"})
ON_ITEMS: dict[str, dict[str, tuple[str, frozenset[str]]]] = {
    "POST /v1/responses": {"output[].summary": ("output[].type", _REASONING)},
    "GET /v1/responses/{id}": {"output[].summary": ("output[].type", _REASONING)},
    "POST /v1/responses" + STREAM: {
        "item.summary": ("item.type", _REASONING),
        "response.output[].summary": ("response.output[].type", _REASONING),
    },
}


def required(endpoint: str, path: str) -> bool:
    return path in REQUIRED.get(endpoint, frozenset())


def not_in_mode(endpoint: str, path: str) -> str | None:
    """Why the reference keeps ``path`` (or the field it is part of) out of ``endpoint``'s answers,
    None where it does not."""
    rules = NOT_IN_MODE.get(endpoint, {})
    return next(
        (
            why
            for field, why in rules.items()
            if path == field or path.startswith((f"{field}.", f"{field}["))
        ),
        None,
    )


def defined_only_on(endpoint: str, path: str) -> tuple[str, frozenset[str]] | None:
    """``(the path naming an item's kind, the kinds the reference defines ``path`` on)``, None where
    it is defined on every item (or nowhere this module knows)."""
    return ON_ITEMS.get(endpoint, {}).get(path)

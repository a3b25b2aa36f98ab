"""``/tokenize`` and ``/detokenize``: how clients count tokens before they send (vLLM, SGLang
extensions).
"""

from __future__ import annotations

from typing import Any

from ..context import CheckContext
from ..registry import check

REFERENCE = "vLLM serving docs (Tokenizer API: /tokenize, /detokenize)"
TEXT = "Hello, world! 123 naïve café"  # ASCII, punctuation, digits and two non-ASCII letters
ASK = [{"role": "user", "content": "What is the capital of France?"}]


def _token_ids(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(t, int) and not isinstance(t, bool) for t in value)
    )


@check(
    "tokenize.round-trip",
    "/tokenize gives integer ids and their count; /detokenize gives the text back",
    reference=REFERENCE,
    needs=("tokenize",),
)
def round_trip(ctx: CheckContext) -> str:
    """A client that trims a prompt to fit in tokens relies on ids that decode to what it sent."""
    ex = ctx.offered(
        "tokenize",
        ctx.post("/tokenize", {"model": ctx.model, "prompt": TEXT, "add_special_tokens": False}),
    )
    data = ctx.expect_json_object(ex, "POST /tokenize")
    tokens = data.get("tokens")
    ctx.expect(_token_ids(tokens), "tokens: a non-empty list of integer ids", tokens, ex)
    assert isinstance(tokens, list)  # expect() failed the check otherwise
    ctx.expect(
        data.get("count") == len(tokens),
        f"count = {len(tokens)}, the number of ids",
        data.get("count"),
        ex,
    )
    back = ctx.post("/detokenize", {"model": ctx.model, "tokens": tokens})
    decoded = ctx.expect_json_object(back, "POST /detokenize")
    # vLLM names it prompt, SGLang text
    field = next((k for k in ("prompt", "text") if k in decoded), "prompt")
    ctx.expect(decoded.get(field) == TEXT, f"the text sent: {TEXT!r}", decoded.get(field), back)
    return (
        f"{len(tokens)} integer ids for {TEXT!r}, count {len(tokens)}, detokenized back to it "
        f"(field {field!r})"
    )


@check(
    "tokenize.chat-count",
    "/tokenize of a chat counts what the chat completion bills as prompt_tokens",
    reference=REFERENCE,
    needs=("tokenize",),
)
def chat_count(ctx: CheckContext) -> str:
    """A client budgets context with /tokenize; a count that is not the billed one overflows or
    wastes it.
    """
    ex = ctx.offered("tokenize", ctx.post("/tokenize", {"model": ctx.model, "messages": ASK}))
    count = ctx.expect_json_object(ex, "POST /tokenize with messages").get("count")
    answer = ctx.chat(messages=ASK, max_tokens=2)
    billed = (ctx.expect_json_object(answer, "the same chat").get("usage") or {}).get(
        "prompt_tokens"
    )
    ctx.expect(
        isinstance(count, int) and count == billed,
        f"the chat's usage.prompt_tokens ({billed})",
        count,
        ex,
    )
    return f"/tokenize counts {count} tokens for the chat, its usage.prompt_tokens {billed}"

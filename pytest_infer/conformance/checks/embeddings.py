"""Embeddings, where the server serves an embedding model: base64 (the SDK's default), fields,
dimensions.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from ..context import CheckContext, Exchange
from ..registry import check

SPEC = "openai-openapi CreateEmbeddingResponse"


def embed(ctx: CheckContext, **params: object) -> Exchange:
    return ctx.post(
        "/v1/embeddings", {"model": ctx.model, "input": ["hello world", "good night"], **params}
    )


def plain(ctx: CheckContext) -> Exchange:
    """A float request; a server (or model) that refuses embeddings is "unsupported", with its
    answer as the reason.
    """
    ex = ctx.offered("embeddings", embed(ctx, encoding_format="float"))
    ctx.expect_ok(ex, "embeddings")
    return ex


def first_vector(ctx: CheckContext, ex: Exchange, what: str) -> list[float]:
    """The first input's float vector, or a failure naming what came instead (never a crash)."""
    data = ctx.expect_json_object(ex, what)
    items = data.get("data")
    vector = (
        items[0].get("embedding")
        if isinstance(items, list) and items and isinstance(items[0], dict)
        else None
    )
    if not (
        isinstance(vector, list)
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector)
    ):
        ctx.fail("data[0].embedding, a list of numbers", ex.text[:300], ex)
    return vector


@check(
    "embeddings.fields",
    "embeddings have data[i].object 'embedding', index, a float vector, and usage",
    reference=SPEC,
    needs=("embeddings",),
)
def fields(ctx: CheckContext) -> str:
    """RAG pipelines map ``data[i].index`` back to their inputs."""
    ex = plain(ctx)
    data = ctx.expect_json_object(ex, "embeddings")
    items = data.get("data") or []
    ctx.expect(
        isinstance(items, list) and all(isinstance(d, dict) for d in items),
        "data: a list of objects",
        items,
        ex,
    )
    ctx.expect(
        [d.get("index") for d in items] == [0, 1],
        "data with index 0 and 1",
        [d.get("index") for d in items],
        ex,
    )
    ctx.expect(
        all(
            d.get("object") == "embedding"
            and isinstance(d.get("embedding"), list)
            and d["embedding"]
            for d in items
        ),
        "object 'embedding' with a float list",
        items[:1],
        ex,
    )
    ctx.expect(
        isinstance(data.get("usage"), dict) and isinstance(data["usage"].get("prompt_tokens"), int),
        "usage.prompt_tokens",
        data.get("usage"),
        ex,
    )
    return (
        f"2 embeddings with index 0 and 1, {len(items[0]['embedding'])} floats each, "
        "usage.prompt_tokens"
        f" {data['usage']['prompt_tokens']}"
    )


@check(
    "embeddings.base64",
    "encoding_format base64 decodes to the same vector as float",
    reference=f"{SPEC}; vllm#5734, llama.cpp#10887",
    needs=("embeddings",),
)
def base64_format(ctx: CheckContext) -> str:
    """The SDK asks for base64 by default and decodes float32 little-endian."""
    floats = first_vector(ctx, plain(ctx), "float embeddings")
    ex = embed(ctx, encoding_format="base64")
    data = ctx.expect_json_object(ex, "base64 embeddings")
    items = data.get("data")
    first: Any = items[0] if isinstance(items, list) and items else None
    ctx.expect(isinstance(first, dict), "data[0], an object", ex.text[:300], ex)
    blob: Any = first.get("embedding")
    try:
        raw = base64.b64decode(blob, validate=True)
        vector = list(struct.unpack(f"<{len(raw) // 4}f", raw))
    except (TypeError, ValueError, struct.error) as exc:
        ctx.fail("a base64 string of float32 values", f"{exc}: {str(blob)[:200]}", ex)
    close = len(vector) == len(floats) and all(
        abs(a - b) <= 1e-3 * max(1.0, abs(b)) for a, b in zip(vector, floats)
    )
    ctx.expect(
        close, f"the float vector ({len(floats)} values)", f"{len(vector)} values: {vector[:4]}", ex
    )
    return f"base64 decodes to the {len(floats)} float32 values of encoding_format=float"


@check(
    "embeddings.dimensions",
    "dimensions is honoured or refused with 400",
    reference=f"{SPEC} (dimensions)",
    needs=("embeddings",),
    severity="warning",
)
def dimensions(ctx: CheckContext) -> str:
    """A silently ignored ``dimensions`` breaks a vector index of fixed width; a refusal is an
    answer, once the same request without ``dimensions`` is seen to succeed."""
    full = len(
        first_vector(
            ctx,
            ctx.control(
                embed(ctx, encoding_format="float"),
                "embeddings without dimensions",
                feature="embeddings",
            ),
            "float embeddings",
        )
    )
    ex = embed(ctx, encoding_format="float", dimensions=8)
    if ex.status in (400, 422):
        return f"dimensions=8 refused with HTTP {ex.status}; {full} values without it"
    data = ctx.expect_json_object(ex, "dimensions=8")
    lengths = [
        len(d["embedding"])
        if isinstance(d, dict) and isinstance(d.get("embedding"), list)
        else None
        for d in data.get("data") or []
    ]
    ctx.expect(
        lengths and all(n == 8 for n in lengths), "vectors of 8 values, or HTTP 400", lengths, ex
    )
    return f"dimensions=8: {len(lengths)} vectors of 8 values ({full} without it)"

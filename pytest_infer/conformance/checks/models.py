"""``/v1/models``: what clients list and look up before they send anything."""

from __future__ import annotations

from ..context import CheckContext
from ..registry import check

SPEC = "openai-openapi ListModelsResponse, Model"


def _card_problems(card: object) -> list[str]:
    if not isinstance(card, dict):
        return [f"entry {card!r} is not an object"]
    problems = []
    if not isinstance(card.get("id"), str) or not card.get("id"):
        problems.append("id is not a non-empty string")
    if card.get("object") != "model":
        problems.append(f"object is {card.get('object')!r}, not 'model'")
    if not isinstance(card.get("created"), int) or isinstance(card.get("created"), bool):
        problems.append(f"created is {card.get('created')!r}, not an integer")
    if not isinstance(card.get("owned_by"), str):
        problems.append(f"owned_by is {card.get('owned_by')!r}, not a string")
    return problems


@check("models.list", "GET /v1/models lists the served model with id, object, created, owned_by", reference=SPEC)
def models_list(ctx: CheckContext) -> str:
    """``client.models.list()`` is how tools discover the model id."""
    ex = ctx.get("/v1/models")
    data = ctx.expect_json_object(ex, "GET /v1/models")
    ctx.expect(
        data.get("object") == "list" and isinstance(data.get("data"), list),
        '{"object": "list", "data": [...]}',
        ex.text,
        ex,
    )
    problems = [
        f"{(c or {}).get('id') if isinstance(c, dict) else c}: {p}" for c in data["data"] for p in _card_problems(c)
    ]
    ctx.expect(not problems, "every entry has id, object='model', integer created, owned_by", "; ".join(problems), ex)
    ids = [c.get("id") for c in data["data"] if isinstance(c, dict)]
    ctx.expect(ctx.model in ids, f"the served model {ctx.model!r} among the entries", ids, ex)
    return f"{len(ids)} model card(s) with id, object, created, owned_by; the served {ctx.model!r} among them"


@check("models.retrieve", "GET /v1/models/{id} answers for the served model", reference=SPEC)
def models_retrieve(ctx: CheckContext) -> str:
    """``client.models.retrieve(id)`` is used to check a deployment before sending traffic."""
    ex = ctx.get(f"/v1/models/{ctx.model}")
    data = ctx.expect_json_object(ex, f"GET /v1/models/{ctx.model}")
    problems = _card_problems(data)
    ctx.expect(
        not problems and data.get("id") == ctx.model,
        f"the model card of {ctx.model!r}",
        f"{'; '.join(problems)}: {ex.text}",
        ex,
    )
    return f"the card of {ctx.model!r}: id, object 'model', created, owned_by {data['owned_by']!r}"

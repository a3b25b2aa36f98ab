"""``/v1/models``: what clients list and look up before they send anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..context import CheckContext, Exchange, StreamExchange, answer_problems
from ..failures import trim
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


@check(
    "models.list",
    "GET /v1/models lists the served model with id, object, created, owned_by",
    reference=SPEC,
)
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
        f"{(c or {}).get('id') if isinstance(c, dict) else c}: {p}"
        for c in data["data"]
        for p in _card_problems(c)
    ]
    ctx.expect(
        not problems,
        "every entry has id, object='model', integer created, owned_by",
        "; ".join(problems),
        ex,
    )
    ids = [c.get("id") for c in data["data"] if isinstance(c, dict)]
    ctx.expect(ctx.model in ids, f"the served model {ctx.model!r} among the entries", ids, ex)
    return (
        f"{len(ids)} model card(s) with id, object, created, owned_by; the served "
        f"{ctx.model!r} among them"
    )


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


def answer_names(ctx: CheckContext) -> tuple[Callable[[Any], bool], str]:
    """Whether a name an answer gives is the model asked for, and the names that are, in words.

    The name asked for; that name at a Hub revision (``name@rev``: transformers serve answers a Hub
    model as ``org/model@main``); and an alias the server lists in /v1/models, read now (a server
    may list a model once it is loaded), only where both cards name the same weights (``root``, as
    vLLM and SGLang do). Where the asked model's card names none (llama.cpp, transformers serve,
    proxies), nothing shows another listed id is the same model, so none is taken for it: a server
    that also serves another model and answers as that one fails."""
    listing = ctx.get("/v1/models")
    data = listing.data.get("data") if listing.ok and isinstance(listing.data, dict) else None
    cards = (
        [c for c in data if isinstance(c, dict) and isinstance(c.get("id"), str)]
        if isinstance(data, list)
        else []
    )
    root = next((c.get("root") for c in cards if c["id"] == ctx.model), None)
    aliases = {c["id"] for c in cards if root and c.get("root") == root}

    def accepted(name: Any) -> bool:
        return isinstance(name, str) and (
            name == ctx.model or name.startswith(f"{ctx.model}@") or name in aliases
        )

    shown = sorted(aliases - {ctx.model})
    return accepted, f"{ctx.model!r}" + (f" or an alias /v1/models lists, {shown}" if shown else "")


def judge_model_names(
    ctx: CheckContext,
    route: str,
    answer: tuple[Exchange, dict[str, Any]],
    stream: tuple[StreamExchange, list[Any]],
    *,
    required: bool = False,
) -> str:
    """The model an answer of ``route`` names (``answer``: the exchange and its JSON body, judged a
    correct answer of the route first) and the model each event of its stream names (``stream``: the
    exchange and the names its events carry, None for an event that names none) are the one asked
    for. A request answered by another model, or a proxy that renames it, bills and logs the wrong
    one. Where the route requires ``model`` in the answer and in every event (``required``: chat,
    whose every chunk is an answer of its own), a name left out fails, so a server that strips it
    cannot pass; elsewhere it is the business of each route's fields check, and nothing named at all
    is inconclusive."""
    ex, data = answer
    problems = answer_problems(ex.path, data)
    ctx.expect(
        not problems, f"a correct answer of {ex.path}", f"{'; '.join(problems)}: {ex.text}", ex
    )
    stream_ex, streamed = stream
    if required:
        ctx.expect(
            isinstance(data.get("model"), str),
            f"model in the {route} answer (required)",
            "no model key" if "model" not in data else f"model: {data['model']!r}",
            ex,
        )
        missing = sum(n is None for n in streamed)
        ctx.expect(
            not missing,
            f"model in every streamed {route} chunk (required)",
            f"no model key (or null) in {missing} of {len(streamed)} event(s)",
            stream_ex,
        )
    named = ctx.nonempty(
        [n for n in [data.get("model"), *streamed] if n is not None],
        f"model named in the {route} answers",
        ex,
    )
    accepted, names = answer_names(ctx)
    expected = f"the model asked for, {names}"
    ctx.expect(
        accepted(data.get("model")) or data.get("model") is None, expected, data.get("model"), ex
    )
    wrong = [n for n in streamed if n is not None and not accepted(n)]
    ctx.expect(
        not wrong,
        f"{expected}, in every streamed event that names one",
        f"{trim(', '.join(sorted(set(map(repr, wrong)))), 200)} in {len(wrong)} of "
        f"{len(streamed)} event(s)",
        stream_ex,
    )
    counted = sum(n is not None for n in streamed)
    return (
        f"{route}: the answer names {data.get('model')!r} and {counted} of {len(streamed)} "
        "streamed event(s) name"
        f" {sorted(set(map(str, named)))}, for the model asked for, {ctx.model!r}"
    )

"""How each check in `pytest_infer/conformance/checks/models.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

from typing import Any

from pytest_infer.testing.fakeserver import CONTEXT_LENGTH, MODEL, Deviation

from ..deviations import answer_when
from . import Proof


def _models_without_owner(p: str, body: dict):
    if p == "/v1/models":
        return 200, {
            "object": "list",
            "data": [
                {
                    "id": MODEL,
                    "object": "model",
                    "created": 1_700_000_000,
                    "max_model_len": CONTEXT_LENGTH,
                }
            ],
        }
    return None


def card(**changes: Any) -> dict:
    return {
        "id": MODEL,
        "object": "model",
        "created": 1_700_000_000,
        "owned_by": "fakeserver",
        "max_model_len": CONTEXT_LENGTH,
    } | changes


def _listing(body: Any) -> Deviation:
    return answer_when(lambda p, b: p == "/v1/models", 200, body)


def _entries(*cards: Any) -> Deviation:
    return _listing({"object": "list", "data": list(cards)})


def _retrieved(body: Any) -> Deviation:
    return answer_when(lambda p, b: p == f"/v1/models/{MODEL}", 200, body)


PROOFS: dict[str, Proof] = {
    "models.list": Proof(
        mutation=Deviation(request=_models_without_owner),
        says="owned_by",
        sends={"GET /v1/models": ""},
        branches=[
            ("object", _listing({"object": "lists", "data": [card()]}), '"object": "lists"'),
            (
                "data-not-list",
                _listing({"object": "list", "data": card()}),
                '"data": {"id": "fake-model"',
            ),
            (
                "entry-not-object",
                _entries(card(), "gpt-x"),
                "gpt-x: entry 'gpt-x' is not an object",
            ),
            ("id", _entries(card(), card(id=7)), "7: id is not a non-empty string"),
            ("empty-id", _entries(card(), card(id="")), "got:      : id is not a non-empty string"),
            ("object-card", _entries(card(object="card")), "object is 'card'"),
            ("created-str", _entries(card(created="2024")), "created is '2024'"),
            ("created-bool", _entries(card(created=True)), "created is True"),
            ("missing-model", _entries(card(id="other-model")), 'got:      ["other-model"]'),
            (
                "two-at-once",
                _entries(card(object="card", created="x")),
                f"object is 'card', not 'model'; {MODEL}: created is 'x'",
            ),
        ],
    ),
    "models.retrieve": Proof(
        mutation=answer_when(
            lambda p, b: p.startswith("/v1/models/"), 404, {"detail": "Not Found"}
        ),
        says="HTTP 404",
        sends={"GET /v1/models/fake-model": ""},
        branches=[
            (
                "card",
                _retrieved({k: v for k, v in card().items() if k != "owned_by"}),
                "owned_by is None",
            ),
            ("other-id", _retrieved(card(id="other-model")), '"id": "other-model"'),
            (
                "two-at-once",
                _retrieved(card(object="card", created="x")),
                "object is 'card', not 'model'; created is 'x'",
            ),
        ],
    ),
}

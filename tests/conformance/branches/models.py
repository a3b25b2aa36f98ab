"""Further failure branches of the checks in `pytest_infer/conformance/checks/models.py`, each its own deviation."""

from __future__ import annotations

from typing import Any

from pytest_infer.testing.fakeserver import CONTEXT_LENGTH, MODEL, Deviation

from ..deviations import answer_when


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


BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "models.list": [
        ("object", _listing({"object": "lists", "data": [card()]}), '"object": "lists"'),
        ("data-not-list", _listing({"object": "list", "data": card()}), '"data": {"id": "fake-model"'),
        ("entry-not-object", _entries(card(), "gpt-x"), "gpt-x: entry 'gpt-x' is not an object"),
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
    "models.retrieve": [
        ("card", _retrieved({k: v for k, v in card().items() if k != "owned_by"}), "owned_by is None"),
        ("other-id", _retrieved(card(id="other-model")), '"id": "other-model"'),
        ("two-at-once", _retrieved(card(object="card", created="x")), "object is 'card', not 'model'; created is 'x'"),
    ],
}

"""How each check in `pytest_infer/conformance/checks/embeddings.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.testing.fakeserver import Deviation

from ..deviations import _embeddings, _vector, answer_when, embeddings
from . import Proof

EMBEDDINGS = "/v1/embeddings"


def _answer(
    change: Callable[[dict, dict], None], when: Callable[[dict], bool] = lambda body: True
) -> Deviation:
    """The correct embeddings answer, then ``change(body, answer)`` for requests ``when`` picks."""

    def request(p: str, body: dict) -> tuple[int, Any] | None:
        if p != EMBEDDINGS or not when(body):
            return None
        answer = embeddings(body)
        change(body, answer)
        return 200, answer

    return Deviation(request=request)


def _first(**changes: Any) -> Deviation:
    return _answer(lambda body, a: a["data"][0].update(changes))


def _encoding(name: str) -> Callable[[dict], bool]:
    return lambda body: body.get("encoding_format") == name


def _slightly_off(body: dict, answer: dict) -> None:
    """Each value 0.0015 off the float answer: beyond the 1e-3 tolerance (values under 1 in
    size)."""
    answer["data"][0]["embedding"] = base64.b64encode(
        struct.pack("<16f", *[x + 0.0015 for x in _vector("hello world", 16)])
    ).decode()


OFF_BY_0_0015 = struct.unpack("<f", struct.pack("<f", _vector("hello world", 16)[0] + 0.0015))[0]


def _zeros(body: dict, answer: dict) -> None:
    answer["data"][0]["embedding"] = base64.b64encode(struct.pack("<16f", *[0.0] * 16)).decode()


PROOFS: dict[str, Proof] = {
    "embeddings.base64": Proof(
        mutation=_embeddings(float64=True),
        says="values",
        sends={"POST /v1/embeddings": "encoding_format input model"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "float-not-numbers",
                _answer(
                    lambda body, a: a["data"][0].update(embedding=["0.5", "0.25"]),
                    _encoding("float"),
                ),
                '"embedding": ["0.5", "0.25"]',
            ),
            (
                "float-no-data",
                _answer(lambda body, a: a.update(data=[]), _encoding("float")),
                '"data": []',
            ),
            (
                "float-data-not-list",
                _answer(lambda body, a: a.update(data={"first": a["data"][0]}), _encoding("float")),
                '"data": {"first": {',
            ),
            (
                "float-item-not-object",
                _answer(lambda body, a: a.update(data=[[0.5, 0.25]]), _encoding("float")),
                '"data": [[0.5, 0.25]]',
            ),
            (
                "float-bools",
                _answer(
                    lambda body, a: a["data"][0].update(embedding=[True, False]), _encoding("float")
                ),
                '"embedding": [true, false]',
            ),
            (
                "slightly-off",
                _answer(_slightly_off, _encoding("base64")),
                f"16 values: [{OFF_BY_0_0015!r}, ",
            ),
            (
                "not-base64",
                _answer(
                    lambda body, a: a["data"][0].update(embedding="not base64!"),
                    _encoding("base64"),
                ),
                "not base64!",
            ),
            (
                "floats-for-base64",
                _answer(
                    lambda body, a: a["data"][0].update(embedding=[0.5, 0.25]), _encoding("base64")
                ),
                "[0.5, 0.25]",
            ),
            (
                "odd-length",
                _answer(
                    lambda body, a: a["data"][0].update(embedding="AAAAAAAA"), _encoding("base64")
                ),
                "AAAAAAAA",
            ),
            ("values", _answer(_zeros, _encoding("base64")), "16 values: [0.0, 0.0, 0.0, 0.0]"),
            (
                "item-not-object",
                _answer(
                    lambda body, a: a.update(data=[d["embedding"] for d in a["data"]]),
                    _encoding("base64"),
                ),
                '"data": ["',
            ),  # crashed
            (
                "not-an-object",
                answer_when(
                    lambda p, b: p == EMBEDDINGS and b.get("encoding_format") == "base64",
                    200,
                    ["AAAAAA=="],
                ),
                'a JSON object for base64 embeddings\ngot:      ["AAAAAA=="]',
            ),
            (
                "no-data",
                _answer(lambda body, a: a.update(data=[]), _encoding("base64")),
                '"data": []',
            ),
            (
                "data-not-list",
                _answer(lambda body, a: a.update(data={"0": a["data"][0]}), _encoding("base64")),
                '"data": {"0": {',
            ),
        ],
    ),
    "embeddings.dimensions": Proof(
        mutation=_embeddings(ignore_dimensions=True),
        says="vectors of 8 values",
        sends={"POST /v1/embeddings": "dimensions encoding_format input model"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        },
        branches=[
            (
                "no-data",
                _answer(
                    lambda body, a: a.update(data=[]), lambda body: body.get("dimensions") == 8
                ),
                "got:      []",
            ),
            (
                "item-not-object",
                _answer(
                    lambda body, a: a.update(data=[8, 8]), lambda body: body.get("dimensions") == 8
                ),
                "got:      [null, null]",
            ),  # crashed
            (
                "server-error",
                answer_when(
                    lambda p, b: p == EMBEDDINGS and b.get("dimensions") == 8,
                    500,
                    {"detail": "dimensions crashed"},
                ),
                "dimensions crashed",
            ),
        ],
    ),
    "embeddings.fields": Proof(
        mutation=_embeddings(no_index=True),
        says="index 0 and 1",
        sends={"POST /v1/embeddings": "encoding_format input model"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "order",
                _answer(lambda body, a: [d.update(index=1 - d["index"]) for d in a["data"]]),
                "got:      [1, 0]",
            ),
            ("object", _first(object="vector"), '"object": "vector"'),
            ("empty-vector", _first(embedding=[]), '"embedding": []'),
            ("not-a-list", _first(embedding="AAAAAA=="), '"embedding": "AAAAAA=="'),
            (
                "usage",
                _answer(lambda body, a: a.update(usage={"total_tokens": 4})),
                'got:      {"total_tokens": 4}',
            ),
            # these crashed the check (AttributeError) before it named them
            (
                "items-not-objects",
                _answer(lambda body, a: a.update(data=["x", "y"])),
                'got:      ["x", "y"]',
            ),
            (
                "data-not-list",
                _answer(lambda body, a: a.update(data={"first": a["data"][0]})),
                'got:      {"first": {"object": "embedding"',
            ),
            (
                "usage-not-object",
                _answer(lambda body, a: a.update(usage="4 tokens")),
                "got:      4 tokens",
            ),
        ],
    ),
}

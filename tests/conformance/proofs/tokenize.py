"""How each check in `pytest_infer/conformance/checks/tokenize.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

from pytest_infer.outcomes import Unsupported

from ..deviations import CHAT, answer_when, on_response
from . import Proof

PROOFS: dict[str, Proof] = {
    "tokenize.chat-count": Proof(
        mutation=on_response(
            lambda p, b, r: r.update(count=r["count"] - 5) if "messages" in b else None,
            path="/tokenize",
        ),
        says="got:      25",
        sends={
            "POST /tokenize": "messages model",
            "POST /v1/chat/completions": "max_tokens messages model",
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "not-int",
                on_response(
                    lambda p, b, r: r.update(count=float(r["count"])) if "messages" in b else None,
                    path="/tokenize",
                ),
                "got:      30.0",
            ),
            (
                "chat-not-an-object",
                answer_when(lambda p, b: p == CHAT, 200, "Paris"),
                'a JSON object for the same chat\ngot:      "Paris"',
            ),
        ],
    ),
    "tokenize.round-trip": Proof(
        mutation=on_response(
            lambda p, b, r: r.update(prompt="<s>" + r["prompt"]), path="/detokenize"
        ),
        says="<s>Hello, world!",
        sends={
            "POST /detokenize": "model tokens",
            "POST /tokenize": "add_special_tokens model prompt",
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "count",
                on_response(lambda p, b, r: r.update(count=r["count"] + 1), path="/tokenize"),
                "got:      29",
            ),
            (
                "ids",
                on_response(
                    lambda p, b, r: r.update(tokens=[str(t) for t in r["tokens"]]), path="/tokenize"
                ),
                '["72", "101"',
            ),
            (
                "no-ids",
                on_response(lambda p, b, r: r.update(tokens=[], count=0), path="/tokenize"),
                "got:      []",
            ),
            (
                "bool-ids",
                on_response(
                    lambda p, b, r: r.update(tokens=[True] * len(r["tokens"])), path="/tokenize"
                ),
                "got:      [true, true",
            ),
            (
                "detokenize-not-an-object",
                answer_when(lambda p, b: p == "/detokenize", 200, ["Hello, world!"]),
                'a JSON object for POST /detokenize\ngot:      ["Hello, world!"]',
            ),
        ],
    ),
}

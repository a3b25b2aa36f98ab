"""Further failure branches of the checks in `pytest_infer/conformance/checks/tokenize.py`, each its own deviation."""

from __future__ import annotations

from pytest_infer.testing.fakeserver import Deviation

from ..deviations import CHAT, answer_when, on_response

BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "tokenize.round-trip": [
        ("no-ids", on_response(lambda p, b, r: r.update(tokens=[], count=0), path="/tokenize"), "got:      []"),
        (
            "bool-ids",
            on_response(lambda p, b, r: r.update(tokens=[True] * len(r["tokens"])), path="/tokenize"),
            "got:      [true, true",
        ),
        (
            "detokenize-not-an-object",
            answer_when(lambda p, b: p == "/detokenize", 200, ["Hello, world!"]),
            'a JSON object for POST /detokenize\ngot:      ["Hello, world!"]',
        ),
    ],
    "tokenize.chat-count": [
        (
            "not-int",
            on_response(
                lambda p, b, r: r.update(count=float(r["count"])) if "messages" in b else None, path="/tokenize"
            ),
            "got:      30.0",
        ),
        (
            "chat-not-an-object",
            answer_when(lambda p, b: p == CHAT, 200, "Paris"),
            'a JSON object for the same chat\ngot:      "Paris"',
        ),
    ],
}

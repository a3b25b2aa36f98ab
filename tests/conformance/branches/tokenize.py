"""Further failure branches of the checks in `pytest_infer/conformance/checks/tokenize.py`, each its own deviation."""
from __future__ import annotations

from pytest_infer.testing.fakeserver import Deviation

from ..deviations import on_response

BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "tokenize.round-trip": [
        ("no-ids", on_response(lambda p, b, r: r.update(tokens=[], count=0), path="/tokenize"), "got:      []"),
        ("bool-ids", on_response(lambda p, b, r: r.update(tokens=[True] * len(r["tokens"])), path="/tokenize"), "got:      [true, true"),
    ],
    "tokenize.chat-count": [
        ("not-int", on_response(lambda p, b, r: r.update(count=float(r["count"])) if "messages" in b else None, path="/tokenize"), "got:      30.0"),
    ],
}

"""Adding a conformance check takes two files: the check's module and its area's proof module.

This walk-through writes both into a temporary folder, as a contributor writes
``pytest_infer/conformance/checks/<area>.py`` and ``tests/conformance/proofs/<area>.py``. The
machinery that proves every bundled check (``proofs.collect`` and ``proofs.prove``) asks for the
proof, naming the file to write, then proves the new check both ways: it passes on the correct
server and fails on its mutation, saying what the proof says it must.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_infer import conformance
from pytest_infer.testing.fakeserver import FakeServer

from . import deviations, proofs
from .proofs import Proof, area, collect, fails_on_its_mutation, prove

# what a contributor writes in pytest_infer/conformance/checks/greeting.py
CHECK_MODULE = """
from pytest_infer.conformance import CheckContext, check


@check("greeting.text", "a chat answer's content is text", reference="our API contract")
def text(ctx: CheckContext) -> str:
    ex = ctx.chat(max_tokens=4)
    data = ctx.expect_json_object(ex, "a chat completion")
    choices = data.get("choices")
    message = choices[0].get("message") if isinstance(choices, list) and choices else None
    content = message.get("content") if isinstance(message, dict) else None
    ctx.expect(isinstance(content, str), "a string content", content, ex)
    return f"content {content!r} for a chat of 4 tokens"
"""

# ... and in tests/conformance/proofs/greeting.py
PROOF_MODULE = f"""
from {deviations.__name__} import _choice, on_response
from {proofs.__name__} import Proof

PROOFS = {{
    "greeting.text": Proof(
        mutation=on_response(lambda p, b, r: _choice(r)["message"].update(content=7)),
        says="got:      7",
        sends={{"POST /v1/chat/completions": "max_tokens messages model"}},
    ),
}}
"""


PACKAGES = ("walkthrough_checks", "walkthrough_proofs")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A checks package and a proofs package of one's own, forgotten afterwards."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    yield tmp_path
    conformance.REGISTRY.unregister("greeting.text")
    for name in [m for m in sys.modules if m.startswith(PACKAGES)]:
        del sys.modules[name]


def _collected(check: conformance.Check) -> tuple[dict[str, Proof], list[str]]:
    importlib.invalidate_caches()
    sys.modules.pop("walkthrough_proofs.greeting", None)
    return collect([check], package="walkthrough_proofs")


def test_a_new_check_is_asked_for_its_proof_then_proven_both_ways(
    folder: Path, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    (folder / "walkthrough_checks" / "greeting.py").write_text(CHECK_MODULE)
    importlib.import_module("walkthrough_checks.greeting")  # registers it, as checks/__init__ does
    check = conformance.REGISTRY["greeting.text"]
    assert area(check) == "greeting"
    proof_file = folder / "walkthrough_proofs" / "greeting.py"

    # 1. no proof module for its area: told which file to create
    assert _collected(check) == (
        {},
        [f"create {proof_file} with PROOFS = {{check_id: Proof(...)}} for ['greeting.text']"],
    )
    # 2. the module, without the check's entry: told which entry to add, where
    proof_file.write_text("PROOFS = {}\n")
    assert _collected(check) == ({}, [f"add PROOFS['greeting.text'] to {proof_file}"])
    # 3. its proof: the same functions that prove every bundled check prove it
    proof_file.write_text(PROOF_MODULE)
    found, gaps = _collected(check)
    assert not gaps and set(found) == {"greeting.text"}
    prove("greeting.text", found["greeting.text"], ctx, fake)


def test_a_mutation_the_new_check_does_not_fail_on_is_caught(
    folder: Path, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A check that cannot fail on its mutation proves nothing, and its proof fails."""
    (folder / "walkthrough_checks" / "greeting.py").write_text(CHECK_MODULE)
    importlib.import_module("walkthrough_checks.greeting")
    harmless = Proof(
        mutation=deviations.on_response(lambda p, b, r: r.update(id="chatcmpl-other")),
        says="got:      7",
        sends={"POST /v1/chat/completions": "max_tokens messages model"},
    )
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        fails_on_its_mutation("greeting.text", harmless, ctx, fake)

"""The conformance suite's core: the check registry, typed failures, contexts, and declarations.

Register a check of your own from a ``conftest.py``; the bundled suite
(``suites/conformance``) runs it against every target like the built-in ones::

    from pytest_infer import conformance

    @conformance.check("myorg.greeting", "the model answers hello", reference="our API contract")
    def greeting(ctx):
        ex = ctx.chat(max_tokens=4) ctx.expect(ex.status == 200, "HTTP 200", ex.text, ex) return
        f"HTTP 200 for a chat of 4 tokens: {ex.text[:80]}"  # the evidence: what the pass judged

A check that returns no evidence judged nothing: it is inconclusive, never a pass.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "CheckContext": "context",
    "Exchange": "context",
    "StreamExchange": "context",
    "Expectations": "declarations",
    "ExpectationsError": "declarations",
    "load_expectations": "declarations",
    "CheckFailure": "failures",
    "DeclaredDeviation": "failures",
    "Inconclusive": "failures",
    "Unsupported": "failures",
    "FEATURES": "registry",
    "REGISTRY": "registry",
    "Check": "registry",
    "CheckRegistry": "registry",
    "DuplicateCheckError": "registry",
    "check": "registry",
}
__all__ = [*_NAMES, "run"]


def __getattr__(name: str) -> Any:
    """Imported on first use, with the bundled checks registered, so loading the plugin does not
    load 96 checks.
    """
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    importlib.import_module(f"{__name__}.checks")
    module = importlib.import_module(f"{__name__}.{_NAMES[name]}")
    return getattr(module, "load" if name == "load_expectations" else name)


def run(check_id: str, ctx: Any, excuse: Any = None) -> str:
    """Run a registered check against ``ctx``: its evidence, or ``CheckFailure``, ``Unsupported`` or
    another skip; ``excuse(failure)`` names the declaration that excuses a failure
    (``CheckRegistry.run``)."""
    evidence: str = __getattr__("REGISTRY").run(check_id, ctx, excuse)
    return evidence

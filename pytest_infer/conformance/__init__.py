"""The conformance suite's core: the check registry, typed failures, contexts, and expectations.

Register a check of your own from a ``conftest.py``; the bundled suite
(``suites/conformance``) runs it against every target like the built-in ones::

    from pytest_infer import conformance

    @conformance.check("myorg.greeting", "the model answers hello", reference="our API contract")
    def greeting(ctx):
        ex = ctx.chat(max_tokens=4)
        ctx.expect(ex.status == 200, "HTTP 200", ex.text, ex)
"""
from __future__ import annotations

from . import checks as _checks  # noqa: F401  (registers the bundled checks)
from .context import CheckContext, Exchange, StreamExchange
from .expectations import Expectations, ExpectationsError
from .expectations import load as load_expectations
from .failures import CheckFailure, Inconclusive, Unsupported
from .registry import FEATURES, REGISTRY, Check, CheckRegistry, DuplicateCheckError, check

__all__ = [
    "FEATURES",
    "REGISTRY",
    "Check",
    "CheckContext",
    "CheckFailure",
    "CheckRegistry",
    "DuplicateCheckError",
    "Exchange",
    "Expectations",
    "ExpectationsError",
    "Inconclusive",
    "StreamExchange",
    "Unsupported",
    "check",
    "load_expectations",
    "run",
]


def run(check_id: str, ctx: CheckContext) -> None:
    """Run a registered check against ``ctx`` (raises ``CheckFailure``, ``Unsupported`` or a skip)."""
    REGISTRY.run(check_id, ctx)

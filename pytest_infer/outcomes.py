"""What the plugin raises: one root for its errors, and the test outcomes that are not verdicts.

Kept free of heavy imports: the plugin module needs these on every pytest run, wherever it is
installed, and must not pull in the conformance checks or jsonschema to get them.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest


class InferError(Exception):
    """Root of pytest-infer's own errors: ``except InferError`` catches every one of them."""


class MissingExtra(InferError, ImportError):
    """An optional part used where its extra is not installed: a plain install stays light, and says what to add."""


def optional_module(name: str, extra: str, purpose: str) -> Any:
    """``name`` imported, or ``MissingExtra`` naming the ``pytest-infer[extra]`` that installs it for ``purpose``."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        top = name.partition(".")[0]
        raise MissingExtra(f"{purpose} need {top}, not installed: pip install 'pytest-infer[{extra}]'") from exc


class Unsupported(pytest.skip.Exception):  # type: ignore[name-defined]  # pytest's public alias of Skipped
    """The framework does not offer a feature a check needs: reported as "unsupported", not "broken"."""

    def __init__(self, feature: str, reason: str) -> None:
        self.feature = feature
        super().__init__(f"unsupported: {feature}: {reason}", allow_module_level=False)


class Inconclusive(pytest.skip.Exception):  # type: ignore[name-defined]
    """The model, not the server, kept the check from deciding (e.g. a random model never ended its JSON)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"inconclusive: {reason}", allow_module_level=False)


class NotExercised(pytest.skip.Exception):  # type: ignore[name-defined]
    """The check met nothing to judge on this server (no error event in the stream): "not exercised", never a pass."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"not exercised: {reason}", allow_module_level=False)


class NotRun(pytest.skip.Exception):  # type: ignore[name-defined]
    """A skip that the results record as ``not_run``: the test's target never became ready."""

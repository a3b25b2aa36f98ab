"""Further failure branches of the checks in `pytest_infer/conformance/checks/responses.py`, each its own deviation."""
from __future__ import annotations

from pytest_infer.testing.fakeserver import Deviation

BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {}

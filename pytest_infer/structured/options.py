"""The structured-output suite's options as a session reads them (its plugin parses them when a
session uses them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# the request paths each case runs on (the cases' first parameter; the table folds one case's
# failures across them)
REQUEST_PATHS = ("response_format", "response_format-stream", "native")


@dataclass(frozen=True, slots=True)
class StructuredOptions:
    examples: int
    seed: int
    keywords: frozenset[str] | None
    timeout: float
    shrink_seconds: float
    tokenizer: Path | None

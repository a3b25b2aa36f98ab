"""What a check raises: a typed failure that reproduces itself, or "the framework does not offer
this".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..outcomes import Inconclusive, Unsupported

__all__ = ["CheckFailure", "DeclaredDeviation", "Excused", "Inconclusive", "Unsupported", "trim"]

TRIM = 600


def trim(value: Any, limit: int = TRIM) -> str:
    """A value as short text: JSON where possible, cut in the middle so both ends stay visible."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    if len(text) <= limit:
        return text
    half = (limit - 20) // 2
    return f"{text[:half]} ...[{len(text) - 2 * half} chars]... {text[-half:]}"


class CheckFailure(AssertionError):
    """A check found a deviation: what was expected, what came back, and a curl line to see it
    again.

    An ``AssertionError`` so that code outside the registry (a user's own test)
    still fails, not errors, when it lets one through.
    """

    def __init__(
        self,
        expected: str,
        got: Any,
        curl: str = "",
        *,
        check_id: str = "",
        title: str = "",
        severity: str = "error",
    ) -> None:
        self.expected, self.got, self.curl = expected, trim(got), curl
        self.check_id, self.title, self.severity = check_id, title, severity
        self.note = ""  # a last line: what a declaration excused before this failure
        super().__init__(self.render())

    @property
    def judged(self) -> str:
        """What a declaration's ``matches`` regex reads: the expected and got lines, not the
        reproducer (a regex that matched the request would excuse every failure of it)."""
        return f"expected: {self.expected}\ngot:      {self.got}"

    def render(self) -> str:
        head = f"[{self.check_id}] {self.title} ({self.severity})\n" if self.check_id else ""
        lines = [f"{head}{self.judged}"]
        if self.curl:
            lines.append(f"reproduce: {self.curl}")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def attach(self, check_id: str, title: str, severity: str) -> CheckFailure:
        self.check_id, self.title, self.severity = check_id, title, severity
        self.args = (self.render(),)
        return self


@dataclass(frozen=True, slots=True)
class Excused:
    """A failure a check met and went on past: the declaration that excuses it (its description), or
    none where it follows from an excused failure of the same request (a declared 404 has no model
    card either)."""

    failure: CheckFailure
    declaration: str | None

    def render(self) -> str:
        if self.declaration is None:
            return f"following from it, on the same request: {self.failure.judged}"
        return f"{self.failure}\nknown deviation: {self.declaration}"


class DeclaredDeviation(AssertionError):
    """A check whose every failure a declaration in an expectations file names (or follows from one
    that does): the suite's xfail marker takes this class alone (``raises=``), so any other failure
    of the same check stays a failure. ``curl`` repeats the first excused request."""

    def __init__(self, excused: list[Excused], stopped: str = "") -> None:
        self.excused, self.curl = excused, excused[0].failure.curl
        lines = [e.render() for e in excused]
        if stopped:
            lines.append(f"the check could not go on past it: {stopped}")
        super().__init__("\n".join(lines))

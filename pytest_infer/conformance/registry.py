"""The check registry: every check has a stable id, a title, the spec it enforces, a severity and
needs.

Checks are plain functions of a ``CheckContext`` (sync or ``async``) registered
by the ``check`` decorator; a second registration of an id is refused, so a
user's conftest cannot silently replace a bundled check. A check returns its
evidence: a short text naming what it judged (answers, fields, events counted).
A check that returns none judged nothing, and ``run`` makes that inconclusive,
never a pass.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from ..outcomes import InferError
from .failures import CheckFailure, DeclaredDeviation, Inconclusive, Unsupported

if TYPE_CHECKING:
    from .context import CheckContext

CHECK_SEVERITIES = ("error", "warning")
# Features a framework may not offer; a check that needs one is "unsupported" there, not failed.
FEATURES = (
    "completions",
    "prompt_list",
    "n",
    "echo",
    "logprobs",
    "tools",
    "response_format",
    "seed",
    "embeddings",
    "tokenize",
    "responses",
    "responses_store",
    "messages",
)


class DuplicateCheckError(InferError, ValueError):
    """A check id registered twice."""


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    title: str
    reference: str
    severity: str
    func: Callable[..., Any]
    needs: frozenset[str] = frozenset()
    capable_model: bool = False
    description: str = ""

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)


@dataclass(slots=True)
class CheckRegistry:
    checks: dict[str, Check] = field(default_factory=dict)

    def register(self, check: Check) -> Check:
        if check.id in self.checks:
            other = self.checks[check.id].func
            raise DuplicateCheckError(
                f"check id {check.id!r} is already registered by "
                f"{other.__module__}.{other.__qualname__}"
            )
        if check.severity not in CHECK_SEVERITIES:
            raise ValueError(
                f"check {check.id!r}: severity must be one of {CHECK_SEVERITIES}, got "
                f"{check.severity!r}"
            )
        unknown = check.needs - set(FEATURES)
        if unknown:
            raise ValueError(
                f"check {check.id!r}: unknown feature(s) {sorted(unknown)}; known: "
                f"{', '.join(FEATURES)}"
            )
        self.checks[check.id] = check
        return check

    def unregister(self, check_id: str) -> None:
        self.checks.pop(check_id, None)

    def __getitem__(self, check_id: str) -> Check:
        try:
            return self.checks[check_id]
        except KeyError:
            raise KeyError(
                f"no check {check_id!r}; registered: {', '.join(sorted(self.checks))}"
            ) from None

    def __iter__(self) -> Iterator[Check]:
        return iter(sorted(self.checks.values(), key=lambda c: c.id))

    def __len__(self) -> int:
        return len(self.checks)

    def __contains__(self, check_id: object) -> bool:
        return check_id in self.checks

    def check(
        self,
        id: str,
        title: str,
        *,
        reference: str,
        severity: str = "error",
        needs: tuple[str, ...] = (),
        capable_model: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register ``func(ctx)`` as check ``id``; the function is returned unchanged."""

        def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
            doc = inspect.getdoc(func) or ""
            self.register(
                Check(id, title, reference, severity, func, frozenset(needs), capable_model, doc)
            )
            return func

        return decorate

    def run(
        self,
        check_id: str,
        ctx: CheckContext,
        excuse: Callable[[CheckFailure], str | None] | None = None,
    ) -> str:
        """Run one check against ``ctx`` and return its evidence; a failure comes back as a
        ``CheckFailure`` naming the check, and a check that names no evidence is ``Inconclusive``:
        it judged nothing.

        ``excuse(failure)``: the declaration that excuses a failure (its description), or None. An
        excused failure does not end the check (``CheckContext.expect``); the rest still runs, and a
        failure nothing excuses fails it. A check whose every failure was excused ends in
        ``DeclaredDeviation``, also when what came after the excused failure could not go on (a
        crash or a skip on the answer it showed wrong)."""
        check = self[check_id]
        for feature in sorted(check.needs):
            if feature in ctx.unsupported:
                raise Unsupported(feature, ctx.unsupported[feature])
        if check.capable_model and ctx.tiny:
            pytest.skip(
                f"needs a capable model: {check.title} cannot be judged on the random built-in "
                "'tiny' model"
            )
        ctx.excuse, ctx.excused = excuse, []
        stopped = ""
        try:
            evidence = asyncio.run(check.func(ctx)) if check.is_async else check.func(ctx)
        except CheckFailure as failure:
            if not ctx.was_excused(failure):
                if ctx.excused:
                    failure.note = (
                        f"after {len(ctx.excused)} excused failure(s) of the same check, the "
                        "first: " + (ctx.excused[0].failure.judged.replace("\n", " | "))
                    )
                raise failure.attach(check.id, check.title, check.severity) from None
        except (Exception, pytest.skip.Exception) as exc:
            if not ctx.excused:
                raise
            stopped = f"{type(exc).__name__}: {exc}"
        finally:
            ctx.excuse = None
        if ctx.excused:
            for e in ctx.excused:
                e.failure.attach(check.id, check.title, check.severity)
            raise DeclaredDeviation(ctx.excused, stopped)
        if not isinstance(evidence, str) or not evidence.strip():
            raise Inconclusive(
                f"{check.id} judged nothing: the check returned {evidence!r}, not the evidence it "
                "judged"
            )
        return evidence


REGISTRY = CheckRegistry()
check = REGISTRY.check

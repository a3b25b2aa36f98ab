"""The ``Suite`` interface: what the core (plugin, results, reports, gate) knows of a suite.

A suite is one package (``pytest_infer/conformance``, ``structured``, ``slo``,
``robustness``) and one registration: an entry point of the group
``pytest_infer.suites`` naming its ``Suite``, or a ``pytest_infer_suites`` hook
in a ``conftest.py``. The core loops over the registered suites and never names
one: a suite brings its marker, its pytest plugin (options, fixtures), its typed
results table, the table's rows in every report, and its findings for the gate.
Its settings reach the core through two generic channels: its gate settings, an
opaque value under its name (``InferSession.settings``, ``Pairing.settings``), and
labelled values that make a target a variant of the same server
(``InferSession.variant``, ``TargetRecord.variant``: part of a target's identity).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ._lazy import entry_points, resolve
from .outcomes import InferError

if TYPE_CHECKING:
    import argparse

    from .table import Table

ENTRY_POINT_GROUP = "pytest_infer.suites"


class SuiteError(InferError, ValueError):
    """A suite that cannot be registered: a broken entry point, a name taken twice."""


class SuiteCli:
    """A suite's part in the ``pytest-infer`` command (``Suite.cli`` names an instance): each
    default adds nothing, so a suite overrides what it brings."""

    def add_arguments(self, parser: argparse.ArgumentParser, command: str) -> None:
        """Add its arguments to a core command (``compare``, ``history``)."""

    def settings(self, args: argparse.Namespace) -> Any:
        """Its gate settings (``Pairing.settings``) from its arguments, raising an ``InferError`` on
        bad input; ``None``: it has none."""
        return None

    def commands(self, subparsers: argparse._SubParsersAction) -> None:
        """Add commands of its own, each a parser whose ``func(args)`` returns the exit status."""

    def folders(self) -> tuple[str, ...]:
        """The project folders it bundles, for ``pytest-infer path``."""
        return ()


@dataclass(frozen=True, slots=True)
class Suite:
    """A suite as the core sees it. ``plugin`` is the module holding its options and fixtures,
    registered with pytest-infer's own; ``runs_last`` orders its tests after every other suite's.

    ``cli`` is the ``"module:attribute"`` of its ``SuiteCli``, its part in the ``pytest-infer``
    command, imported when the command runs (``command_line()``)."""

    name: str
    description: str
    # the table class, or its "module:class" to import on first use (``table_type``): pytest loads
    # every installed suite's registration at start-up, and a run that tests no server needs no
    # table
    table: type[Table] | str = "pytest_infer.table:Table"
    plugin: str | None = None
    runs_last: bool = False
    cli: str | None = None
    RESERVED: ClassVar[frozenset[str]] = frozenset(
        {"schema_version", "plugin_version", "environment", "targets", "tests", "gate"}
    )

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name in self.RESERVED:
            raise SuiteError(
                f"suite name {self.name!r}: must be an identifier and not one of "
                f"{', '.join(sorted(self.RESERVED))}"
            )

    def table_type(self) -> type[Table]:
        return self.table if isinstance(self.table, type) else _table_type(self.table, self.name)

    def command_line(self) -> SuiteCli | None:
        """Its part in the ``pytest-infer`` command; None for a suite that adds nothing there."""
        return None if self.cli is None else _suite_cli(self.cli, self.name)


@functools.cache
def _table_type(spec: str, suite: str) -> type[Table]:
    # lazy: every pytest run loads the registry; a table only when a session reads one
    from .table import Table

    try:
        found = resolve(spec)
    except (ImportError, AttributeError) as exc:
        raise SuiteError(f"suite {suite!r}: cannot load its table {spec!r}: {exc}") from exc
    if not (isinstance(found, type) and issubclass(found, Table)):
        raise SuiteError(f"suite {suite!r}: its table {spec!r} is no pytest_infer.Table subclass")
    return found


@functools.cache
def _suite_cli(spec: str, suite: str) -> SuiteCli:
    if ":" not in spec:
        raise SuiteError(
            f"suite {suite!r}: its cli {spec!r} must be 'module:attribute', naming a SuiteCli "
            "instance"
        )
    try:
        found = resolve(spec)
    except (ImportError, AttributeError) as exc:
        raise SuiteError(
            f"suite {suite!r}: cannot load its command-line part {spec!r}: {exc}"
        ) from exc
    if not isinstance(found, SuiteCli):
        raise SuiteError(
            f"suite {suite!r}: its cli {spec!r} is a {type(found).__name__}, not a "
            "pytest_infer.SuiteCli instance"
        )
    return found


def _load(spec: str, source: str) -> Suite:
    try:
        suite = resolve(spec)
    except (ImportError, AttributeError) as exc:
        raise SuiteError(f"{source}: cannot load suite {spec!r}: {exc}") from exc
    if not isinstance(suite, Suite):
        raise SuiteError(
            f"{source}: {spec!r} is a {type(suite).__name__}, not a pytest_infer.Suite"
        )
    return suite


@functools.cache
def installed() -> tuple[Suite, ...]:
    """The suites of every installed package's ``pytest_infer.suites`` entry points, this one's
    included.
    """
    found = [
        _load(ep.value, f"entry point {ep.name!r} of {ENTRY_POINT_GROUP}")
        for ep in entry_points(group=ENTRY_POINT_GROUP)
    ]
    return tuple(sorted(found, key=lambda s: (s.runs_last, s.name)))


def by_name(suites: Iterable[Suite]) -> dict[str, Suite]:
    """Name -> suite, refusing one name claimed by two different suites."""
    out: dict[str, Suite] = {}
    for suite in suites:
        if suite.name in out and out[suite.name] != suite:
            raise SuiteError(
                f"two suites are named {suite.name!r}: {out[suite.name].description!r} and "
                f"{suite.description!r}"
            )
        out[suite.name] = suite
    return out

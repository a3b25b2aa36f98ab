"""Package attributes imported on first use, and installed entry points read once, so loading the
plugin costs little in runs that do not use a suite."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint


def resolve(spec: str) -> Any:
    """What ``"module:attribute"`` names, imported now; ``ImportError`` or ``AttributeError`` when
    it cannot be. (``pkgutil.resolve_name`` does the same, but loading ``pkgutil`` would cost every
    pytest run.)"""
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def exports(
    package: str, names: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps each public name to its
    submodule.
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{names[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__


@functools.cache
# SelectableGroups on 3.11, EntryPoints from 3.12: both select by group
def _installed_entry_points() -> Any:
    # pytest has loaded it by the time a plugin asks; a bare import need not
    from importlib import metadata

    return metadata.entry_points()


def entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The installed entry points of ``group``. Every group comes from one pass over the installed
    distributions, once per process: the suites' group and the adapters' are both read when pytest
    starts."""
    return tuple(_installed_entry_points().select(group=group))

"""The framework adapters by the name users type: the built-ins, then those that installed
packages declare in the ``pytest_infer.adapters`` entry-point group (``toy = pkg.mod:ToyAdapter``,
an ``Adapter`` class or instance).

Built-ins and entry points alike are imported only when their framework is looked up: loading the
plugin names the frameworks without importing an adapter, and a broken entry point costs nothing
until it is asked for, and then says which one it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, cast

import pytest

from .._lazy import entry_points, resolve
from ..outcomes import InferError

if TYPE_CHECKING:
    from .base import Adapter

GROUP = "pytest_infer.adapters"
# the built-in adapters: name -> "module:class", imported on first look-up
BUILTINS = {
    "vllm": "pytest_infer.adapters.vllm:VLLMAdapter",
    "sglang": "pytest_infer.adapters.sglang:SGLangAdapter",
    "lmdeploy": "pytest_infer.adapters.lmdeploy:LMDeployAdapter",
    "trtllm": "pytest_infer.adapters.trtllm:TensorRTLLMAdapter",
    "tgi": "pytest_infer.adapters.tgi:TGIAdapter",
    "transformers": "pytest_infer.adapters.transformers:TransformersAdapter",
    "llamacpp": "pytest_infer.adapters.llamacpp:LlamaCppAdapter",
}
# other names users type for a built-in framework: the project's own spelling, its server's program
ALIASES = {"llama.cpp": "llamacpp", "llama-server": "llamacpp"}


class AdapterLoadError(InferError, pytest.UsageError):  # type: ignore[misc]  # final in the stubs only
    """An installed adapter that cannot be used; names its entry point.

    A usage error, so that pytest ends with the message instead of an internal-error traceback.
    """


def _origin(ep: EntryPoint) -> str:
    dist = f" from {ep.dist.name} {ep.dist.version}" if ep.dist is not None else ""
    return f"entry point '{ep.name} = {ep.value}' ({GROUP}{dist})"


class Registry(Mapping[str, "Adapter"]):
    """Adapters by name; ``builtins`` are adapters, or name -> ``"module:class"`` to import on first
    look-up; ``entry_points`` defaults to the installed ones of ``GROUP``."""

    def __init__(
        self,
        builtins: Iterable[Adapter] | Mapping[str, str],
        entry_points: Iterable[EntryPoint] | None = None,
    ) -> None:
        self._builtins: dict[str, Adapter | str] = (
            dict(builtins)
            if isinstance(builtins, Mapping)
            else {adapter.name: adapter for adapter in builtins}
        )
        self._given = None if entry_points is None else tuple(entry_points)
        self._loaded: dict[str, Adapter] = {}

    @cached_property
    def _entry_points(self) -> dict[str, list[EntryPoint]]:
        found: dict[str, list[EntryPoint]] = {}
        for ep in entry_points(group=GROUP) if self._given is None else self._given:
            found.setdefault(ep.name, []).append(ep)
        return found

    def __iter__(self) -> Iterator[str]:
        yield from self._builtins
        yield from (name for name in self._entry_points if name not in self._builtins)

    def __len__(self) -> int:
        return len(self._builtins.keys() | self._entry_points.keys())

    def __contains__(self, name: object) -> bool:
        return name in self._builtins or name in self._entry_points

    def __getitem__(self, name: str) -> Adapter:
        if name in self._loaded:
            return self._loaded[name]
        declared = self._entry_points.get(name, [])
        if name in self._builtins and not declared:
            builtin = self._builtins[name]
            if isinstance(builtin, str):
                self._builtins[name] = builtin = cast("Adapter", resolve(builtin)())
            return builtin
        if not declared:
            raise KeyError(f"unknown framework {name!r}; valid: {', '.join(self)}")
        if len(declared) > 1 or name in self._builtins:
            claims = ["the built-in adapter"] if name in self._builtins else []
            raise AdapterLoadError(
                f"framework {name!r} is claimed twice: "
                f"{', '.join(claims + [_origin(ep) for ep in declared])}"
            )
        self._loaded[name] = _load(declared[0])
        return self._loaded[name]


def _load(ep: EntryPoint) -> Adapter:
    # lazy: the registry loads in every pytest run; base only with a third party's adapter
    from .base import missing_members

    try:
        obj = ep.load()
        adapter = obj() if isinstance(obj, type) else obj
    except Exception as exc:  # a third party's import or constructor: anything can go wrong
        raise AdapterLoadError(
            f"{_origin(ep)} failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    if missing := missing_members(adapter):
        raise AdapterLoadError(
            f"{_origin(ep)} is no Adapter: it lacks {', '.join(missing)} "
            "(subclass pytest_infer.adapters.base.BaseAdapter for the defaults)"
        )
    if adapter.name != ep.name:
        raise AdapterLoadError(
            f"{_origin(ep)} loads an adapter named {adapter.name!r}; the two names must match"
        )
    return adapter


ADAPTERS = Registry(BUILTINS)


def names() -> list[str]:
    return list(ADAPTERS)


def canonical(name: str) -> str:
    """The registry's name for ``name``, which may be an alias (``llama.cpp``): how options read
    what users type.
    """
    return ALIASES.get(name, name)


def get(name: str) -> Adapter:
    """A framework's adapter by name: for resolving the targets and the xdist hand-off, at
    configure; everything after asks the target or server for its ``adapter``."""
    return ADAPTERS[name]

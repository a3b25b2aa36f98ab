"""What a session tests: one Target per framework environment (or the external endpoint)."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from .adapters import registry
from .adapters.base import Adapter, Builtin, Deterministic, Environment, Parsers
from .adapters.external import ENDPOINT
from .models import registry as models
from .options import DETERMINISTIC, ENV, PARSER, InferOptions
from .paths import engines_dir


@dataclass(frozen=True, slots=True)
class Target:
    """One server under test. ``id`` is what test ids and report columns show; ``adapter`` is its
    framework's, found once when the targets are resolved (``EndpointAdapter`` for an endpoint of no
    named framework). ``builtin`` is the built-in model ``model`` names (None: any other), resolved
    then too."""

    id: str
    adapter: Adapter
    model: str
    environment: Environment | None = None
    endpoint: str | None = None
    server_args: tuple[str, ...] = ()
    parsers: Parsers = Parsers()  # the tool-call and reasoning parsers it runs, where known
    builtin: Builtin | None = None
    deterministic: Deterministic | None = None  # the batch-invariant mode it is launched in

    @property
    def framework(self) -> str:
        return self.adapter.name

    @property
    def launched(self) -> bool:
        return self.endpoint is None


def _version_key(path: Path) -> tuple:
    return tuple(int(n) if n.isdigit() else n for n in re.split(r"[.\-]", path.name))


def discover_environment(adapter: Adapter) -> Environment | None:
    """The current interpreter if it can import the framework, else the newest engine venv."""
    if adapter.module and importlib.util.find_spec(adapter.module) is not None:
        return Environment.current()
    root = engines_dir()
    for pattern in adapter.engine_dirs:
        candidates = sorted(
            (p for p in root.glob(pattern) if (p / "bin" / "python").exists()), key=_version_key
        )
        if candidates:
            return Environment.from_spec(str(candidates[-1]))
    return None


def launched_parsers(
    adapter: Adapter, options: InferOptions, builtin: Builtin | None
) -> tuple[tuple[str, ...], Parsers]:
    """The launch arguments for the parsers named, and the parsers the server will run (the built-in
    model's own on this framework where none is named)."""
    given = options.parsers or Parsers()
    try:
        args = adapter.parser_args(given, scripted=builtin is not None and builtin.scripted)
    except ValueError as exc:
        raise pytest.UsageError(f"{PARSER}: {exc}") from None
    if args == () and (given.tool or given.reasoning):
        raise pytest.UsageError(
            f"{PARSER}: {adapter.name} takes no tool-call or reasoning parser at launch"
        )
    defaults = builtin.parsers.get(adapter.name, Parsers()) if builtin else Parsers()
    named = given.tool or given.reasoning  # then the default reasoning parser stays off (vllm.py)
    return args, Parsers(
        given.tool or defaults.tool, given.reasoning or (None if named else defaults.reasoning)
    )


def resolve_targets(options: InferOptions) -> list[Target]:
    """The session's targets, each with its framework's adapter and the built-in model it
    serves: the one place a framework or a built-in model is looked up by name."""
    builtin = models.builtin(options.model)
    if options.endpoints:
        adapter = registry.get(options.frameworks[0]) if options.frameworks else ENDPOINT
        return [
            Target(
                id=name or adapter.name,
                adapter=adapter,
                model=options.model,
                endpoint=url,
                parsers=options.parsers or Parsers(),
                builtin=builtin,
            )
            for name, url in options.endpoints
        ]
    targets: list[Target] = []
    for framework in options.frameworks:
        adapter = registry.get(framework)
        if options.deterministic and adapter.deterministic is None:
            have = [a.name for a in registry.ADAPTERS.values() if a.deterministic is not None]
            raise pytest.UsageError(
                f"{DETERMINISTIC}: {adapter.title} has no batch-invariant mode to launch it in; "
                f"these have one: {', '.join(sorted(have))}"
            )
        environments = options.environments.get(framework)
        if not environments:
            found = discover_environment(adapter)
            if found is None and adapter.module is not None:
                raise pytest.UsageError(
                    f"no environment found for {framework}: it is not importable here and "
                    f"{engines_dir()} holds none "
                    f"of {', '.join(adapter.engine_dirs)}. Install it (scripts/install-engines.sh "
                    "for "
                    f"the CPU engines) or point at one with {ENV} {framework}=PATH"
                )
            environments = (found or Environment(label="PATH"),)
        for environment in environments:
            target_id = framework if len(environments) == 1 else f"{framework}@{environment.label}"
            parser_args, parsers = launched_parsers(adapter, options, builtin)
            targets.append(
                Target(
                    target_id,
                    adapter,
                    options.model,
                    environment=environment,
                    server_args=options.server_args + parser_args,
                    parsers=parsers,
                    builtin=builtin,
                    deterministic=adapter.deterministic if options.deterministic else None,
                )
            )
    ids = [t.id for t in targets]
    if len(set(ids)) != len(ids):
        raise pytest.UsageError(
            f"{ENV}: two environments of one framework share a folder name: {ids}"
        )
    return targets

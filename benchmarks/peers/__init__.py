"""The load clients ``client_bench.py`` measures beside ours, each driven from its own virtual environment.

A peer turns one load (streams, tokens, requests) into its own command line and reads its figures back
from its own result files; where it cannot express the load it says why (``cannot_express``), and the
table shows that instead of a figure. ``install.sh`` makes the environments (``ensure`` runs it on first
use), outside the project's ``.venv``: a peer is never a dependency of the plugin.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
INSTALL = HERE / "install.sh"


def peers_dir() -> Path:
    """Where install.sh puts one virtual environment per peer."""
    return Path(
        os.environ.get("PYTEST_INFER_PEERS") or Path.home() / ".cache" / "pytest-infer" / "peers"
    )


@dataclass(frozen=True, slots=True)
class Load:
    """What every tool is asked for: ``streams`` closed-loop streams, ``warmup`` then ``requests`` measured."""

    streams: int
    requests: int
    warmup: int
    input_tokens: int = 32
    output_tokens: int = 64
    model: str = "paced-model"


@dataclass(slots=True)
class Measured:
    """One tool's figures for one load, as read from its own result files (milliseconds)."""

    ttft_ms: list[float]
    itl_ms: list[float]  # every gap where the tool records them, else each request's mean gap
    output_tokens_per_s: float | None = None
    itl_kind: str = "gaps"  # or "per-request mean"
    notes: list[str] = field(default_factory=list)


class PeerError(Exception):
    """A peer's result files are missing or not in the format its parser reads."""


class Peer:
    """One tool: how to run it on a load and where its figures are."""

    name = ""
    package = ""  # the install.sh name; "" for a peer that comes with something else (vllm)
    env_name = ""  # its folder under peers_dir()

    def python(self) -> Path:
        return peers_dir() / self.env_name / "bin" / "python"

    def installed(self) -> bool:
        return self.python().exists()

    def cannot_express(self, load: Load) -> str | None:
        """Why this tool cannot run ``load`` as asked (None: it can)."""
        return None

    def command(self, load: Load, url: str, out: Path, tokenizer: Path) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return {}

    def parse(self, out: Path, load: Load) -> Measured:
        raise NotImplementedError


def read_json(path: Path) -> object:
    if not path.exists():
        raise PeerError(f"no result file {path.name} in {path.parent}")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise PeerError(f"{path.name} is not JSON: {exc}") from exc


def ensure(peers: list[Peer], dry_run: bool = False) -> dict[str, str]:
    """Install the missing peers (install.sh): one status line each, ``present``, ``installed`` or ``FAILED: why``."""
    names = [p.package for p in peers if p.package]
    status: dict[str, str] = {}
    if names:
        proc = subprocess.run(
            ["bash", str(INSTALL), *(["--dry-run"] if dry_run else []), *names],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTEST_INFER_PEERS": str(peers_dir())},
        )
        for line in proc.stdout.splitlines():
            name, sep, rest = line.partition(": ")
            if sep and name in names and not rest.startswith("installing"):
                status[name] = rest
        for name in names:
            status.setdefault(
                name, f"FAILED: install.sh exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
            )
    for peer in peers:
        if not peer.package:
            status[peer.name] = (
                f"present in {peer.python().parent.parent}"
                if peer.installed()
                else f"FAILED: no {peer.python()} (scripts/install-engines.sh installs it)"
            )
    return status


def all_peers() -> list[Peer]:
    from .aiperf import AIPerf
    from .guidellm import GuideLLM
    from .inference_perf import InferencePerf
    from .vllm_bench import VllmBench

    return [VllmBench(), AIPerf(), GuideLLM(), InferencePerf()]

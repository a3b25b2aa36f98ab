"""What a results file says about where it ran: plugin, Python, OS, CPU, GPU, and the project's
commit.

Each probe that fails (no ``git``, no driver) leaves an ``error`` entry instead
of crashing the run, as pytest-benchmark does with its machine info: a report
from a machine without a GPU must still be written. Stdlib only (values layer).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PROBE_TIMEOUT = 10.0


def _run(argv: list[str], cwd: Path | None = None) -> str:
    out = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=True
    )
    return out.stdout.strip()


def cpuinfo_field(key: str, cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The first ``key`` line's value in /proc/cpuinfo (``model name``, ``flags``); None where there
    is none.
    """
    try:
        for line in cpuinfo.read_text().splitlines():
            name, colon, value = line.partition(":")
            if colon and name.strip() == key:
                return value.strip()
    except OSError:
        pass
    return None


def cpu_info() -> dict[str, Any]:
    """Model name and logical core count; the model name from /proc/cpuinfo where there is one."""
    info: dict[str, Any] = {"arch": platform.machine(), "count": os.cpu_count()}
    info["model"] = cpuinfo_field("model name") or platform.processor() or None
    if hasattr(os, "sched_getaffinity"):
        info["usable"] = len(os.sched_getaffinity(0))
    return info


def gpu_info() -> dict[str, Any]:
    """GPU name, count, driver and CUDA version from ``nvidia-smi``; ``count: 0`` when there is
    none.
    """
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"count": 0}
    try:
        rows = _run(
            [smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader,nounits"]
        )
        header = _run([smi])
    except (OSError, subprocess.SubprocessError) as exc:
        return {"count": 0, "error": f"nvidia-smi failed: {exc}"}
    gpus = [
        dict(zip(("name", "driver", "memory_mib"), (c.strip() for c in row.split(","))))
        for row in rows.splitlines()
        if row.strip()
    ]
    cuda = None
    for token in header.split("CUDA Version:")[1:2]:
        cuda = token.split()[0].strip("|") if token.split() else None
    return {
        "count": len(gpus),
        "names": sorted({g["name"] for g in gpus}),
        "driver": gpus[0]["driver"] if gpus else None,
        "cuda": cuda,
        "memory_mib": [int(g["memory_mib"]) for g in gpus if g.get("memory_mib", "").isdigit()],
    }


def git_info(project: Path) -> dict[str, Any]:
    """Commit, branch, ``git describe`` and dirtiness of the project under test (the rootdir)."""
    if shutil.which("git") is None:
        return {"error": "git is not installed"}
    try:
        commit = _run(["git", "rev-parse", "HEAD"], cwd=project)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        return {"error": f"not a git checkout: {detail.strip()[:200]}"}
    info: dict[str, Any] = {"commit": commit}
    for key, argv in {
        "branch": ["git", "rev-parse", "--abbrev-ref", "HEAD"],
        "describe": ["git", "describe", "--always", "--dirty", "--tags"],
        "status": ["git", "status", "--porcelain", "--untracked-files=no"],
    }.items():
        try:
            info[key] = _run(argv, cwd=project)
        except (OSError, subprocess.SubprocessError):
            info[key] = None
    info["dirty"] = bool(info.pop("status"))
    return info


def capture_environment(project: Path, plugin_version: str) -> dict[str, Any]:
    return {
        "plugin_version": plugin_version,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "os": {"system": platform.system(), "release": platform.release()},
        "host": platform.node(),
        "cpu": cpu_info(),
        "gpu": gpu_info(),
        "git": git_info(project),
        "ci": {
            k: os.environ[k]
            for k in ("GITHUB_RUN_ID", "GITHUB_SHA", "GITHUB_JOB", "RUNNER_NAME")
            if k in os.environ
        },
    }

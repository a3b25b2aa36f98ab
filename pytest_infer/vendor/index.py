"""The releases a package index offers, as pip sees them (``pip index versions``): the same index,
mirrors and configuration the installs then use, so a release listed here is one the installer can
fetch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence

from packaging.version import InvalidVersion, Version

from .engines import VendorError

_AVAILABLE = re.compile(r"^Available versions:\s*(?P<list>.*)$", re.MULTILINE)


def parse_versions(text: str) -> list[str]:
    """``pip index versions``'s answer as versions, oldest first; pre-releases and unparsable names
    left out (a history follows releases)."""
    found = _AVAILABLE.search(text)
    if not found:
        raise VendorError(
            f"pip index versions gave no 'Available versions:' line: {text.strip()[-500:]!r}"
        )
    versions = []
    for item in found["list"].split(","):
        try:
            v = Version(item.strip())
        except InvalidVersion:
            continue
        if not (v.is_prerelease or v.is_devrelease):
            versions.append(v)
    return [str(v) for v in sorted(set(versions))]


def releases(
    package: str,
    pip_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> list[str]:
    """Every release of ``package`` on the index, oldest first. ``pip_args`` (``--index-url``,
    ``--find-links``) and ``env`` (``PIP_CONFIG_FILE``) choose the index, as for any pip command."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        "--disable-pip-version-check",
        *pip_args,
        package,
    ]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if proc.returncode != 0:
        raise VendorError(
            f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-500:]}"
        )
    return parse_versions(proc.stdout)


def newer_or_equal(versions: Sequence[str], oldest: str) -> list[str]:
    """Releases from ``oldest`` on, oldest first: a history follows releases, not pre-releases."""
    parsed = sorted(Version(v) for v in versions)
    return [
        str(v) for v in parsed if v >= Version(oldest) and not (v.is_prerelease or v.is_devrelease)
    ]

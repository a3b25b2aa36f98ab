"""SLO profiles: named YAML files in the top-level ``slo/`` folder."""
from __future__ import annotations

from pathlib import Path

from ..paths import bundled


def profiles_dir() -> Path:
    return bundled("slo")


def available_profiles() -> dict[str, Path]:
    return {path.stem: path for path in sorted(profiles_dir().glob("*.yaml"))}

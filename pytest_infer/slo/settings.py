"""The SLO suite's settings: its session's options (``SloOptions``, read by its plugin when a
session uses them), and its settings for the gate: what its plugin (``--infer-fail-on``,
``--infer-calibration``) and its part of the ``pytest-infer`` command (``--fail-on``,
``--calibration``) hand the core under its name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .drift import DriftCalibration
    from .profiles import Profile
    from .rules import Rule

NAME = "slo"  # the suite's name: its marker, its results key, its key in the gate's settings


@dataclass(frozen=True, slots=True)
class SloSettings:
    """``rules``: the figures that gate and the change they tolerate; ``drift``: how far timing
    moves between sessions on this machine (``None``: unknown, so timing measured in separate
    sessions is listed, not gated)."""

    rules: tuple[Rule, ...] = ()
    drift: DriftCalibration | None = None


@dataclass(frozen=True, slots=True)
class SloOptions:
    """What the suite's options ask of a session: the profile, runs per load point, and how the load
    client runs.
    """

    profile: Profile | None
    repeat: int | None
    interleave: bool
    processes: int | None  # the load client as that many processes on this host
    ray_address: str | None  # the load client as Ray actors on this cluster
    slices: int  # parts of each run that take turns, when interleaving


def of(settings: Any) -> SloSettings:
    """This suite's entry of ``Pairing.settings`` (``None``: no rules, no calibration)."""
    if settings is None:
        return SloSettings()
    if not isinstance(settings, SloSettings):
        raise TypeError(
            f"the {NAME} suite's gate settings are a {type(settings).__name__}, not SloSettings"
        )
    return settings


def gate_settings(
    rules: Iterable[Rule] = (), drift: DriftCalibration | None = None
) -> dict[str, SloSettings]:
    """The gate's settings (``gating.compare.compare``) that hold only these: the SLO suite's
    entry.
    """
    return {NAME: SloSettings(tuple(rules), drift)}

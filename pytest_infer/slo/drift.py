"""How far a timing figure moves between sessions when nothing changed: the bound the gate allows
across sessions.

Runs of one session share the machine's state; a baseline stored by an earlier CI job and today's
candidate do not. On a shared machine the same server measured in two sessions minutes apart moves
by tens of percent, and a test over the runs of the two sessions (Mann-Whitney) takes that move for
an effect. Measuring in turns (``--slo-interleave``) cancels the drift; a stored baseline cannot. So
``pytest-infer calibrate`` measures the drift on the machine the gate runs on: several sessions of
one server version, each figure's median per session, and per (load point, figure) the largest
relative move between any two sessions, measured as the rules measure a worsening (a share of the
better of the two: the worst an A/A pair of those sessions would have shown), times a safety factor
(the largest of a few sessions underestimates the largest of many). The gate then tolerates that
much on top of each rule and tests only what lies beyond it. Sessions of different servers
(framework, version, model) or machines are refused: a slower version among them would widen the
drift that should catch it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..outcomes import InferError
from ..results.model import SessionResults, atomic_write_text
from ..table import Measured
from .metrics.catalogue import Figure, parse

KIND = "pytest-infer drift calibration"
VERSION = 1
SAFETY = 1.5
MIN_SESSIONS = 3  # two sessions give one move: no idea how typical it is
METHOD = (
    "largest relative move of the per-session median between any two sessions, in the rules' terms "
    "(a share of the "
    "better value: the worst an A/A pair showed), times the safety factor"
)


class CalibrationError(InferError, ValueError):
    """A calibration that cannot be built from the given results, or a file that is not one."""


@dataclass(frozen=True, slots=True)
class Drift:
    """One figure's drift between sessions: the gate tolerates ``bound_pct`` on top of its rule."""

    bound_pct: float
    largest_pct: float
    sessions: int


@dataclass(slots=True)
class DriftCalibration:
    figures: dict[str, dict[Figure, Drift]]  # load point key ("cpu/c1") -> figure -> its drift
    # "file#session id" of each session it was computed from
    sessions: list[str] = field(default_factory=list)
    safety: float = SAFETY
    source: str = ""  # the file it was read from, for the report

    def drift(self, key: str, figure: Figure) -> Drift | None:
        return self.figures.get(key, {}).get(figure)

    def describe(self) -> str:
        where = f"{self.source}, " if self.source else ""
        return f"calibration ({where}{len(self.sessions)} sessions, largest move x{self.safety:g})"

    def to_dict(self) -> dict[str, Any]:
        figures = {
            k: {str(m): asdict(d) for m, d in sorted(ms.items(), key=lambda item: str(item[0]))}
            for k, ms in sorted(self.figures.items())
        }
        return {
            "kind": KIND,
            "version": VERSION,
            "method": METHOD,
            "safety": self.safety,
            "sessions": self.sessions,
            "figures": figures,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> DriftCalibration:
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise CalibrationError(
                f"{source or 'the file'} is not a drift calibration (make one with pytest-infer "
                "calibrate)"
            )
        try:
            figures = {
                k: {parse(m): Drift(**d) for m, d in ms.items()}
                for k, ms in data["figures"].items()
            }
            return cls(
                figures, list(data.get("sessions", [])), float(data.get("safety", SAFETY)), source
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise CalibrationError(
                f"{source or 'the calibration'}: malformed ({type(exc).__name__}: {exc})"
            ) from None

    @classmethod
    def read(cls, path: Path) -> DriftCalibration:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CalibrationError(f"{path}: cannot read a calibration ({exc})") from None
        return cls.from_dict(data, str(path))

    def write(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")


def largest_move_pct(values: list[float], *, higher_is_better: bool) -> float | None:
    """The largest worsening between any two values, in the rules' terms (a share of the value
    before): the most an A/A pair of these sessions would have shown a rule; None where no share is
    defined (a figure at 0)."""
    if min(values) <= 0:
        return 0.0 if max(values) == min(values) == 0 else None
    spread = max(values) - min(values)
    return spread / (max(values) if higher_is_better else min(values)) * 100.0


SAME = ("framework", "version", "model", "machine")  # what every calibrated session must share


def machine(environment: dict[str, Any]) -> str:
    """The hardware a session ran on, as its results recorded it (``results/environment.py``): CPU
    model and cores, GPUs. Not the host name: CI runners of one type are one machine to the gate."""
    cpu, gpu = environment.get("cpu"), environment.get("gpu")
    if not isinstance(cpu, dict) and not isinstance(gpu, dict):
        return "not recorded"
    cpu, gpu = cpu or {}, gpu or {}
    gpus = (
        f"{gpu.get('count')} x {'/'.join(gpu.get('names') or ['GPU'])}"
        if gpu.get("count")
        else "no GPU"
    )
    return f"{cpu.get('model') or 'unknown CPU'}, {cpu.get('count', '?')} cores, {gpus}"


def session_facts(results: SessionResults, target: str) -> dict[str, str]:
    """``SAME`` of one target of a results file; a merged file's machine is that of the part that
    held the target.
    """
    record = results.targets.get(target)
    parts = results.environment.get("parts") or []
    environment = next((p for p in parts if target in p.get("targets", [])), results.environment)
    version = (record.version or "unknown") if record else "unknown"
    if record is not None and record.commit:
        version += f" (commit {record.commit[:12]})"
    return {
        "framework": record.framework if record else "unknown",
        "version": version,
        "model": record.model if record else "unknown",
        "machine": machine(environment),
    }


def _one_server_on_one_machine(facts: dict[str, dict[str, str]]) -> None:
    """Refuse sessions that differ in what ``SAME`` names, saying which field differs and in which
    files.
    """
    for name in SAME:
        where: dict[str, list[str]] = {}
        for source, fact in facts.items():
            where.setdefault(fact[name], []).append(source)
        if len(where) > 1:
            listed = "; ".join(
                f"{value!r} in {', '.join(sources)}" for value, sources in where.items()
            )
            raise CalibrationError(
                f"the sessions differ in {name}: {listed}. A calibration measures how one server "
                "version moves between "
                "sessions on one machine; calibrate each apart (name the target with --target "
                "where a file holds "
                "several)"
            )


def calibrate(
    parts: list[tuple[str, SessionResults]], *, safety: float = SAFETY, target: str | None = None
) -> DriftCalibration:
    """Each (load point, figure)'s drift over the sessions in ``parts`` (result files of one server
    version, on one machine: others are refused)."""
    if safety < 1:
        raise CalibrationError(
            f"safety factor {safety:g} is below 1: it would tolerate less than the drift seen"
        )
    sessions: dict[str, dict[tuple[str, str, str], float]] = {}
    facts: dict[str, dict[str, str]] = {}
    for source, results in parts:
        for table in results.tables.values():
            for name, figures in (
                table.session_figures(source).items() if isinstance(table, Measured) else ()
            ):
                sessions.setdefault(name, {}).update(figures)
                measured = sorted({t for t, _, _ in figures if target in (None, t)})
                for tid in measured:
                    facts[source if len(results.targets) < 2 else f"{source} ({tid})"] = (
                        session_facts(results, tid)
                    )
    medians: dict[tuple[str, Figure], list[float]] = {}
    for name, figures in sessions.items():
        targets = sorted({t for t, _, _ in figures if target in (None, t)})
        if len(targets) > 1:
            raise CalibrationError(
                f"session {name} holds several targets ({', '.join(targets)}): "
                "calibrate one version; name it with --target"
            )
        for (tid, key, metric), value in figures.items():
            figure = parse(metric)
            if target in (None, tid) and figure.known and figure.better is not None:
                medians.setdefault((key, figure), []).append(value)
    _one_server_on_one_machine(facts)
    sessions = {
        name: figures
        for name, figures in sessions.items()
        if any(target in (None, t) for t, _, _ in figures)
    }
    if len(sessions) < MIN_SESSIONS:
        raise CalibrationError(
            f"{len(sessions)} session(s) with SLO figures; "
            f"calibrating needs at least {MIN_SESSIONS} of one server version"
        )
    drifts: dict[str, dict[Figure, Drift]] = {}
    for (key, figure), values in sorted(
        medians.items(), key=lambda item: (item[0][0], str(item[0][1]))
    ):
        largest = (
            largest_move_pct(values, higher_is_better=figure.higher_is_better)
            if len(values) >= MIN_SESSIONS
            else None
        )
        if largest is not None:
            drifts.setdefault(key, {})[figure] = Drift(
                round(largest * safety, 2), round(largest, 2), len(values)
            )
    if not drifts:
        raise CalibrationError(
            f"no load point was measured validly in {MIN_SESSIONS} or more of the sessions"
        )
    return DriftCalibration(drifts, sorted(sessions), safety)

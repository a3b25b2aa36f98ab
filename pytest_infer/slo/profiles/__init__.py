"""SLO profiles: named YAML files in the top-level ``slo/`` folder.

A profile names its hardware and, per model, the load points to run and the
thresholds each must meet, with per-framework overrides. It is validated
against ``SCHEMA`` when loaded; every error names the file and the key path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ...adapters import registry
from ...adapters.base import Adapter
from ...load import LoadSpec, Workload
from ...load.replay import MOONCAKE_BLOCK_TOKENS, TraceError, read_trace
from ...outcomes import InferError
from ...paths import bundled
from ..metrics.catalogue import check_threshold_key


def profiles_dir() -> Path:
    return bundled("slo")


def available_profiles() -> dict[str, Path]:
    return {path.stem: path for path in sorted(profiles_dir().glob("*.yaml"))}


# the threshold a capacity search is judged by, by what it searches over
CAPACITY_THRESHOLDS = {"rate": "min_capacity_rps", "concurrency": "min_capacity_concurrency"}


class ProfileError(InferError, ValueError):
    """A profile that cannot be used; the message names the file and the key."""


_POINT_FIELDS: dict[str, Any] = {
    "mode": {"enum": ["closed", "poisson"]},
    "concurrency": {"type": "integer", "minimum": 1},
    "rate": {"type": "number", "exclusiveMinimum": 0},
    "burstiness": {"type": "number", "exclusiveMinimum": 0},
    "requests": {"type": "integer", "minimum": 1},
    "duration_s": {"type": "number", "exclusiveMinimum": 0},
    "warmup_requests": {"type": "integer", "minimum": 0},
    "api": {"enum": ["chat", "completions"]},
    "input_tokens": {"type": "integer", "minimum": 1},
    "output_tokens": {"type": "integer", "minimum": 1},
    "shared_prefix_tokens": {"type": "integer", "minimum": 0},
    "ignore_eos": {"type": "boolean"},
    "repeat": {"type": "integer", "minimum": 1},
    "timeout_s": {"type": "number", "exclusiveMinimum": 0},
    "cooldown": {"enum": ["drain", "cancel"]},
    # what real traffic does (load/workloads.py): conversations, a prefix shared by a share of the
    # prompts, a recorded trace
    "turns": {"type": "integer", "minimum": 1},
    "shared_prefix_share": {"type": "number", "minimum": 0, "maximum": 1},
    "trace_file": {
        "type": "string",
        "minLength": 1,
        "description": "Mooncake-format JSONL, relative to the profile (load/replay.py)",
    },
    "trace_speedup": {"type": "number", "exclusiveMinimum": 0},
    "trace_block_tokens": {"type": "integer", "minimum": 1},
}
# a replayed trace brings its own arrivals and lengths: a point that names one may not set these
_TRACE_SETS = (
    "mode",
    "rate",
    "burstiness",
    "concurrency",
    "input_tokens",
    "output_tokens",
    "shared_prefix_tokens",
    "shared_prefix_share",
    "turns",
)
# null: a limit each framework sets for itself; a framework without its own is not judged on it, and
# says so (LoadPoint.not_set): never another framework's limit in its place
_THRESHOLDS = {"type": "object", "additionalProperties": {"type": ["number", "null"], "minimum": 0}}
# a capacity load point: probes at rising rates (or concurrencies), each judged on the point's
# thresholds (profiles/capacity.py)
_SEARCH = {
    "type": "object",
    "required": ["start", "max"],
    "additionalProperties": False,
    "properties": {
        "over": {"enum": ["rate", "concurrency"]},
        "start": {"type": "number", "exclusiveMinimum": 0},
        "max": {"type": "number", "exclusiveMinimum": 0},
        "resolution": {"type": "number", "exclusiveMinimum": 0},
        "max_probes": {"type": "integer", "minimum": 2},
        "stop_error_share": {"type": "number", "minimum": 0, "maximum": 1},
        "saturation_ratio": {"type": "number", "exclusiveMinimum": 1},
    },
}
_OVERRIDE_THRESHOLDS = {
    "type": "object",
    "additionalProperties": {"type": ["number", "null"], "minimum": 0},
}  # null: drop it
_ID = {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"}
THRESHOLDS_SOURCES = ("measured", "estimated")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "hardware", "models"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        # where the thresholds come from: "estimated" (scaled from other hardware or published
        # figures, not measured on this hardware) is carried into the results and shown next to
        # every limit
        "thresholds_source": {"enum": list(THRESHOLDS_SOURCES)},
        "hardware": {
            "type": "object",
            "required": ["accelerator"],
            "additionalProperties": False,
            "properties": {
                "accelerator": {"enum": ["gpu", "cpu"]},
                "gpu": {
                    "type": "string",
                    "description": "substring of the NVML device name, e.g. A100",
                },
                "count": {"type": "integer", "minimum": 1},
                "memory_gb": {"type": "number", "exclusiveMinimum": 0},
                "notes": {"type": "string"},
            },
            "if": {"properties": {"accelerator": {"const": "gpu"}}},
            "then": {"required": ["gpu", "count", "memory_gb"]},
        },
        "validity": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_client_busy": {"type": "number", "exclusiveMinimum": 0, "maximum": 2},
                "max_loop_lag_p99_ms": {"type": "number", "exclusiveMinimum": 0},
                "max_schedule_lag_p99_ms": {"type": "number", "exclusiveMinimum": 0},
            },
        },
        "defaults": {"type": "object", "additionalProperties": False, "properties": _POINT_FIELDS},
        "models": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "required": ["load_points"],
                "additionalProperties": False,
                "properties": {
                    "description": {"type": "string"},
                    "load_points": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["id", "thresholds"],
                            "additionalProperties": False,
                            "properties": {
                                "id": _ID,
                                "thresholds": _THRESHOLDS,
                                "search": _SEARCH,
                                **_POINT_FIELDS,
                            },
                        },
                    },
                    "frameworks": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "additionalProperties": {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    "thresholds": _OVERRIDE_THRESHOLDS,
                                    "search": _SEARCH,
                                    **_POINT_FIELDS,
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def _key_path(parts) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One load point of one model, with this framework's overrides applied."""

    id: str
    settings: dict[str, Any]  # the _POINT_FIELDS that apply (defaults, point, override)
    thresholds: dict[str, float]
    # limits the profile leaves to each framework (null on the point) that this one has none of: not
    # judged, and the test says so (not exercised), so that an engine nobody measured never passes
    # on another engine's limits
    not_set: tuple[str, ...] = ()

    def load_spec(self) -> LoadSpec:
        s = self.settings
        replay = bool(s.get("trace_file"))
        warmup = s.get("warmup_requests", 8)
        requests = (
            None if s.get("duration_s") else self.trace_length - warmup if replay else 100
        )  # a trace: every line after the warm-up
        return LoadSpec(
            mode="replay" if replay else s.get("mode", "closed"),
            concurrency=s.get("concurrency", 1),
            rate=None if replay else s.get("rate"),
            burstiness=s.get("burstiness", 1.0),
            requests=s.get("requests", requests),
            duration_s=s.get("duration_s"),
            warmup_requests=warmup,
            cooldown=s.get("cooldown", "drain"),
            speedup=s.get("trace_speedup", 1.0),
        )

    @property
    def trace_length(self) -> int:
        return len(read_trace(self.settings["trace_file"]))

    def workload(self, adapter: Adapter | None = None) -> Workload:
        """What each request asks for; the server's ``adapter`` decides ignore_eos and exact
        token-count fields.
        """

        s = self.settings
        trace = s.get("trace_file")
        return Workload(
            api=s.get("api", "chat"),
            input_tokens=s.get("input_tokens", 64),
            output_tokens=s.get("output_tokens", 32),
            shared_prefix_tokens=(
                0 if trace else s.get("shared_prefix_tokens", 0)
            ),  # a trace's own sharing wins over the defaults'
            ignore_eos=s.get("ignore_eos", True)
            and (adapter is None or adapter.accepts_ignore_eos),
            extra_body=dict(adapter.load_extra_body) if adapter is not None else {},
            shared_prefix_share=s.get("shared_prefix_share", 1.0),
            turns=1 if trace else s.get("turns", 1),
            trace_file=trace,
            trace_block_tokens=s.get("trace_block_tokens", MOONCAKE_BLOCK_TOKENS),
        )

    @property
    def search(self) -> dict[str, Any] | None:
        """The capacity search's settings, when this point is one (``profiles/capacity.py``)."""
        return self.settings.get("search")

    @property
    def repeat(self) -> int:
        return self.settings.get("repeat", 1)

    def repeated(self, times: int) -> LoadPoint:
        return LoadPoint(self.id, {**self.settings, "repeat": times}, self.thresholds, self.not_set)

    @property
    def timeout_s(self) -> float | None:
        return self.settings.get("timeout_s")


@dataclass(slots=True)
class Profile:
    name: str
    path: Path
    hardware: dict[str, Any]
    description: str = ""
    thresholds_source: str | None = None  # THRESHOLDS_SOURCES; None where the profile does not say
    validity: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)

    def load_points(self, model: str, framework: str) -> list[LoadPoint]:
        entry = self.models.get(model)
        if entry is None:
            raise ProfileError(
                f"{self.path}: profile {self.name!r} has no load points for model {model!r}; it "
                "has:"
                f" {', '.join(self.models)}"
            )
        overrides = (entry.get("frameworks") or {}).get(framework, {})
        points = []
        for point in entry["load_points"]:
            override = overrides.get(point["id"], {})
            settings = {
                **self.defaults,
                **{k: v for k, v in point.items() if k not in ("id", "thresholds")},
            }
            settings.update({k: v for k, v in override.items() if k != "thresholds"})
            if "trace_file" in settings:
                settings["trace_file"] = str(self.path.parent / settings["trace_file"])
            own = override.get("thresholds", {})
            thresholds = {**point["thresholds"], **own}
            not_set = tuple(k for k, v in point["thresholds"].items() if v is None and k not in own)
            points.append(
                LoadPoint(
                    point["id"],
                    settings,
                    {k: float(v) for k, v in thresholds.items() if v is not None},
                    not_set,
                )
            )
        return points

    def hardware_mismatch(self, hardware) -> str | None:
        """Why this host is not the profile's hardware, or None when it is."""
        want = self.hardware
        if want["accelerator"] == "cpu":
            return (
                None
                if hardware.accelerator == "cpu"
                else f"profile {self.name!r} is for CPU-only hosts; this host has "
                f"{hardware.gpu_name} GPUs"
            )
        if hardware.accelerator != "gpu":
            return (
                f"profile {self.name!r} is for {want['count']}x {want['gpu']} {want['memory_gb']} "
                "GB; this host has no"
                f" GPU visible to NVML ({hardware.nvml})"
            )
        names = [g["name"] for g in hardware.gpus]
        problems = []
        if not all(want["gpu"].lower() in n.lower() for n in names):
            problems.append(f"GPU {', '.join(sorted(set(names)))} is not {want['gpu']}")
        if len(names) != want["count"]:
            problems.append(f"{len(names)} GPUs, not {want['count']}")
        memory = [g["memory_gb"] for g in hardware.gpus]
        if memory and abs(min(memory) - want["memory_gb"]) > 0.1 * want["memory_gb"]:
            problems.append(f"{min(memory):g} GB per GPU, not {want['memory_gb']:g}")
        return (
            f"profile {self.name!r} does not match this host: {'; '.join(problems)}"
            if problems
            else None
        )


def _semantic_errors(data: dict[str, Any]) -> list[str]:
    """Checks the schema cannot express: threshold names, unique ids, overrides that name real
    points.
    """

    errors = []
    for model, entry in data["models"].items():
        ids = [p["id"] for p in entry["load_points"]]
        for i, point in enumerate(entry["load_points"]):
            where = f"models.{model}.load_points[{i}]"
            if ids.count(point["id"]) > 1:
                errors.append(f"{where}.id: duplicate load point id {point['id']!r}")
            errors += _unjudged(
                f"{where}.thresholds",
                point,
                {k: v for k, v in point["thresholds"].items() if v is not None},
            )
            for key in point["thresholds"]:
                if (problem := check_threshold_key(key)) is not None:
                    errors.append(f"{where}.thresholds.{key}: {problem}")
            merged = {**data.get("defaults", {}), **point}
            if merged.get("mode") == "poisson" and "rate" not in merged and "search" not in merged:
                errors.append(f"{where}: an open-loop (poisson) load point needs a rate")
            if "search" in point:
                errors += _search_errors(where, merged)
            else:
                errors += [
                    f"{where}.thresholds.{k}: a capacity threshold needs a search"
                    for k in point["thresholds"]
                    if k.startswith("min_capacity_")
                ]
        for framework, points in (entry.get("frameworks") or {}).items():
            if framework not in registry.ADAPTERS:
                errors.append(
                    f"models.{model}.frameworks.{framework}: unknown framework; valid: "
                    f"{', '.join(registry.names())}"
                )
            for point_id, override in points.items():
                where = f"models.{model}.frameworks.{framework}.{point_id}"
                if point_id not in ids:
                    errors.append(
                        f"{where}: no load point {point_id!r} to override; ids: {', '.join(ids)}"
                    )
                for key in override.get("thresholds", {}):
                    if (problem := check_threshold_key(key)) is not None:
                        errors.append(f"{where}.thresholds.{key}: {problem}")
                point = next((p for p in entry["load_points"] if p["id"] == point_id), None)
                if point is not None and "thresholds" in override:
                    kept = {
                        k: v
                        for k, v in {**point["thresholds"], **override["thresholds"]}.items()
                        if v is not None
                    }
                    errors += _unjudged(
                        f"{where}.thresholds", {**point, **override}, kept, f" for {framework}"
                    )
    return errors


def _unjudged(
    where: str, point: dict[str, Any], thresholds: dict[str, Any], after: str = ""
) -> list[str]:
    """A load point with no threshold would pass whatever it measured: refuse it before anything
    starts.
    """
    if not thresholds:
        return [
            f"{where}: load point {point['id']!r} has no thresholds{after}, so nothing would judge "
            "its figures; "
            "give it at least one (e.g. ttft_p99_ms, max_error_share)"
        ]
    if "search" in point and set(thresholds) <= set(CAPACITY_THRESHOLDS.values()):
        return [
            f"{where}: the capacity search of load point {point['id']!r} has no threshold to judge "
            f"its probes by{after}"
            f" (only {', '.join(sorted(thresholds))}); give it one (e.g. ttft_p99_ms, "
            "max_error_share)"
        ]
    return []


def _search_errors(where: str, point: dict[str, Any]) -> list[str]:
    search = point["search"]
    over = search.get("over", "rate" if point.get("mode") == "poisson" else "concurrency")
    errors = []
    if (over == "rate") != (point.get("mode") == "poisson"):
        errors.append(
            f"{where}.search.over: a search over {over} needs mode "
            f"{'poisson' if over == 'rate' else 'closed'}"
        )
    if search["max"] < search["start"]:
        errors.append(
            f"{where}.search: max ({search['max']:g}) is below start ({search['start']:g})"
        )
    wrong = {"rate": "min_capacity_concurrency", "concurrency": "min_capacity_rps"}[over]
    if wrong in point["thresholds"]:
        errors.append(f"{where}.thresholds.{wrong}: this search is over {over}")
    return errors


def _workload_errors(data: dict[str, Any], base: Path) -> list[str]:
    """Workload settings that do not go together, and trace files that cannot be replayed (relative
    to ``base``).
    """
    errors = []
    for model, entry in data["models"].items():
        overrides = entry.get("frameworks") or {}
        for i, point in enumerate(entry["load_points"]):
            own = {k: v for k, v in point.items() if k != "thresholds"}
            cases = [(f"models.{model}.load_points[{i}]", own)]
            cases += [
                (f"models.{model}.frameworks.{fw}.{point['id']}", {**own, **points[point["id"]]})
                for fw, points in overrides.items()
                if set(points.get(point["id"], {})) - {"thresholds"}
            ]
            for where, setting in cases:
                s = {**data.get("defaults", {}), **setting}
                if s.get("turns", 1) > 1 and s.get("api") == "completions":
                    errors.append(
                        f"{where}.turns: multi-turn conversations are chat messages; this point's "
                        "api is completions"
                    )
                if (
                    "shared_prefix_share" in s
                    and not s.get("shared_prefix_tokens")
                    and "trace_file" not in s
                ):
                    errors.append(
                        f"{where}.shared_prefix_share: the share of prompts that carry a prefix "
                        "needs"
                        " shared_prefix_tokens (the prefix)"
                    )
                if "trace_file" not in s:
                    errors += [
                        f"{where}.{key}: only a replayed trace (trace_file) uses it"
                        for key in ("trace_speedup", "trace_block_tokens")
                        if key in s
                    ]
                    continue
                if clash := [k for k in _TRACE_SETS if k in setting]:
                    errors.append(
                        f"{where}: a replayed trace (trace_file) brings its own arrivals, lengths "
                        "and sharing; drop"
                        f" {', '.join(clash)}"
                    )
                try:
                    length = len(read_trace(base / s["trace_file"]))
                except TraceError as exc:
                    errors.append(f"{where}.trace_file: {exc}")
                    continue
                warmup, asked = s.get("warmup_requests", 8), s.get("requests", 1)
                if length - warmup < asked:
                    wanted = f", not the {asked} requests asked for" if "requests" in s else ""
                    errors.append(
                        f"{where}.trace_file: the trace's {length} requests leave "
                        f"{max(0, length - warmup)} to measure"
                        f" after warmup_requests {warmup}{wanted}"
                    )
    return list(dict.fromkeys(errors))


def load_profile(name_or_path: str | Path) -> Profile:
    """A profile by name (``slo/NAME.yaml``) or path, validated; raises ProfileError."""
    text = str(name_or_path)
    path = (
        Path(text)
        if text.endswith((".yaml", ".yml")) or "/" in text
        else available_profiles().get(text)
    )
    if path is None:
        raise ProfileError(
            f"unknown SLO profile {text!r}; available: {', '.join(available_profiles())}"
        )
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ProfileError(f"{path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {exc}") from exc
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"{_key_path(e.absolute_path)}: {e.message}" for e in errors[:10]]
        raise ProfileError(f"{path}: invalid SLO profile:\n  " + "\n  ".join(lines))
    if problems := _semantic_errors(data) + _workload_errors(data, path.parent):
        raise ProfileError(f"{path}: invalid SLO profile:\n  " + "\n  ".join(problems))
    return Profile(
        name=data["name"],
        path=path,
        hardware=data["hardware"],
        description=data.get("description", ""),
        thresholds_source=data.get("thresholds_source"),
        validity=data.get("validity", {}),
        defaults=data.get("defaults", {}),
        models=data["models"],
    )

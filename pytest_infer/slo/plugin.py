"""pytest glue of the SLO suite: its options (the gate's rules and drift calibration among them),
the chosen profile, this host's hardware, and one measured load point per test.

The measurement runs in a fixture, so a measurement that cannot be trusted (the
client was the bottleneck, too few samples) ends the test in an ERROR at setup,
never in a pass or a fail.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..options import BASELINE, add_option, option_value, parse_count
from ..session import session_key, tests_a_server

if TYPE_CHECKING:
    from ..load import LoadRun
    from ..load.hardware import Hardware
    from .metrics import ValidityRules
    from .profiles import LoadPoint, Profile
    from .profiles.capacity import CapacityResult, Interleaved
    from .profiles.evaluate import PointResult, Subject
    from .settings import SloOptions, SloSettings

SLO = "--slo"
SLO_REPEAT = "--slo-repeat"
SLO_INTERLEAVE = "--slo-interleave"
SLO_SLICES = "--slo-interleave-slices"
# benchmarks/README.md: what slicing did to the gate's pair noise and its smallest detected change
DEFAULT_SLICES = 5
SLO_PROCESSES = "--slo-processes"
SLO_RAY_ADDRESS = "--slo-ray-address"
FAIL_ON = "--infer-fail-on"
CALIBRATION = "--infer-calibration"
NO_PROFILE = "no SLO profile: pass --slo=NAME (see slo/) or --slo=path/to/profile.yaml"


slo_key = pytest.StashKey["SloOptions"]()


interleaved_key = pytest.StashKey[dict[str, "Interleaved"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_option(
        parser, SLO, "SLO profile from slo/ (or a path to a profile YAML file).", metavar="PROFILE"
    )
    add_option(
        parser,
        SLO_REPEAT,
        "run every SLO load point N times (overrides the profile's repeat): per-run figures, "
        "confidence intervals, and a gate that tests timing changes for significance.",
        metavar="N",
    )
    add_option(
        parser,
        SLO_INTERLEAVE,
        "measure each load point on all of the session's targets in turns (A B B A ..., by slices "
        "of each run: "
        f"{SLO_SLICES}), "
        "so drift of a shared machine falls on baseline and candidate alike; compare them with "
        "pytest-infer compare results.json results.json --pair BASELINE=CANDIDATE.",
        ini_type="bool",
        action="store_true",
        default=None,
    )
    add_option(
        parser,
        SLO_SLICES,
        f"with {SLO_INTERLEAVE}: cut each run into N consecutive parts of its requests and take "
        "turns part by part "
        f"(default {DEFAULT_SLICES}; 1 takes turns by whole runs).",
        metavar="N",
    )
    add_option(
        parser,
        SLO_PROCESSES,
        "run each load point from N client processes on this host (one per core), their raw "
        "traces merged.",
        metavar="N",
    )
    add_option(
        parser,
        SLO_RAY_ADDRESS,
        "run the load client as Ray actors on this cluster (auto, ray://HOST:10001; pip install "
        "'pytest-infer[ray]'); the endpoint must be reachable from its nodes.",
        metavar="ADDR",
    )
    add_option(
        parser,
        FAIL_ON,
        "SLO figures that gate, with the change they tolerate: METRIC:N% or METRIC:N (e.g."
        " ttft_p99:10%,output_tps:5%).",
        metavar="RULES",
    )
    add_option(
        parser,
        CALIBRATION,
        f"drift between sessions on this machine (pytest-infer calibrate), for {BASELINE}: timing "
        "measured "
        "in another session gates only beyond it; without it such timing is listed, not gated.",
        metavar="FILE",
    )


def parse_profile(text: str) -> Profile:
    """The profile, loaded and validated once, so a bad one stops the run before any server
    starts.
    """
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from .profiles import ProfileError, available_profiles, load_profile

    if text.endswith((".yaml", ".yml")) or os.sep in text:
        if not Path(text).is_file():
            raise pytest.UsageError(f"{SLO}: profile file {text} does not exist")
    else:
        valid = available_profiles()
        if text not in valid:
            raise pytest.UsageError(
                f"{SLO}: unknown profile {text!r}; valid: {', '.join(sorted(valid))}"
            )
    try:
        return load_profile(text)
    except ProfileError as exc:
        raise pytest.UsageError(f"{SLO}: {exc}") from None


def _gate_settings(config: pytest.Config, baseline: Path | None) -> SloSettings:
    """The gate's rules and drift calibration, read now, so a bad rule or file stops the run before
    any server starts; both compare with a baseline run."""
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from .settings import SloSettings

    rules_text, calibration = option_value(config, FAIL_ON), option_value(config, CALIBRATION)
    if rules_text:
        # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
        from .rules import RuleError, parse_rules

        try:
            rules = parse_rules(rules_text)
        except RuleError as exc:
            raise pytest.UsageError(f"{FAIL_ON}: {exc}") from None
    else:
        rules = ()
    if rules and baseline is None:
        raise pytest.UsageError(
            f"{FAIL_ON} needs {BASELINE}=FILE: the figures are compared with a baseline run"
        )
    if calibration is None:
        return SloSettings(rules)
    if baseline is None:
        raise pytest.UsageError(
            f"{CALIBRATION} needs {BASELINE}=FILE: it bounds the drift between its session and "
            "this one"
        )
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from .drift import CalibrationError, DriftCalibration

    try:
        return SloSettings(rules, DriftCalibration.read(Path(calibration)))
    except CalibrationError as exc:
        raise pytest.UsageError(f"{CALIBRATION}: {exc}") from None


OPTIONS = (
    SLO,
    SLO_REPEAT,
    SLO_INTERLEAVE,
    SLO_SLICES,
    SLO_PROCESSES,
    SLO_RAY_ADDRESS,
    FAIL_ON,
    CALIBRATION,
)


def pytest_configure(config: pytest.Config) -> None:
    """Reads and checks the suite's options; a run that tests no server and names none of them reads
    nothing.
    """
    if not tests_a_server(config) and not any(option_value(config, o) for o in OPTIONS):
        return
    session = config.stash.get(session_key, None)
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from .settings import NAME, SloOptions

    settings = _gate_settings(config, session.options.baseline if session is not None else None)
    text, repeat = option_value(config, SLO), option_value(config, SLO_REPEAT)
    interleave = bool(option_value(config, SLO_INTERLEAVE))
    if interleave and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(
            f"{SLO_INTERLEAVE} measures the targets in turns from one process; run it without -n"
        )
    processes, ray_address = (
        option_value(config, SLO_PROCESSES),
        option_value(config, SLO_RAY_ADDRESS) or None,
    )
    slices = option_value(config, SLO_SLICES)
    if slices is not None and not interleave:
        raise pytest.UsageError(
            f"{SLO_SLICES} slices the runs that {SLO_INTERLEAVE} takes in turns; add "
            f"{SLO_INTERLEAVE}"
        )
    if ray_address is not None and importlib.util.find_spec("ray") is None:
        raise pytest.UsageError(
            f"{SLO_RAY_ADDRESS} needs Ray on this machine: pip install 'pytest-infer[ray]'"
        )
    options = SloOptions(
        parse_profile(text) if text else None,
        parse_count(SLO_REPEAT, repeat) if repeat else None,
        interleave,
        parse_count(SLO_PROCESSES, processes) if processes else None,
        ray_address,
        parse_count(SLO_SLICES, slices) if slices is not None else DEFAULT_SLICES,
    )
    if options.profile is not None and session is not None and session.targets:
        _check_model(options.profile, session.options.model)
    config.stash[slo_key] = options
    if session is not None:
        session.settings[NAME] = settings
        if options.profile is not None:
            session.variant["profile"] = options.profile.name


def _check_model(profile: Profile, model: str) -> None:
    """A profile's thresholds are set per model: one without an entry for the session's model has
    none to judge it by, so the run stops before any server starts rather than borrow another
    model's."""
    if model not in profile.models:
        raise pytest.UsageError(
            f"{SLO}: {profile.path}: profile {profile.name!r} has no load points for model "
            f"{model!r} (its thresholds"
            f" were set for: {', '.join(profile.models)}); add an entry for it under models: "
            "(thresholds from runs"
            f" measured on this hardware), or run without {SLO}"
        )


class SLOHardwareMismatch(pytest.PytestWarning):
    """The SLO profile describes other hardware than this host: its thresholds do not apply
    as-is.
    """


def _profile(config: pytest.Config) -> Profile | None:
    options = config.stash.get(slo_key, None)
    return options.profile if options is not None else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "slo_point_id" not in metafunc.fixturenames:
        return
    profile = _profile(metafunc.config)
    session = metafunc.config.stash[session_key]
    if profile is None or not session.targets:
        metafunc.parametrize(
            "slo_point_id",
            [pytest.param(None, id="no-profile", marks=pytest.mark.skip(reason=NO_PROFILE))],
        )
        return
    # the model checked at configure
    ids = [p["id"] for p in profile.models[session.options.model]["load_points"]]
    metafunc.parametrize("slo_point_id", ids)


def pytest_report_header(config: pytest.Config) -> list[str]:
    profile = _profile(config)
    if profile is None:
        return []
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from ..load.hardware import detect_hardware

    problem = profile.hardware_mismatch(detect_hardware())
    lines = [f"pytest-infer SLO profile: {profile.name} ({profile.path})"]
    session = config.stash.get(session_key, None)
    if session is not None and session.targets:
        lines[0] += f", thresholds set for {session.options.model}"
    if profile.thresholds_source == "estimated":
        lines.append(
            f"SLO thresholds of {profile.name!r} are ESTIMATES, not measured on this hardware: "
            "recalibrate before"
            " gating on them"
        )
    if problem:
        lines.append(f"!!! SLO PROFILE MISMATCH: {problem}; thresholds are judged anyway !!!")
    return lines


@pytest.fixture(scope="session")
def slo_hardware() -> Hardware:
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from ..load.hardware import detect_hardware

    return detect_hardware()


@pytest.fixture(scope="session")
def slo_profile(pytestconfig: pytest.Config, slo_hardware: Hardware) -> Profile:
    profile = _profile(pytestconfig)
    assert profile is not None  # the tests are skipped without one
    problem = profile.hardware_mismatch(slo_hardware)
    if problem:
        warnings.warn(
            SLOHardwareMismatch(f"{problem}; the figures are judged against its thresholds anyway"),
            stacklevel=1,
        )
    return profile


@pytest.fixture
def slo_result(
    request: pytest.FixtureRequest,
    slo_point_id: str,
    slo_profile: Profile,
    slo_hardware: Hardware,
    infer_live_server,
    infer_endpoint,
    infer_session,
    infer_target,
    infer_record,
) -> PointResult | CapacityResult:
    """Measure this load point on this target; record it; ERROR when the measurement is invalid."""
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from .metrics import headline, stored

    options = request.config.stash[slo_key]
    context = {}
    if options.interleave:
        measured = _interleaved(request.config, slo_point_id, slo_profile, infer_session)
        result = measured[infer_target.id]
        slices = (
            options.slices if result.point.search is None else 1
        )  # a capacity search probes each target in turn, unsliced
        context = {
            "interleaved": {
                "id": measured.id,
                "targets": sorted(measured.results),
                "slices": slices,
            }
        }
    else:
        result = _measure(
            slo_point_id,
            slo_profile,
            options,
            [(infer_target.model, infer_live_server, infer_endpoint)],
        )[0]
    mismatch = slo_profile.hardware_mismatch(slo_hardware)
    infer_session.results.table("slo").add(
        result.record(
            nodeid=request.node.nodeid,
            target=infer_target.id,
            framework=infer_live_server.framework,
            version=infer_live_server.version,
            model=infer_live_server.model,
            profile=slo_profile.name,
            **(
                {"thresholds_source": slo_profile.thresholds_source}
                if slo_profile.thresholds_source
                else {}
            ),
            hardware=slo_hardware.to_dict(),
            hardware_mismatch=mismatch,
            session=infer_session.id,
            **({"not_set": list(result.point.not_set)} if result.point.not_set else {}),
            **context,
        )
    )
    figures = result.figures()
    infer_record("slo_verdict", result.verdict.status)
    for figure, value in headline(stored(figures)).items():
        infer_record(f"slo_{figure}", value)
    request.node.add_report_section("setup", "slo figures", result.table())
    if result.verdict.status == "invalid":
        pytest.fail(
            f"measurement invalid: {'; '.join(result.verdict.invalid)}\n{result.table()}",
            pytrace=False,
        )
    infer_record("infer_evidence", evidence(result))
    return result


def evidence(result: PointResult | CapacityResult) -> str:
    """What a load point's verdict judged: its load, the measured requests answered, each threshold
    against its figure (a capacity search: the capacity found and its probes)."""
    checks = "; ".join(" ".join(str(check).split()) for check in result.verdict.checks)
    summary = getattr(result, "summary", None)
    if summary is None:
        return f"{result.table().splitlines()[0]}; {checks}"
    spec = result.point.load_spec()
    load = (
        f"concurrency {spec.concurrency}"
        if spec.mode == "closed"
        else f"{spec.mode} arrivals at {spec.rate:g}/s"
    )
    answered = f"{summary.ok} of {summary.requests} measured requests answered"
    return f"load point {result.point.id} ({load}): {answered}; {checks}"


def _measure(
    point_id: str, profile: Profile, options: SloOptions, servers: list
) -> Sequence[PointResult | CapacityResult]:
    """``servers``: ``(model, ServerInfo, Endpoint)`` per target, measured in turns."""
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from .metrics import ValidityRules
    from .profiles.evaluate import Subject, evaluate_interleaved

    subjects = []
    rules = ValidityRules.from_dict(profile.validity)
    for model, info, endpoint in servers:
        point = next(p for p in profile.load_points(model, info.framework) if p.id == point_id)
        subjects.append(
            Subject(
                point.repeated(options.repeat) if options.repeat else point,
                endpoint,
                info.adapter,
                info.pid,
            )
        )
    runner = _runner(options)
    # probes adapt to what each server does: one search per target, in turn
    if subjects[0].point.search is not None:
        # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
        from .profiles.capacity import evaluate_capacity

        return [evaluate_capacity(s.point, _probes_on(s, rules, runner)) for s in subjects]
    return evaluate_interleaved(
        subjects, rules=rules, runner=runner, slices=options.slices if options.interleave else 1
    )


def _runner(options: SloOptions) -> Callable[..., LoadRun]:
    """One client process, or one load from several (``--slo-processes``, ``--slo-ray-address``)."""
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from ..load import run_load, run_load_distributed

    if options.processes or options.ray_address:
        return functools.partial(
            run_load_distributed, processes=options.processes, ray_address=options.ray_address
        )
    return run_load


def _probes_on(
    subject: Subject, rules: ValidityRules, runner: Callable[..., LoadRun]
) -> Callable[[LoadPoint], PointResult]:
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from .profiles.evaluate import evaluate_interleaved

    return lambda probe: evaluate_interleaved(
        [replace(subject, point=probe)], rules=rules, runner=runner
    )[0]


def _interleaved(config: pytest.Config, point_id: str, profile: Profile, session) -> Interleaved:
    """This load point on every target that is up, measured once for all of them (at the first
    target's test).
    """
    # lazy: this plugin loads in every pytest run; its machinery only in an SLO session
    from .profiles.capacity import Interleaved

    done = config.stash.setdefault(interleaved_key, {})
    if point_id not in done:
        up = [(t, session.server(t.id)) for t in session.targets]
        up = [(t, info) for t, info in up if not info.error and info.alive()]
        results = _measure(
            point_id,
            profile,
            config.stash[slo_key],
            [(t.model, info, session.endpoint(info)) for t, info in up],
        )
        done[point_id] = Interleaved(uuid.uuid4().hex, {t.id: r for (t, _), r in zip(up, results)})
    return done[point_id]

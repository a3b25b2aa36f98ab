"""Fixtures of the SLO suite: the chosen profile, this host's hardware, and one measured load point per test.

The measurement runs in a fixture, so a measurement that cannot be trusted (the
client was the bottleneck, too few samples) ends the test in an ERROR at setup,
never in a pass or a fail.
"""
from __future__ import annotations

import warnings

import pytest

from pytest_infer.load.hardware import Hardware, detect_hardware
from pytest_infer.metrics import ValidityRules
from pytest_infer.profiles import Profile, ProfileError, load_profile
from pytest_infer.profiles.evaluate import PointResult, evaluate_point
from pytest_infer.session import session_key

NO_PROFILE = "no SLO profile: pass --slo=NAME (see slo/) or --slo=path/to/profile.yaml"


class SLOHardwareMismatch(pytest.PytestWarning):
    """The SLO profile describes other hardware than this host: its thresholds do not apply as-is."""


def _profile(config: pytest.Config) -> Profile | None:
    session = config.stash[session_key]
    if not session.options.slo:
        return None
    try:
        return load_profile(session.options.slo)
    except ProfileError as exc:
        raise pytest.UsageError(f"--slo: {exc}") from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "slo_point_id" not in metafunc.fixturenames:
        return
    profile = _profile(metafunc.config)
    session = metafunc.config.stash[session_key]
    if profile is None or not session.targets:
        metafunc.parametrize("slo_point_id", [pytest.param(None, id="no-profile", marks=pytest.mark.skip(reason=NO_PROFILE))])
        return
    model = session.options.model
    if model not in profile.models:
        raise pytest.UsageError(f"--slo: {profile.path}: profile {profile.name!r} has no load points for model {model!r}; it has: {', '.join(profile.models)}")
    ids = [p["id"] for p in profile.models[model]["load_points"]]
    metafunc.parametrize("slo_point_id", ids)


def pytest_report_header(config: pytest.Config) -> list[str]:
    try:
        profile = _profile(config)
    except pytest.UsageError:
        return []
    if profile is None:
        return []
    problem = profile.hardware_mismatch(detect_hardware())
    lines = [f"pytest-infer SLO profile: {profile.name} ({profile.path})"]
    if problem:
        lines.append(f"!!! SLO PROFILE MISMATCH: {problem}; thresholds are judged anyway !!!")
    return lines


@pytest.fixture(scope="session")
def slo_hardware() -> Hardware:
    return detect_hardware()


@pytest.fixture(scope="session")
def slo_profile(pytestconfig: pytest.Config, slo_hardware: Hardware) -> Profile:
    profile = _profile(pytestconfig)
    assert profile is not None  # the tests are skipped without one
    problem = profile.hardware_mismatch(slo_hardware)
    if problem:
        warnings.warn(SLOHardwareMismatch(f"{problem}; the figures are judged against its thresholds anyway"), stacklevel=1)
    return profile


@pytest.fixture
def slo_result(request: pytest.FixtureRequest, slo_point_id: str, slo_profile: Profile, slo_hardware: Hardware, infer_live_server, infer_session, infer_target, infer_record) -> PointResult:
    """Measure this load point on this target; record it; ERROR when the measurement is invalid."""
    point = next(p for p in slo_profile.load_points(infer_target.model, infer_live_server.framework) if p.id == slo_point_id)
    if infer_session.options.slo_repeat:
        point = point.repeated(infer_session.options.slo_repeat)
    result = evaluate_point(
        point,
        base_url=infer_live_server.base_url,
        model=infer_live_server.model,
        framework=infer_live_server.framework,
        rules=ValidityRules.from_dict(slo_profile.validity),
        api_key=infer_session.options.api_key,
        timeout=infer_session.options.request_timeout,
        pid=infer_live_server.pid,
    )
    mismatch = slo_profile.hardware_mismatch(slo_hardware)
    infer_session.results.slo.append(
        result.record(
            nodeid=request.node.nodeid,
            target=infer_target.id,
            framework=infer_live_server.framework,
            version=infer_live_server.version,
            model=infer_live_server.model,
            profile=slo_profile.name,
            hardware=slo_hardware.to_dict(),
            hardware_mismatch=mismatch,
        )
    )
    figures = result.figures()
    infer_record("slo_verdict", result.verdict.status)
    for key in ("output_tokens_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "attainment", "peak_rss_gb"):
        if key in figures:
            infer_record(f"slo_{key}", figures[key])
    request.node.add_report_section("setup", "slo figures", result.table())
    if result.verdict.status == "invalid":
        pytest.fail(f"measurement invalid: {'; '.join(result.verdict.invalid)}\n{result.table()}", pytrace=False)
    return result

"""``pytest-infer calibrate`` measures one server version's drift on one machine: sessions of another framework,
version, model or machine are refused, naming the field and the files, since a slower version among them would widen
the very drift that should catch it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_infer.cli import main
from pytest_infer.results.model import SessionResults
from pytest_infer.slo.drift import CalibrationError, calibrate

from .test_drift import KEY, TPS, one_session

MACHINE = {
    "host": "runner-1",
    "cpu": {"model": "EPYC 9654", "count": 16},
    "gpu": {"count": 1, "names": ["H200"]},
}


def on_machine(results: SessionResults, **changes: object) -> SessionResults:
    results.environment.update({**MACHINE, **changes})
    return results


def sessions(*odd: tuple[str, SessionResults]) -> list[tuple[str, SessionResults]]:
    """Three sessions of vLLM 0.32.0 on one machine, then ``odd``."""
    return [
        (f"s{i}.json", on_machine(one_session("0.32.0", 500 + 10 * i, seed=i))) for i in range(3)
    ] + list(odd)


def renamed(results: SessionResults, **facts: str) -> SessionResults:
    for name, value in facts.items():
        setattr(results.targets["vllm"], name, value)
    return results


@pytest.mark.parametrize(
    ("field", "odd", "listed"),
    [
        (
            "version",
            on_machine(one_session("0.33.0", 350, seed=9)),
            "'0.32.0' in s0.json, s1.json, s2.json; '0.33.0'",
        ),
        (
            "framework",
            renamed(on_machine(one_session("0.32.0", 500, seed=9)), framework="sglang"),
            "'sglang' in",
        ),
        (
            "model",
            renamed(on_machine(one_session("0.32.0", 500, seed=9)), model="gemma-3-270m"),
            "'gemma-3-270m'",
        ),
        (
            "machine",
            on_machine(one_session("0.32.0", 500, seed=9), gpu={"count": 0}),
            "EPYC 9654, 16 cores, no GPU",
        ),
        (
            "machine",
            on_machine(one_session("0.32.0", 500, seed=9), cpu={"model": "Xeon", "count": 2}),
            "'Xeon, 2",
        ),
        (
            "version",
            renamed(on_machine(one_session("0.32.0", 500, seed=9)), commit="0123456789abcdef"),
            "(commit 01",
        ),
    ],
)
def test_calibrate_refuses_sessions_of_another_server_or_machine_naming_the_field_and_files(
    field, odd, listed
):
    with pytest.raises(CalibrationError, match=f"the sessions differ in {field}: ") as refused:
        calibrate(sessions(("odd.json", odd)))
    assert listed in str(refused.value) and "in odd.json" in str(refused.value)


def test_a_slower_version_can_no_longer_widen_the_drift_that_should_catch_it():
    alone = calibrate(sessions())
    assert alone.drift(KEY, TPS).largest_pct < 10  # the drift of 0.32.0's own sessions
    with pytest.raises(CalibrationError, match="differ in version"):
        calibrate(
            sessions(("slow.json", on_machine(one_session("0.33.0", 330, seed=9))))
        )  # before: a 50% "drift"


def test_sessions_on_runners_of_one_type_are_one_machine():
    other_host = on_machine(one_session("0.32.0", 505, seed=9), host="runner-2")
    assert calibrate(sessions(("s3.json", other_host))).drift(KEY, TPS).sessions == 4


def test_the_target_named_is_the_one_compared_in_a_file_holding_several():
    merged = on_machine(one_session("0.32.0", 500, seed=9, session="m"))
    old = one_session("0.31.0", 300, seed=9, target="old", session="m2")
    merged.targets["old"] = old.targets["old"]
    merged.table("slo").merge(old.table("slo"))
    with pytest.raises(
        CalibrationError, match=r"differ in version: .*'0\.31\.0' in m\.json \(old\)"
    ):
        calibrate(sessions(("m.json", merged)))
    assert calibrate(sessions(("m.json", merged)), target="vllm").drift(KEY, TPS).sessions == 4


def test_the_command_refuses_with_the_message_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    for name, results in sessions(("odd.json", on_machine(one_session("0.33.0", 350, seed=9)))):
        results.write(tmp_path / "runs" / name)
    assert (
        main(["calibrate", str(tmp_path / "runs"), "-o", str(tmp_path / "calibration.json")]) == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("pytest-infer calibrate: error: the sessions differ in version: ")
    runs = tmp_path / "runs"
    assert f"'0.33.0' in {runs / 'odd.json'}" in err and f"'0.32.0' in {runs / 's0.json'}" in err
    assert not (tmp_path / "calibration.json").exists()

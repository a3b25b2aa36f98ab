"""``pytest-infer merge|compare|report|history``: exit codes and files, as CI uses them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from results_factory import CHECKS, session, with_capacity

from pytest_infer.cli import main
from pytest_infer.results.model import SessionResults


@pytest.fixture
def jobs(tmp_path: Path) -> Path:
    """What three CI jobs upload: vLLM 0.31.0 (baseline), 0.32.0 (a regression), transformers serve."""
    for name, results in {
        "vllm-0.31.0": session("0.31.0"),
        "vllm-0.32.0": session("0.32.0", outcomes={"chat.stop_strings": "failed"}, seed=1),
        "transformers": session("5.24.0", target="transformers", framework="transformers", seed=2),
    }.items():
        results.write(tmp_path / "jobs" / name / "results.json")
    return tmp_path / "jobs"


def test_merge_then_report(jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture):
    assert main(["merge", str(jobs), "-o", str(tmp_path / "merged.json")]) == 0
    merged = SessionResults.read(tmp_path / "merged.json")
    assert sorted(t.version for t in merged.targets.values()) == ["0.31.0", "0.32.0", "5.24.0"]
    out = capsys.readouterr().out
    assert "merged 3 files, 3 targets" in out and "chat.stop_strings" in out
    assert (
        main(
            [
                "report",
                str(tmp_path / "merged.json"),
                "-o",
                str(tmp_path / "site"),
                "--no-step-summary",
            ]
        )
        == 0
    )
    assert {p.name for p in (tmp_path / "site").iterdir()} == {
        "report.html",
        "summary.md",
        "benchmark.json",
    }


def test_compare_exits_1_on_a_regression_and_0_otherwise(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture
):
    base, cand = jobs / "vllm-0.31.0" / "results.json", jobs / "vllm-0.32.0" / "results.json"
    assert (
        main(
            [
                "compare",
                str(base),
                str(cand),
                "--fail-on",
                "ttft_p99:10%",
                "-o",
                str(tmp_path / "gated.json"),
                "--markdown",
                str(tmp_path / "gate.md"),
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert (
        "upgrade gate: FAIL: 1 regression" in out
        and "[check] chat.stop_strings: passed -> failed" in out
    )
    assert SessionResults.read(tmp_path / "gated.json").gate["failed"] is True
    assert "**Upgrade gate: FAIL: 1 regression**" in (tmp_path / "gate.md").read_text()
    assert main(["compare", str(cand), str(base)]) == 0  # the other way round it is an improvement
    assert "improvements (1):" in capsys.readouterr().out


def test_compare_pairs_targets_explicitly(jobs: Path, capsys: pytest.CaptureFixture):
    base, hf = jobs / "vllm-0.31.0" / "results.json", jobs / "transformers" / "results.json"
    assert main(["compare", str(base), str(hf)]) == 2
    assert "NO COMPARISON" in capsys.readouterr().out
    assert main(["compare", str(base), str(hf), "--pair", "vllm=transformers"]) == 0


def test_compare_exits_2_when_a_measurement_was_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    """No regression, but a load point the candidate could not measure: the gate cannot pass it."""
    with_capacity(session("0.31.0"), "pass", "passed").write(tmp_path / "base.json")
    with_capacity(session("0.32.0"), "invalid", "error").write(tmp_path / "cand.json")
    assert (
        main(
            [
                "compare",
                str(tmp_path / "base.json"),
                str(tmp_path / "cand.json"),
                "--markdown",
                str(tmp_path / "gate.md"),
            ]
        )
        == 2
    )
    assert (
        "upgrade gate: INCOMPLETE: no regressions in what was compared; NOT MEASURED:"
        " test_load_point_meets_slo[capacity]" in capsys.readouterr().out
    )
    assert "**Upgrade gate: INCOMPLETE: " in (tmp_path / "gate.md").read_text()


@pytest.mark.parametrize("bad", ["cut", "missing", "rule"])
def test_bad_input_exits_2_with_a_message(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture, bad: str
):
    good = jobs / "vllm-0.31.0" / "results.json"
    cut = tmp_path / "cut.json"
    cut.write_text(good.read_text()[:500])
    argv = {
        "cut": ["compare", str(good), str(cut)],
        "missing": ["report", str(tmp_path / "none.json")],
        "rule": ["compare", str(good), str(good), "--fail-on", "ttft"],
    }[bad]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pytest-infer {argv[0]}: error: ")
    assert {
        "cut": "cut short or corrupt",
        "missing": "No such file",
        "rule": "not METRIC:THRESHOLD",
    }[bad] in err


def test_history_compares_each_sound_version_with_the_one_before(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    """A deviation that appears, disappears and reappears, and a cut-short run in the middle that is compared with
    nothing."""
    runs = (("0.9.1", {}, None), ("0.30.0", {"chat.basic": "failed"}, None),
            ("0.31.0", {"chat.basic": "failed", "chat.n_choices": "failed"}, 2),
            ("0.32.0", {}, None), ("0.33.0", {"chat.basic": "failed"}, None))  # fmt: skip
    for version, outcomes, status in runs:
        results = session(version, outcomes=outcomes)
        if status is not None:
            results.environment["run"] = {"exitstatus": status, "collected": 40, "ran": 12}
        results.write(tmp_path / "h" / f"{version}.json")
    assert main(["history", str(tmp_path / "h"), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert (
        "vllm: 0.9.1, 0.30.0, 0.31.0 (cut short: pytest exited 2 (12 of 40 tests recorded)), 0.32.0, 0.33.0"
        in out
    )
    assert (
        "vllm 0.9.1 -> 0.30.0: FAIL: 1 regression\n  REGRESSED: [check] chat.basic: passed -> failed"
        in out
    )
    assert (
        "vllm 0.30.0 -> 0.32.0 (skipping 0.31.0: not comparable): PASS: no regressions\n  fixed: [check] chat.basic:"
        " failed -> passed (fixed)" in out
    )
    assert (
        "chat.n_choices" not in out
    )  # it failed only in the cut-short run, which is compared with nothing
    assert (
        "SLO figures not compared (no --fail-on rules)" in out and "[slo]" not in out
    )  # sessions apart: drift, not versions
    assert (
        "moved more than once: vllm [check] chat.basic: REGRESSED in 0.30.0, fixed in 0.32.0, REGRESSED in 0.33.0"
        in out
    )
    markdown = (tmp_path / "out" / "summary.md").read_text()
    assert (
        "| vllm | 0.31.0 | **cut short: pytest exited 2 (12 of 40 tests recorded)** |" in markdown
    )
    assert (
        "- vllm [check] `chat.basic`: REGRESSED in 0.30.0, fixed in 0.32.0, REGRESSED in 0.33.0"
        in markdown
    )
    assert (
        "| area | row | 0.9.1 | 0.30.0 | 0.32.0 | 0.33.0 |" in markdown
        and "| check | chat.basic | pass | FAIL | pass | FAIL |" in markdown
    )
    assert "chat.n_choices |" not in markdown  # only the cut-short run saw it fail
    fixed = markdown.split("### vllm 0.30.0 → 0.32.0")[1].split("###")[0]
    assert (
        "`curl -sS http://127.0.0.1:8000/v1/chat.basic`" in fixed
    )  # the fix is shown where it failed: on 0.30.0
    page = (tmp_path / "out" / "history.html").read_text()
    assert (
        "cut short" in page and "REGRESSED in 0.30.0, fixed in 0.32.0, REGRESSED in 0.33.0" in page
    )
    assert page.count("<svg") == 3  # ttft_p50, ttft_p99, output_tps across the four sound versions


def test_history_marks_a_timing_change_only_when_significant(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    for version, ttft, noise in (
        ("0.1.0", 40, 0.02),
        ("0.2.0", 40.4, 0.02),
        ("0.3.0", 60, 0.02),
    ):  # +1% within noise, then +49%
        session(version, ttft_ms=ttft, noise=noise, seed=int(version.split(".")[1])).write(
            tmp_path / "h" / f"{version}.json"
        )
    for seed in (
        4,
        5,
        6,
    ):  # three sessions of one version: the machine's drift between sessions, ~2% here
        session("0.1.0", ttft_ms=40, seed=seed).write(tmp_path / "same" / f"{seed}.json")
    assert (
        main(["calibrate", str(tmp_path / "same"), "-o", str(tmp_path / "calibration.json")]) == 0
    )
    capsys.readouterr()
    args = [
        "history",
        str(tmp_path / "h"),
        "-o",
        str(tmp_path / "out"),
        "--fail-on",
        "ttft_p50:10%",
    ]
    assert main([*args, "--calibration", str(tmp_path / "calibration.json")]) == 0
    out = capsys.readouterr().out
    assert "SLO figures compared under ttft_p50:10%, each change tested for significance" in out
    step_1, step_2 = out.split("vllm 0.2.0 -> 0.3.0")
    assert "ttft_p50" not in step_1.split("vllm 0.1.0 -> 0.2.0")[1]
    assert (
        "REGRESSED: [slo] cpu/c=1: ttft_p50_ms: " in step_2
        and "% worse, limit ttft_p50:10% + calibrated drift" in step_2
    )
    # versions are sessions of their own: without a calibration their timing is shown, not judged
    assert main(args) == 0
    step_2 = capsys.readouterr().out.split("vllm 0.2.0 -> 0.3.0")[1]
    assert (
        "REGRESSED" not in step_2
        and "% worse, limit ttft_p50:10%; separate sessions, not gated: no calibration" in step_2
    )


def test_history_shows_a_version_whose_server_never_started_as_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    for version in ("0.1.0", "0.2.0", "0.3.0"):
        session(
            version, outcomes=dict.fromkeys(CHECKS, "not_run") if version == "0.2.0" else {}
        ).write(tmp_path / "h" / f"{version}.json")
    assert main(["history", str(tmp_path / "h"), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert (
        "0.2.0 (invalid: judged nothing: no test reached a verdict on the server; its tests: 5 not run)"
        in out
        and "vllm 0.1.0 -> 0.3.0 (skipping 0.2.0: not comparable)" in out
    )


def test_the_console_script_is_installed(jobs: Path, tmp_path: Path):
    tool = shutil.which("pytest-infer")
    if tool is None:
        pytest.skip("pytest-infer is not installed as a command (pip install -e .)")
    run = subprocess.run(
        [tool, "merge", str(jobs), "-o", str(tmp_path / "m.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "m.json").read_text())["schema_version"] == 1


@pytest.mark.parametrize(("regressed", "code"), [(True, 1), (False, 0)])
def test_the_gate_script_merges_renders_and_gives_the_verdict(
    tmp_path: Path, regressed: bool, code: int
):
    """``scripts/upgrade-gate.sh gate DIR`` on what the three engine legs leave behind."""
    if shutil.which("pytest-infer") is None:
        pytest.skip("pytest-infer is not installed as a command (pip install -e .)")
    out = tmp_path / "gate"
    session("0.31.0").write(out / "vllm-0.31.0" / "results.json")
    session("0.32.0", outcomes={"chat.stop_strings": "failed"} if regressed else {}, seed=1).write(
        out / "vllm-0.32.0" / "results.json"
    )
    session("5.24.0", target="transformers", framework="transformers").write(
        out / "transformers" / "results.json"
    )
    script = Path(__file__).parents[2] / "scripts" / "upgrade-gate.sh"
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    run = subprocess.run(
        ["bash", str(script), "gate", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == code, run.stdout + run.stderr
    assert "=== verdict" in run.stdout
    assert (
        "upgrade gate: FAIL: 1 regression" if regressed else "upgrade gate: PASS: no regressions"
    ) in run.stdout
    assert {p.name for p in (out / "merged").iterdir()} >= {
        "results.json",
        "report.html",
        "summary.md",
        "gate.md",
    }
    assert "transformers 5.24.0" in (out / "merged" / "summary.md").read_text()


def test_the_history_page_in_a_headless_browser_shows_the_versions_the_differences_and_the_trends(
    tmp_path: Path,
):
    """Offline, no scripts: the DOM has the versions, the per-version table and a trend plot, and the first screen shows
    a FAIL cell."""
    from tests.reporting.test_renderings import chromium

    browser = chromium()
    if browser is None:
        pytest.skip("no headless browser: apt-get install chromium")
    from PIL import Image

    for version, outcomes in (("0.1.0", {}), ("0.2.0", {"chat.basic": "failed"}), ("0.3.0", {})):
        session(version, outcomes=outcomes).write(tmp_path / "h" / f"{version}.json")
    assert main(["history", str(tmp_path / "h"), "-o", str(tmp_path / "out")]) == 0
    url = (tmp_path / "out" / "history.html").resolve().as_uri()
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert (
        'id="versions"' in dom.stdout
        and 'id="differs-vllm"' in dom.stdout
        and "<svg" in dom.stdout
        and "<script" not in dom.stdout
    )
    assert (
        dom.stdout.index('id="versions"')
        < dom.stdout.index('id="differs-vllm"')
        < dom.stdout.index("<svg")
    )
    shot = tmp_path / "history.png"
    run = subprocess.run(
        [browser, *flags, "--window-size=1400,900", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    assert (0xFF, 0xCD, 0xD2) in {
        c for _, c in Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)
    }  # a FAIL on the first screen

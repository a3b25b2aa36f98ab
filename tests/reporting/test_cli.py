"""``pytest-infer merge|compare|report|history``: exit codes and files, as CI uses them."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from results_factory import session

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
    assert main(["report", str(tmp_path / "merged.json"), "-o", str(tmp_path / "site"), "--no-step-summary"]) == 0
    assert {p.name for p in (tmp_path / "site").iterdir()} == {"report.html", "summary.md", "benchmark.json"}


def test_compare_exits_1_on_a_regression_and_0_otherwise(jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture):
    base, cand = jobs / "vllm-0.31.0" / "results.json", jobs / "vllm-0.32.0" / "results.json"
    assert main(["compare", str(base), str(cand), "--fail-on", "ttft_p99:10%", "-o", str(tmp_path / "gated.json"), "--markdown", str(tmp_path / "gate.md")]) == 1
    out = capsys.readouterr().out
    assert "upgrade gate: FAIL: 1 regression" in out and "[check] chat.stop_strings: passed -> failed" in out
    assert SessionResults.read(tmp_path / "gated.json").gate["failed"] is True
    assert "**Upgrade gate: FAIL: 1 regression**" in (tmp_path / "gate.md").read_text()
    assert main(["compare", str(cand), str(base)]) == 0  # the other way round it is an improvement
    assert "improvements (1):" in capsys.readouterr().out


def test_compare_pairs_targets_explicitly(jobs: Path, capsys: pytest.CaptureFixture):
    base, hf = jobs / "vllm-0.31.0" / "results.json", jobs / "transformers" / "results.json"
    assert main(["compare", str(base), str(hf)]) == 2
    assert "NO COMPARISON" in capsys.readouterr().out
    assert main(["compare", str(base), str(hf), "--pair", "vllm=transformers"]) == 0


@pytest.mark.parametrize("bad", ["cut", "missing", "rule"])
def test_bad_input_exits_2_with_a_message(jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture, bad: str):
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
    assert {"cut": "cut short or corrupt", "missing": "No such file", "rule": "not METRIC:THRESHOLD"}[bad] in err


def test_history_names_the_first_version_where_a_check_changed(tmp_path: Path, capsys: pytest.CaptureFixture):
    for version, outcomes, ttft in (("0.9.1", {}, 40), ("0.30.0", {}, 41), ("0.31.0", {"chat.basic": "failed"}, 55), ("0.32.0", {"chat.basic": "failed"}, 56)):
        session(version, outcomes=outcomes, ttft_ms=ttft).write(tmp_path / "h" / f"{version}.json")
    assert main(["history", str(tmp_path / "h"), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "vllm [check] chat.basic: pass -> FAIL first in 0.31.0"
    page = (tmp_path / "out" / "history.html").read_text()
    assert "0.9.1, 0.30.0, 0.31.0, 0.32.0" in page and page.count("<svg") == 3  # ttft_p50, ttft_p99, output_tps


def test_the_console_script_is_installed(jobs: Path, tmp_path: Path):
    tool = shutil.which("pytest-infer")
    if tool is None:
        pytest.skip("pytest-infer is not installed as a command (pip install -e .)")
    run = subprocess.run([tool, "merge", str(jobs), "-o", str(tmp_path / "m.json")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "m.json").read_text())["schema_version"] == 1


@pytest.mark.parametrize(("regressed", "code"), [(True, 1), (False, 0)])
def test_the_gate_script_merges_renders_and_gives_the_verdict(tmp_path: Path, regressed: bool, code: int):
    """``scripts/upgrade-gate.sh gate DIR`` on what the three engine legs leave behind."""
    if shutil.which("pytest-infer") is None:
        pytest.skip("pytest-infer is not installed as a command (pip install -e .)")
    out = tmp_path / "gate"
    session("0.31.0").write(out / "vllm-0.31.0" / "results.json")
    session("0.32.0", outcomes={"chat.stop_strings": "failed"} if regressed else {}, seed=1).write(out / "vllm-0.32.0" / "results.json")
    session("5.24.0", target="transformers", framework="transformers").write(out / "transformers" / "results.json")
    script = Path(__file__).parents[2] / "scripts" / "upgrade-gate.sh"
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    run = subprocess.run(["bash", str(script), "gate", str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == code, run.stdout + run.stderr
    assert "=== verdict" in run.stdout
    assert ("upgrade gate: FAIL: 1 regression" if regressed else "upgrade gate: PASS: no regressions") in run.stdout
    assert {p.name for p in (out / "merged").iterdir()} >= {"results.json", "report.html", "summary.md", "gate.md"}
    assert "transformers 5.24.0" in (out / "merged" / "summary.md").read_text()

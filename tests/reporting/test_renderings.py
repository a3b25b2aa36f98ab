"""Every rendering of the one results model: terminal, Markdown, JUnit properties, pytest-benchmark JSON, HTML."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip(
    "matplotlib.figure"
)  # loaded once here: pytester's in-process runs cannot re-import numpy

from results_factory import flat_drift, session  # noqa: E402

from pytest_infer.gating.compare import compare  # noqa: E402
from pytest_infer.options import ENDPOINT, REPORT_DIR  # noqa: E402
from pytest_infer.reporting.benchmark import to_benchmark_json  # noqa: E402
from pytest_infer.reporting.html import render_html  # noqa: E402
from pytest_infer.reporting.markdown import render_markdown  # noqa: E402
from pytest_infer.reporting.outputs import write_renderings  # noqa: E402
from pytest_infer.reporting.terminal import render_gate, render_summary  # noqa: E402
from pytest_infer.results.model import combine  # noqa: E402
from pytest_infer.slo.rules import parse_rules  # noqa: E402
from pytest_infer.slo.settings import gate_settings  # noqa: E402
from pytest_infer.testing.fakeserver import FakeServer  # noqa: E402

RULES = parse_rules("ttft_p99:10%,output_tps:5%")


@pytest.fixture(scope="module")
def matrix():
    """vLLM 0.31 (baseline), vLLM 0.32 (a failing check, a broken keyword, slower) and transformers serve, merged."""
    base = session("0.31.0", samples=150)
    cand = session(
        "0.32.0",
        outcomes={"chat.stop_strings": "failed"},
        keywords={"pattern": {"valid": 2, "invalid": 2}},
        ttft_ms=48,
        seed=1,
        samples=150,
    )
    hf = session(
        "5.24.0",
        target="transformers",
        framework="transformers",
        outcomes={"completions.logprobs": "unsupported"},
        ttft_ms=80,
        output_tps=100,
        seed=2,
        samples=150,
    )
    gate = compare(base, cand, gate_settings(RULES, flat_drift()))
    merged = combine([("base", base), ("cand", cand), ("hf", hf)])
    merged.gate = gate.to_dict()
    return merged, gate


def test_terminal_has_one_column_per_framework_version(matrix):
    merged, gate = matrix
    lines = render_summary(merged)
    header = next(line for line in lines if line.startswith("check"))
    assert re.split(r"\s{2,}", header) == [
        "check",
        "vllm 0.31.0",
        "vllm 0.32.0",
        "transformers 5.24.0",
    ]
    assert re.split(
        r"\s{2,}", next(line for line in lines if line.startswith("chat.stop_strings"))
    ) == [
        "chat.stop_strings",
        "pass",
        "FAIL",
        "pass",
    ]
    assert re.split(r"\s{2,}", next(line for line in lines if line.startswith("pattern"))) == [
        "pattern",
        "valid",
        "invalid",
        "valid",
    ]
    assert any(line.startswith("cpu/c=8 ttft_p99_ms") for line in lines)
    gate_lines = render_gate(gate)
    assert gate_lines[0] == "upgrade gate: FAIL: 5 regressions" and "REGRESSIONS (5):" in gate_lines


def test_markdown_has_the_verdict_the_matrix_and_the_differences(matrix):
    merged, gate = matrix
    md = render_markdown(merged, gate)
    assert "**Upgrade gate: FAIL: 5 regressions**" in md
    assert "| check | vllm 0.31.0 | vllm 0.32.0 | transformers 5.24.0 |" in md
    assert "| chat.stop_strings | ✅ pass | ❌ FAIL | ✅ pass |" in md
    assert "| regression | keyword | pattern | valid | invalid | vllm 0.31.0 -> vllm 0.32.0 |" in md


def test_a_run_appends_its_markdown_to_the_github_step_summary(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    summary = pytester.path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile(
        "def test_answers(infer_client):\n    assert infer_client.chat('hi', max_tokens=4).status_code == 200\n"
    )
    with FakeServer() as server:
        result = pytester.runpytest(
            f"{ENDPOINT}={server.base_url}", f"{REPORT_DIR}=out", "-p", "no:cacheprovider"
        )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["step summary: */step-summary.md"])
    text = summary.read_text()
    assert text.startswith("earlier step\n## pytest-infer\n")
    assert "| test_answers | ✅ pass |" in text
    assert (pytester.path / "out" / "summary.md").read_text() == text.removeprefix("earlier step\n")


def test_junit_xml_carries_framework_version_model_and_profile(pytester: pytest.Pytester):
    pytester.makepyfile(
        "def test_answers(infer_client):\n    assert infer_client.chat('hi', max_tokens=4).status_code == 200\n"
    )
    with FakeServer() as server:
        result = pytester.runpytest(
            f"{ENDPOINT}={server.base_url}",
            "--infer-framework=vllm",
            "--slo=cpu",
            "--junitxml=junit.xml",
            "-p",
            "no:cacheprovider",
        )
    result.assert_outcomes(passed=1)
    case = ET.parse(pytester.path / "junit.xml").getroot().find(".//testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["infer_framework"] == "vllm" and props["infer_model"] == "fake-model"
    assert (
        props["infer_profile"] == "cpu"
        and props["infer_target"] == "vllm"
        and props["infer_version"]
    )


def test_benchmark_json_is_read_by_pytest_benchmark_compare(matrix, tmp_path: Path):
    merged, _ = matrix
    data = to_benchmark_json(merged)
    by_name = {b["name"]: b for b in data["benchmarks"]}
    tps = by_name["output_tps[vllm 0.31.0]"]
    point = next(
        b
        for b in data["benchmarks"]
        if b["name"] == "output_tps[vllm 0.31.0]" and b["params"]["load_point"] == "cpu/c=8"
    )
    assert point["stats"]["rounds"] == 5 and point["extra_info"]["stored_as"].startswith(
        "reciprocal"
    )
    assert 1 / point["stats"]["median"] == pytest.approx(
        point["extra_info"]["value"]
    )  # ops of the median round is the throughput
    ttft = next(
        b
        for b in data["benchmarks"]
        if b["name"] == "ttft_p99_ms[vllm 0.31.0]" and b["params"]["load_point"] == "cpu/c=8"
    )
    assert ttft["stats"]["median"] == pytest.approx(ttft["extra_info"]["value"] / 1000)  # seconds
    assert tps["stats"]["ops"] > 0
    single = to_benchmark_json(session("0.31.0"))
    assert single["machine_info"]["cpu"]["count"] == 2 and single["commit_info"]["id"] == "abc123"
    path = tmp_path / "0001_infer.json"
    path.write_text(json.dumps(data))
    tool = shutil.which("pytest-benchmark")
    if tool is None:
        pytest.skip("the pytest-benchmark command is not on PATH")
    # From a neutral folder: pytest-benchmark loads pytest, which would read this project's warnings-as-errors.
    out = subprocess.run(
        [tool, "compare", str(path), "--columns=min,median,ops,rounds", "--group-by=name"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert (
        "ttft_p99_ms[vllm 0.32.0]" in out.stdout and "output_tps[transformers 5.24.0]" in out.stdout
    )


def test_html_is_self_contained(matrix):
    merged, gate = matrix
    page = render_html(merged, gate)
    assert "<script" not in page.lower() and "<link" not in page.lower() and "@import" not in page
    external = [
        u
        for u in re.findall(r"""(?:src|href)=["']([^"']+)""", page)
        if not u.startswith(("#", "data:"))
    ]
    assert external == []
    assert (
        page.count("<svg") == 4
    )  # TTFT CDF, throughput and TTFT against concurrency, keyword heat map
    assert 'id="matrix"' in page and 'id="verdict" class="verdict fail">FAIL: 5 regressions' in page


def test_html_escapes_what_the_servers_said(matrix):
    merged, _ = matrix
    evil = session("0.33.0", outcomes={"chat.basic": "failed"})
    evil.tests[0].message = "<img src=x onerror=alert(1)>"
    page = render_html(evil)
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def chromium() -> str | None:
    return next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
    )


def test_html_report_in_a_headless_browser_shows_the_matrix_and_the_plots(matrix, tmp_path: Path):
    """Opened in headless Chromium: the DOM has the matrix and four plots, and the screenshot shows their colours."""
    browser = chromium()
    if browser is None:
        pytest.skip("no headless browser: apt-get install chromium")
    from PIL import Image

    merged, _ = matrix
    report_dir = tmp_path / "infer-report"
    written = write_renderings(merged, report_dir, step_summary=False)
    url = written.paths["html"].resolve().as_uri()
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert (
        dom.stdout.count("<svg") == 4
        and 'id="matrix"' in dom.stdout
        and 'id="structured"' in dom.stdout
        and 'id="slo"' in dom.stdout
    )
    shot = report_dir / "report.png"
    run = subprocess.run(
        [browser, *flags, "--window-size=1400,2600", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    pixels = Image.open(shot).convert("RGB")
    colours = {c for _, c in pixels.getcolors(maxcolors=1 << 20)}
    assert (0xFF, 0xCD, 0xD2) in colours  # a failed cell / a regression
    assert (0xE8, 0xF5, 0xE9) in colours  # passed cells
    assert (0xC6, 0x28, 0x28) in colours  # the heat map's invalid keyword
    assert (0x2E, 0x7D, 0x32) in colours  # the heat map's valid keywords

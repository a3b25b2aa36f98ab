"""``--junitxml`` is a first-class output: every bundled suite runs with it from the project root
(where warnings are errors) under the default ``junit_family``, and the XML carries each test's
framework, version, reproducer, severity and SLO figures as testcase properties."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_infer.testing.fakeserver import Deviation, FakeServer

ROOT = Path(__file__).resolve().parents[2]
PROFILE = """
name: junit
hardware: {accelerator: cpu}
validity: {max_client_busy: 2.0, max_loop_lag_p99_ms: 10000, max_schedule_lag_p99_ms: 10000}
defaults: {api: chat, output_tokens: 4, input_tokens: 8, warmup_requests: 1, requests: 6}
models:
  tiny:
    load_points:
      - {id: c1, concurrency: 1, thresholds: {ttft_p50_ms: 5000, max_error_share: 0}}
"""
SUITES = {
    "conformance": ("-k", "chat or errors"),
    "structured": (
        "--structured-examples=2",
        "--structured-keywords=enum,const",
        "--structured-shrink-seconds=5",
        "-k",
        "response_format and not stream",
    ),
    "slo": (),
    "robustness": ("-k", "test_bad_request_is_refused"),
}


def empty_chat_ids(path: str, body: dict, response: dict) -> dict:
    """A deviation the conformance suite must catch (``chat.fields``: an empty ``id``)."""
    return {**response, "id": ""} if path == "/v1/chat/completions" else response


def accept_unknown_roles(path: str, body: dict):
    """A deviation the robustness suite must catch: a message with role "wizard" gets HTTP 200."""
    if any(isinstance(m, dict) and m.get("role") == "wizard" for m in body.get("messages") or []):
        return 200, {"id": "x", "object": "chat.completion", "choices": []}
    return None


def junit_cases(path: Path) -> list[ET.Element]:
    return list(ET.parse(path).getroot().iter("testcase"))


def properties(case: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in case.iter("property")}


@pytest.mark.parametrize("suite", SUITES)
def test_each_suite_writes_junit_xml_from_the_project_root_without_a_warning(
    suite: str, tmp_path: Path
):
    (tmp_path / "junit.yaml").write_text(PROFILE)
    xml = tmp_path / "report.xml"
    with FakeServer(Deviation(request=accept_unknown_roles, response=empty_chat_ids)) as srv:
        run = subprocess.run(
            [
                sys.executable, "-m", "pytest", f"suites/{suite}", "-m", suite,
                f"--infer-endpoint={srv.base_url}", "--infer-framework=vllm", f"--slo={tmp_path / 'junit.yaml'}",
                f"--infer-report-dir={tmp_path / 'report'}", "--infer-request-timeout=20", f"--junitxml={xml}",
                "-p", "no:cacheprovider", "-q", *SUITES[suite],
            ],
            cwd=ROOT, capture_output=True, text=True, timeout=600,
            env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},
        )  # fmt: skip
    out = run.stdout + run.stderr
    assert "warning" not in out.splitlines()[-1], out[-3000:]
    assert "record_property is incompatible" not in out and "PytestWarning" not in out, out[-3000:]
    cases = junit_cases(xml)
    assert cases, out[-3000:]
    assert not [
        c
        for c in cases
        if c.find("error") is not None and "incompatible" in ET.tostring(c, encoding="unicode")
    ]
    for case in cases:
        props = properties(case)
        assert (
            props["infer_framework"] == "vllm"
            and "infer_version" in props
            and props["infer_target"]
        ), props
    if suite in ("conformance", "robustness"):
        failed = [c for c in cases if c.find("failure") is not None]
        assert failed, (
            "an empty chat id fails chat.fields; an accepted unknown role fails its robustness case"
        )
        for case in failed:
            props = properties(case)
            assert props["infer_reproducer"].startswith(("curl ", "printf ")), props
            assert suite == "robustness" or props["infer_severity"] in ("error", "warning"), props
    if suite == "slo":
        (case,) = cases
        props = properties(case)
        assert props["slo_verdict"] == "pass" and float(props["slo_ttft_p50_ms"]) > 0, props

"""The plugin launching a real, unmodified SGLang 0.5.23 on the CPU (``--infer-framework=sglang``
with no other flag), with an API key, and what that server is known to do. One server start.

Set-up: ``scripts/install-engines.sh sglang`` (route: ../shared/engines/sglang-cpu/README.md).
SGLang's CPU kernel is built for AVX-512; on a CPU without it these tests skip with that reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_infer.paths import engines_dir

pytestmark = pytest.mark.integration

VERSION = "0.5.23"
KEY = "sk-sglang-integration-7f3a"

FACTS = """
import json, os
from pathlib import Path

import httpx

from pytest_infer.adapters.sglang import cpu_has_amx

KEY = os.environ["PYTEST_INFER_API_KEY"]


def record(**facts):
    with open(os.environ["RECORD_FILE"], "a") as fh:
        fh.write(json.dumps(facts) + "\\n")


def test_version_and_cpu_engine_from_the_server(infer_server, infer_client):
    info = infer_client.get("/server_info").json()
    assert (infer_server.version, info["version"]) == ("0.5.23", "0.5.23")
    dtype = "bfloat16" if cpu_has_amx() else "float32"  # AMX: SGLang's kernel path has no float32 RMSNorm
    assert (info["device"], info["dtype"], info["attention_backend"]) == ("cpu", dtype, "torch_native")
    record(pid=infer_server.pid, log=infer_server.log_path)


def test_the_request_model_is_not_checked(infer_client):
    resp = infer_client.chat("Say something.", model="nope", max_tokens=4, temperature=0)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["model"] == "nope"  # echoed back, no 404
    message = body["choices"][0]["message"]
    assert "reasoning_content" in message and message["reasoning_content"] is None  # SGLang's extra field
    assert "matched_stop" in body["choices"][0]


def test_metrics_answer(infer_client):
    resp = infer_client.get("/metrics")
    assert resp.status_code == 200 and "sglang:" in resp.text, resp.text[:300]


def test_the_key_is_required_and_stays_off_argv(infer_server):
    assert httpx.get(f"{infer_server.base_url}/v1/models").status_code == 401
    argv = Path(f"/proc/{infer_server.pid}/cmdline").read_bytes().split(b"\\0")
    assert not any(KEY.encode() in arg for arg in argv)
    assert b"--config" in argv and b"--api-key" not in argv
"""


def sglang_environment() -> Path:
    """The installed SGLang venv; a skip naming AVX-512 where the CPU cannot run it, else the install hint."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists() and "avx512f" not in cpuinfo.read_text():
        pytest.skip(
            "SGLang's CPU kernel (sgl_kernel, built -march=x86-64-v4) needs AVX-512 (avx512f), which this CPU lacks"
        )
    folder = engines_dir() / f"sglang-{VERSION}"
    if not (folder / "bin" / "python").exists():
        kernels = Path(
            os.environ.get(
                "PYTEST_INFER_SGLANG_CPU_DIR",
                Path(__file__).resolve().parents[3] / "shared" / "engines" / "sglang-cpu",
            )
        )
        if not list(kernels.glob("sglang_kernel_cpu-*.whl")):
            pytest.skip(
                f"no CPU build of SGLang's kernel in {kernels} (PYTEST_INFER_SGLANG_CPU_DIR), so set-up could not"
                " install SGLang"
            )
        pytest.fail(
            f"engine sglang is not installed in {folder}: run scripts/install-engines.sh sglang",
            pytrace=False,
        )
    return folder


def test_real_sglang_through_the_plugin(pytester, monkeypatch, tmp_path):
    sglang_environment()
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("RECORD_FILE", str(record))
    monkeypatch.setenv("PYTEST_INFER_API_KEY", KEY)
    pytester.makepyfile(test_sglang_facts=FACTS)
    result = pytester.runpytest_subprocess(
        "--infer-framework=sglang",
        "--infer-model=tiny",
        "-p",
        "no:cacheprovider",
        "-v",
        timeout=600,
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([f"sglang: sglang {VERSION} model=tiny (ready in *s): * passed*"])
    (seen,) = [json.loads(line) for line in record.read_text().splitlines()]
    log = Path(seen["log"]).read_text()
    assert "The server is fired up and ready to roll!" in log
    assert KEY not in log  # SGLang logs its arguments, key included; the plugin masks it
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert [t["version"] for t in results["targets"].values()] == [VERSION]

"""An API key is sent to the server and written nowhere: not in the terminal, logs, reports or results.

The session below is built to tempt every leak: the launched server requires
the key and prints it in its own log (as servers that dump their config do), a
test fails with a curl reproducer and the server's log tail, the openai SDK is
used, and every report the plugin writes is written. Then every byte of every
artifact is searched for the key.
"""

from __future__ import annotations

from pathlib import Path

import httpcore  # noqa: F401  kept loaded across in-process runs (see test_faults.py)
import pytest
from core.fakeenv import make_fake_env

KEY = "sk-fake-0123456789abcdef-SECRET"
SESSION = """
import httpx

def chat_body(client):
    return {"model": client.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}

def test_key_is_sent(infer_client):
    assert infer_client.chat_completion("hi", max_tokens=2)["choices"]

def test_without_the_key_the_server_refuses(infer_server, infer_client):
    assert httpx.post(infer_server.base_url + "/v1/chat/completions", json=chat_body(infer_client)).status_code == 401

def test_openai_sdk_sends_it_too(infer_openai_client, infer_client):
    assert infer_openai_client.chat.completions.create(**chat_body(infer_client)).choices

def test_fails_with_a_reproducer(infer_client):
    resp = infer_client.post("/v1/chat/completions", json=chat_body(infer_client))
    print("reproduce:", infer_client.curl("POST", "/v1/chat/completions", chat_body(infer_client)))
    assert resp.status_code == 418, "reproduce: " + infer_client.curl(
        "POST", "/v1/chat/completions", chat_body(infer_client)
    )
"""


def artifacts(root: Path) -> dict[Path, bytes]:
    return {
        p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "test_session.py"
    }


@pytest.mark.parametrize("how", ["env", "option"])
def test_api_key_is_sent_and_appears_nowhere(pytester, tmp_path, monkeypatch, how):
    env = make_fake_env(tmp_path / "vllm-keyed", server_args="--print-env VLLM_API_KEY")
    pytester.makepyfile(test_session=SESSION)
    args = ["--infer-framework=vllm", f"--infer-env=vllm={env}", "--infer-model=/models/m", "-p", "no:cacheprovider",
            "--junitxml=junit.xml", "--infer-report-dir=report", "-rA", "-v"]  # fmt: skip
    if how == "env":
        monkeypatch.setenv("PYTEST_INFER_API_KEY", KEY)
    else:
        args.append(f"--infer-api-key={KEY}")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=3, failed=1)
    # The key was required, so the passing tests prove it was sent; the reproducer names the variable.
    result.stdout.fnmatch_lines(['*-H "Authorization: Bearer $PYTEST_INFER_API_KEY"*'])
    result.stdout.fnmatch_lines(["*server log tail: vllm*", "*config: VLLM_API_KEY=***"])
    files = artifacts(pytester.path)
    assert any(p.name == "results.json" for p in files) and any(
        p.suffix == ".log" for p in files
    ), sorted(files)
    leaks = [str(p.relative_to(pytester.path)) for p, data in files.items() if KEY.encode() in data]
    leaks += [
        name
        for name, text in (("stdout", result.stdout.str()), ("stderr", result.stderr.str()))
        if KEY in text
    ]
    assert not leaks, f"the API key appears in: {leaks}"

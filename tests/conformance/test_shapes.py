"""API drift: the shape of every answer is recorded, and the gate names a field removed, renamed or retyped."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from results_factory import session

from pytest_infer.cli import main as cli
from pytest_infer.conformance.table import ShapeTable, drift, flatten
from pytest_infer.gating.compare import compare
from pytest_infer.testing.fakeserver import Deviation, FakeServer

SUITE = Path(__file__).resolve().parents[2] / "suites" / "conformance"
CHAT = "POST /v1/chat/completions"


def answer(**message) -> dict:
    return {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", **message}, "logprobs": None}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}  # fmt: skip


def shapes(*answers: dict) -> dict:
    table = ShapeTable()
    for a in answers:
        table.record("t", CHAT, a)
    return table.to_json()["t"][CHAT]


def kinds(findings) -> list[tuple[str, str, str]]:
    return sorted((f.kind, f.subject.split(": ", 1)[1], f.detail.split(":")[0]) for f in findings)


def test_every_field_is_recorded_with_its_types_and_list_items_share_a_path():
    paths = dict((p, t) for p, t, _ in flatten(answer(content="hi", tool_calls=[])))
    assert paths["choices"] == "array" and paths["choices[]"] == "object" and paths["choices[].message.content"] == "string"
    assert paths["choices[].message.tool_calls"] == "empty-array" and paths["choices[].logprobs"] == "null"
    assert shapes(answer(content="hi"), answer(content=None))["choices[].message.content"]["types"] == ["string", "null"]


def test_a_renamed_field_is_a_regression_naming_both_names():
    found = drift(CHAT, shapes(answer(content="a", reasoning_content="thought")), shapes(answer(content="a", reasoning="thought")), "v1 -> v2")
    assert kinds(found) == [("regression", "choices[].message.reasoning_content", "renamed")]
    assert (found[0].before, found[0].after) == ("choices[].message.reasoning_content", "choices[].message.reasoning")


def test_removed_retyped_added_and_widened_fields():
    before = shapes(answer(content="a", refusal=None), {**answer(content="b"), "created": 1700000000})
    after = shapes({**answer(content="a"), "created": "2024-01-01", "system_fingerprint": "fp"}, answer(content=None))
    assert kinds(drift(CHAT, before, after, "p")) == [
        ("change", "choices[].message.content", "types seen changed"),  # now also null: a client must cope, but it is not gone
        ("change", "system_fingerprint", "added"),
        ("regression", "choices[].message.refusal", "removed"),
        ("regression", "created", "retyped"),
    ]


def test_a_field_under_an_array_seen_only_empty_is_not_called_removed():
    before = shapes({**answer(content="a"), "data": [{"embedding": [0.1]}]})
    after = shapes({**answer(content="a"), "data": []})
    assert drift(CHAT, before, after, "p") == []
    assert kinds(drift(CHAT, before, shapes(answer(content="a")), "p")) == [("regression", "data", "removed")]  # the parent went: one finding


def test_the_gate_fails_on_two_result_files_differing_only_in_a_renamed_field():
    baseline, candidate = session("0.31.0"), session("0.32.0")
    baseline.table("conformance").record("vllm", CHAT, answer(content="a", reasoning_content="thought"))
    candidate.table("conformance").record("vllm", CHAT, answer(content="a", reasoning="thought"))
    gate = compare(baseline, candidate)
    assert gate.failed and [(f.area, f.subject) for f in gate.regressions] == [("api", f"{CHAT}: choices[].message.reasoning_content")]
    assert "renamed: the same values now come as choices[].message.reasoning" in gate.regressions[0].line()


def with_message_field(name: str) -> Deviation:
    def response(path: str, body: dict, resp: dict) -> dict:
        if path == "/v1/chat/completions":
            for choice in resp.get("choices", []):
                choice["message"][name] = "I thought about it."
        return resp

    return Deviation(response=response)


def run_suite(pytester: pytest.Pytester, deviation: Deviation, out: str) -> Path:
    with FakeServer(deviation) as server:
        pytester.runpytest("conformance", "-k", "chat.fields or stream.sse-framing", f"--infer-endpoint={server.base_url}", f"--infer-report-dir={out}", "-p", "no:cacheprovider")
    return pytester.path / out / "results.json"


def test_a_real_session_records_shapes_and_the_cli_gate_names_a_renamed_field(pytester: pytest.Pytester, capsys: pytest.CaptureFixture):
    shutil.copytree(SUITE, pytester.path / "conformance", ignore=shutil.ignore_patterns("__pycache__"))
    before = run_suite(pytester, with_message_field("reasoning_content"), "old")
    after = run_suite(pytester, with_message_field("reasoning"), "new")
    recorded = json.loads(before.read_text())["conformance"]
    endpoints = next(iter(recorded.values()))
    assert "choices[].message.reasoning_content" in endpoints[CHAT] and "[DONE]" in endpoints[f"{CHAT} stream"]
    assert cli(["compare", str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert f"[api] {CHAT}: choices[].message.reasoning_content: choices[].message.reasoning_content -> choices[].message.reasoning" in out

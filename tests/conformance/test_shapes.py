"""API drift: the shape of every answer is recorded, and the gate names a field removed, renamed or retyped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from results_factory import session

from pytest_infer.cli import main as cli
from pytest_infer.conformance.table import ShapeTable, digest, drift, flatten, json_type
from pytest_infer.gating.compare import compare
from pytest_infer.testing.fakeserver import Deviation, FakeServer

SUITE = Path(__file__).resolve().parents[2] / "suites" / "conformance"
CHAT = "POST /v1/chat/completions"


def answer(**message) -> dict:
    return {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "logprobs": None}],
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
    assert (
        paths["choices"] == "array"
        and paths["choices[]"] == "object"
        and paths["choices[].message.content"] == "string"
    )
    assert (
        paths["choices[].message.tool_calls"] == "empty-array"
        and paths["choices[].logprobs"] == "null"
    )
    assert shapes(answer(content="hi"), answer(content=None))["choices[].message.content"][
        "types"
    ] == [
        "string",
        "null",
    ]


def whole(findings) -> list[tuple]:
    return sorted(
        (f.kind, f.area, f.pair, f.subject, f.before, f.after, f.detail) for f in findings
    )


def test_a_renamed_field_is_a_regression_naming_both_names():
    found = drift(
        CHAT,
        shapes(answer(content="a", reasoning_content="thought")),
        shapes(answer(content="a", reasoning="thought")),
        "v1 -> v2",
    )
    old, new = "choices[].message.reasoning_content", "choices[].message.reasoning"
    assert whole(found) == [
        (
            "regression",
            "api",
            "v1 -> v2",
            f"{CHAT}: {old}",
            old,
            new,
            f"renamed: the same values now come as {new}",
        )
    ]


def test_a_new_name_with_other_values_or_under_another_parent_is_no_rename():
    other_values = drift(
        CHAT,
        shapes(answer(content="a", reasoning_content="one")),
        shapes(answer(content="a", reasoning="two")),
        "p",
    )
    assert kinds(other_values) == [
        ("change", "choices[].message.reasoning", "added"),
        ("regression", "choices[].message.reasoning_content", "removed"),
    ]
    moved = drift(
        CHAT,
        shapes(answer(content="a", reasoning_content="x")),
        shapes({**answer(content="a"), "reasoning": "x"}),
        "p",
    )
    assert kinds(moved) == [
        ("change", "reasoning", "added"),
        ("regression", "choices[].message.reasoning_content", "removed"),
    ]
    twice = drift(
        CHAT, shapes(answer(content="a", r1="x", r2="x")), shapes(answer(content="a", n1="x")), "p"
    )
    assert sorted(k[2] for k in kinds(twice)) == [
        "removed",
        "renamed",
    ]  # one new name takes one old name


def test_removed_retyped_added_and_widened_fields():
    before = shapes(
        answer(content="a", refusal=None), {**answer(content="b"), "created": 1700000000}
    )
    after = shapes(
        {**answer(content="a"), "created": "2024-01-01", "system_fingerprint": "fp"},
        answer(content=None),
    )
    assert whole(drift(CHAT, before, after, "p")) == [
        ("change", "api", "p", f"{CHAT}: system_fingerprint", "absent", "string", "added"),
        # now also null: a client reading it as a string meets a type it never saw there
        (
            "regression",
            "api",
            "p",
            f"{CHAT}: choices[].message.content",
            "string",
            "null|string",
            "retyped",
        ),
        (
            "regression",
            "api",
            "p",
            f"{CHAT}: choices[].message.refusal",
            "null",
            "absent",
            (
                "removed: the baseline served it (always empty: a client reading it by key breaks, one reading a value"
                " loses none)"
            ),
        ),
        (
            "regression",
            "api",
            "p",
            f"{CHAT}: created",
            "integer",
            "string",
            "retyped; the reference requires it in every answer",
        ),
    ]
    narrowed = drift(
        CHAT, after, before, "p"
    )  # null|string -> string: every type now seen was seen before
    assert ("change", "types seen narrowed: every type now seen was seen before") in [
        (f.kind, f.detail) for f in narrowed if f.subject.endswith("content")
    ]
    with_value = drift(
        CHAT, shapes(answer(content="a", refusal="no")), shapes(answer(content="a")), "p"
    )
    assert whole(with_value)[0][-1] == "removed: the baseline served it"


def test_types_and_values_are_read_from_a_results_file_that_lacks_them():
    before = {"a": {"types": ["string"]}, "b": {}}
    after = {"c": {"types": ["string"], "values": ["x"]}}
    assert kinds(drift(CHAT, before, after, "p")) == [
        ("change", "c", "added"),
        ("regression", "a", "removed"),
        ("regression", "b", "removed"),
    ]


def test_json_types_and_digests():
    assert [json_type(v) for v in (None, True, 1, 1.5, "s", [1], [], {})] == [
        "null",
        "boolean",
        "integer",
        "number",
        "string",
        "array",
        "empty-array",
        "object",
    ]
    assert (
        digest("x") == digest("x") != digest("y")
        and len(digest({"a": 1})) == 12
        and digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1})
    )


def test_parts_of_one_session_merge_into_one_shape_and_keep_at_most_eight_values():
    one, two = ShapeTable(), ShapeTable()
    for i in range(6):
        one.record("t", CHAT, {"id": f"a{i}", "n": 1})
        two.record("t", CHAT, {"id": f"b{i}", "n": None})
    two.record("u", CHAT, {"id": "u"})
    one.merge(two)
    data = one.to_json()
    assert (
        data["t"][CHAT]["n"]["types"] == ["integer", "null"]
        and len(data["t"][CHAT]["id"]["values"]) == 8
    )
    assert data["t"][CHAT]["id"]["values"][:6] == [digest(f"a{i}") for i in range(6)]
    assert data["u"][CHAT]["id"] == {"types": ["string"], "values": [digest("u")]}
    (section,) = one.sections()
    assert section.rows[CHAT]["t"].text == "2 fields" and section.rows[CHAT]["t"].detail == "id, n"
    assert ShapeTable().sections() == []


def test_the_gate_fails_on_two_result_files_differing_only_in_a_renamed_field():
    baseline, candidate = session("0.31.0"), session("0.32.0")
    baseline.table("conformance").record(
        "vllm", CHAT, answer(content="a", reasoning_content="thought")
    )
    candidate.table("conformance").record("vllm", CHAT, answer(content="a", reasoning="thought"))
    gate = compare(baseline, candidate)
    assert gate.failed and [(f.area, f.subject) for f in gate.regressions] == [
        ("api", f"{CHAT}: choices[].message.reasoning_content")
    ]
    assert (
        "renamed: the same values now come as choices[].message.reasoning"
        in gate.regressions[0].line()
    )


def test_a_request_field_the_candidate_stops_applying_is_a_regression_and_the_reverse_an_improvement():
    baseline, candidate = session("0.31.0"), session("0.32.0")
    baseline.table("conformance").record_fields(
        "vllm",
        "POST /v1/chat/completions",
        {"top_p": "honoured", "n": "ignored", "logprobs": "refused"},
    )
    candidate.table("conformance").record_fields(
        "vllm",
        "POST /v1/chat/completions",
        {"top_p": "ignored", "n": "honoured", "logprobs": "error"},
    )
    gate = compare(baseline, candidate)
    found = sorted((f.kind, f.subject, f.before, f.after) for f in gate.findings if f.area == "api")
    assert found == [
        ("change", "request POST /v1/chat/completions: logprobs", "refused", "error"),
        ("improvement", "request POST /v1/chat/completions: n", "ignored", "honoured"),
        ("regression", "request POST /v1/chat/completions: top_p", "honoured", "ignored"),
    ]
    merged = ShapeTable()
    merged.merge(candidate.table("conformance"))
    (section,) = merged.sections()
    assert (
        section.rows["request POST /v1/chat/completions"]["vllm"].text
        == "1 of 3 applied; not: logprobs, top_p"
    )


def with_message_field(name: str) -> Deviation:
    def response(path: str, body: dict, resp: dict) -> dict:
        if path == "/v1/chat/completions":
            for choice in resp.get("choices", []):
                choice["message"][name] = "I thought about it."
        return resp

    return Deviation(response=response)


def run_suite(pytester: pytest.Pytester, deviation: Deviation, out: str) -> Path:
    with FakeServer(deviation) as server:
        pytester.runpytest(
            "conformance",
            "-k",
            "chat.fields or stream.sse-framing",
            f"--infer-endpoint={server.base_url}",
            f"--infer-report-dir={out}",
            "-p",
            "no:cacheprovider",
        )
    return pytester.path / out / "results.json"


def test_a_real_session_records_shapes_and_the_cli_gate_names_a_renamed_field(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture
):
    shutil.copytree(
        SUITE, pytester.path / "conformance", ignore=shutil.ignore_patterns("__pycache__")
    )
    before = run_suite(pytester, with_message_field("reasoning_content"), "old")
    after = run_suite(pytester, with_message_field("reasoning"), "new")
    recorded = json.loads(before.read_text())["conformance"]
    endpoints = next(iter(recorded.values()))
    assert (
        "choices[].message.reasoning_content" in endpoints[CHAT]
        and "[DONE]" in endpoints[f"{CHAT} stream"]
    )
    assert cli(["compare", str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert (
        f"[api] {CHAT}: choices[].message.reasoning_content: choices[].message.reasoning_content ->"
        " choices[].message.reasoning" in out
    )


def test_request_field_drift_compares_fields_both_runs_probed_and_says_which_pair_and_how():
    from pytest_infer.conformance.table import field_drift

    before = {
        "logprobs": {"status": "honoured"},
        "n": {"status": "honoured"},
        "top_p": {"status": "honoured"},
    }
    after = {
        "logprobs": {"status": "honoured"},
        "seed": {"status": "ignored"},
        "top_p": {"status": "refused"},
    }
    (finding,) = field_drift("request POST /v1/chat/completions", before, after, "a -> b")
    assert (finding.kind, finding.pair, finding.subject) == (
        "regression",
        "a -> b",
        "request POST /v1/chat/completions: top_p",
    )
    assert finding.detail == "request field top_p: honoured -> refused"


def test_answers_of_one_resource_are_one_endpoint_also_in_an_older_results_file():
    table = ShapeTable()
    table.record("t", "GET /v1/responses/resp_1", {"id": "resp_1", "status": "completed"})
    table.record("t", "POST /v1/responses/resp_2/cancel", {"id": "resp_2", "status": "cancelled"})
    assert sorted(table.counts["t"]) == ["GET /v1/responses/{id}", "POST /v1/responses/{id}/cancel"]
    older = ShapeTable.from_json(
        {
            "t": {
                "GET /v1/responses/resp_3": {"id": {"types": ["string"]}},
                "GET /v1/responses/resp_4": {"usage": {"types": ["object"]}},
            }
        }
    )
    assert older.counts == {
        "t": {
            "GET /v1/responses/{id}": {
                "id": {"types": ["string"], "values": []},
                "usage": {"types": ["object"], "values": []},
            }
        }
    }

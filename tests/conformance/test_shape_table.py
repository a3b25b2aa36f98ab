"""The shape table's edges that the drift tests leave open: deep parents, value caps, merge order, the report rows."""

from __future__ import annotations

import pytest

from pytest_infer.conformance.table import ShapeTable, digest, drift
from pytest_infer.table import Pairing, TargetTable

from .test_shapes import CHAT, kinds, shapes

EMBED = "POST /v1/embeddings"


def test_a_same_valued_field_under_another_parent_two_levels_deep_is_no_rename():
    """``a.b.x`` and ``a.c.y`` share the grandparent ``a`` only: their parents ``a.b`` and ``a.c`` differ."""
    before = shapes({"a": {"b": {"x": "v"}, "c": {}}})
    after = shapes({"a": {"b": {}, "c": {"y": "v"}}})
    assert kinds(drift(CHAT, before, after, "p")) == [
        ("change", "a.c.y", "added"),
        ("regression", "a.b.x", "removed"),
    ]


def test_object_and_array_fields_keep_no_value_digests():
    seen = shapes({"choices": [{"message": {"content": "hi"}}], "usage": {"total_tokens": 5}})
    assert [seen[p]["values"] for p in ("choices", "choices[]", "choices[].message", "usage")] == [
        [],
        [],
        [],
        [],
    ]
    assert seen["choices[].message.content"]["values"] == [digest("hi")] and seen[
        "usage.total_tokens"
    ]["values"] == [digest(5)]


def test_recording_keeps_the_first_eight_values_of_a_field():
    seen = shapes(*({"id": f"a{i}"} for i in range(10)))
    assert seen["id"]["values"] == [digest(f"a{i}") for i in range(8)]


def test_merging_into_a_field_that_holds_eight_values_adds_none():
    full, more = ShapeTable(), ShapeTable()
    for i in range(8):
        full.record("t", CHAT, {"id": f"a{i}"})
    more.record("t", CHAT, {"id": "b"})
    full.merge(more)
    assert full.counts["t"][CHAT]["id"]["values"] == [digest(f"a{i}") for i in range(8)]


def test_a_results_file_without_types_or_values_reads_them_as_empty():
    table = ShapeTable.from_json({"t": {CHAT: {"id": {}}}})
    assert table.counts == {"t": {CHAT: {"id": {"types": [], "values": []}}}}


def test_request_fields_recorded_before_the_answers_hide_neither_from_a_merge_nor_from_the_report():
    part = ShapeTable()
    part.record_fields("t", CHAT, {"top_p": "honoured"})
    part.record("t", CHAT, {"id": "x"})
    merged = ShapeTable()
    merged.merge(part)
    assert list(merged.counts["t"]) == [f"request {CHAT}", CHAT]
    (section,) = merged.sections()
    assert {row: cells["t"].text for row, cells in section.rows.items()} == {
        CHAT: "1 fields",
        f"request {CHAT}": "1 of 1 applied",
    }


def test_the_report_section_is_titled_and_a_request_row_names_each_field_s_status():
    table = ShapeTable()
    table.record_fields("t", CHAT, {"top_p": "honoured", "n": "honoured"})
    table.record_fields("t", EMBED, {"dimensions": "refused", "user": "honoured"})
    (section,) = table.sections()
    assert (section.title, section.heading) == ("API shape: fields seen per endpoint", "endpoint")
    every, some = section.rows[f"request {CHAT}"]["t"], section.rows[f"request {EMBED}"]["t"]
    assert (every.text, every.detail) == ("2 of 2 applied", "n: honoured, top_p: honoured")
    assert (some.text, some.detail) == (
        "1 of 2 applied; not: dimensions",
        "dimensions: refused, user: honoured",
    )


def test_shapes_are_compared_only_with_a_shape_table():
    """A baseline of another kind (here the same data, untyped) says nothing about the API's shape."""
    candidate = ShapeTable({"c": {CHAT: shapes({"id": "x"})}})
    other = TargetTable({"b": {CHAT: shapes({"id": "x", "created": 1})}})
    assert candidate.compare(other, Pairing("b", "c", "b -> c")) == []


def test_a_target_or_an_endpoint_only_one_run_has_gives_no_finding_and_a_finding_names_its_pair():
    baseline = ShapeTable(
        {"b": {CHAT: shapes({"id": "x", "created": 1}), EMBED: shapes({"object": "list"})}}
    )
    candidate = ShapeTable({"c": {CHAT: shapes({"id": "x"})}})
    assert candidate.compare(baseline, Pairing("elsewhere", "c", "elsewhere -> c")) == []
    assert candidate.compare(baseline, Pairing("b", "elsewhere", "b -> elsewhere")) == []
    (finding,) = candidate.compare(baseline, Pairing("b", "c", "b -> c"))
    assert (finding.kind, finding.pair, finding.subject, finding.after) == (
        "regression",
        "b -> c",
        f"{CHAT}: created",
        "absent",
    )


def test_a_removed_object_is_reported_once_not_with_each_of_its_fields():
    before = shapes({"id": "x", "usage": {"prompt_tokens": 3, "details": {"cached": 0}}})
    assert kinds(drift(CHAT, before, shapes({"id": "x"}), "p")) == [
        ("regression", "usage", "removed")
    ]


def test_an_array_seen_only_empty_neither_loses_nor_gains_its_items_fields_nor_changes_type():
    items, empty = (
        shapes({"choices": [{"index": 0, "message": {"content": "a"}}]}),
        shapes({"choices": []}),
    )
    assert drift(CHAT, items, empty, "p") == [] and drift(CHAT, empty, items, "p") == []


def test_an_added_field_whose_entry_lacks_values_is_no_rename():
    before, after = {"a": {"types": ["string"], "values": ["x"]}}, {"c": {"types": ["string"]}}
    assert kinds(drift(CHAT, before, after, "p")) == [
        ("change", "c", "added"),
        ("regression", "a", "removed"),
    ]


def test_a_field_seen_only_as_an_empty_array_and_as_null_is_always_empty():
    """Both empty kinds at once are still never a value: its removal breaks key readers only."""
    removed = drift(CHAT, shapes({"refusal": None}, {"refusal": []}), shapes({}), "p")
    assert [f.detail for f in removed] == [
        "removed: the baseline served it (always empty: a client reading it by key breaks, one reading a value loses"
        " none)"
    ]


def test_a_results_file_whose_table_is_not_an_object_says_what_it_is():
    with pytest.raises(ValueError, match=r"^the shape table is a list, not an object$"):
        ShapeTable.from_json([])


def test_a_merged_table_owns_its_request_field_statuses():
    """Merging copies what the other table recorded: changing one results file later does not change the other."""
    source, merged = ShapeTable(), ShapeTable()
    source.record_fields("t", CHAT, {"seed": "honoured"})
    merged.merge(source)
    source.counts["t"]["request " + CHAT]["seed"]["status"] = "ignored"
    assert merged.counts["t"]["request " + CHAT] == {"seed": {"status": "honoured"}}

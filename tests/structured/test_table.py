"""The structured suite's table: counting, merging, the rows every report draws, and a keyword's one word."""

from __future__ import annotations

from pytest_infer.structured.table import StructuredTable, keyword_status


def test_a_keyword_status_is_its_worst_class_then_any_other_then_none():
    assert keyword_status({"valid": 3, "truncated": 1, "invalid": 0}) == "truncated"
    assert keyword_status({"valid": 3, "invalid": 1, "error": 2}) == "invalid"
    assert keyword_status({"rejected": 1, "valid": 1}) == "rejected"
    assert (
        keyword_status({"zeta": 1, "alpha": 2, "valid": 0}) == "alpha"
    )  # a class this version does not know, by name
    assert keyword_status({"valid": 0}) == keyword_status({}) == "none"


def test_counts_merge_per_target_keyword_and_class_and_become_report_rows():
    table, other = StructuredTable(), StructuredTable()
    table.count("vllm", "maxLength", "valid", 3)
    table.count("vllm", "maxLength", "invalid")
    other.count("vllm", "maxLength", "invalid", 2)
    other.count("sglang", "enum", "valid")
    table.merge(other)
    assert table.to_json() == {
        "vllm": {"maxLength": {"valid": 3, "invalid": 3}},
        "sglang": {"enum": {"valid": 1}},
    }
    assert table.by_keyword() == {
        "enum": {"sglang": {"valid": 1}},
        "maxLength": {"vllm": {"valid": 3, "invalid": 3}},
    }
    (section,) = table.sections()
    assert (section.title, section.heading) == (
        "Structured output: keyword x outcome",
        "structured keyword",
    )
    cell = section.rows["maxLength"]["vllm"]
    assert (cell.text, cell.css, cell.detail) == ("invalid", "invalid", "3 valid, 3 invalid")
    assert list(section.rows) == ["enum", "maxLength"] and StructuredTable().sections() == []
    assert StructuredTable().figures(str) == [("Keyword matrix", None)]

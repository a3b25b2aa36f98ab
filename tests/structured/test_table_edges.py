"""What mutation testing left untested in structured/table.py: the share tests at their edges (one answer, p equal
to alpha, a share that falls), keywords one side lacks, and the keyword matrix's figure."""

from __future__ import annotations

import pytest

from pytest_infer.structured.table import StructuredTable, keyword_status, rise_p_value
from pytest_infer.table import Pairing, Table

PAIRING = Pairing("old", "new", "old -> new")


def tables(
    old: dict[str, dict[str, int]], new: dict[str, dict[str, int]]
) -> tuple[StructuredTable, StructuredTable]:
    """A baseline and a candidate table of one target each, ``{keyword: {class: count}}``."""
    return StructuredTable({"old": old}), StructuredTable({"new": new})


def finding(old: dict[str, int], new: dict[str, int], alpha: float = 0.05):
    baseline, candidate = tables({"enum": old}, {"enum": new})
    (f,) = candidate.compare(baseline, Pairing("old", "new", "old -> new", alpha=alpha))
    return (f.kind, f.before, f.after, f.detail)


def test_a_class_this_version_does_not_know_names_the_status_from_one_answer():
    assert keyword_status({"zeta": 1}) == "zeta"
    assert keyword_status({"zeta": 2, "alpha": 1}) == "alpha"


def test_a_side_without_answers_gives_no_evidence_of_a_rise():
    assert rise_p_value((0, 0), (3, 5)) == rise_p_value((3, 5), (0, 0)) == 1.0


def test_a_side_of_a_single_answer_is_still_tested():
    assert finding({"valid": 1}, {"invalid": 40}) == (
        "regression",
        "valid",
        "invalid",
        "error/invalid 0/1 -> 40/40 (one-sided Fisher p=0.0244); 1 valid -> 40 invalid",
    )
    assert finding({"valid": 40}, {"invalid": 1}) == (
        "regression",
        "valid",
        "invalid",
        "error/invalid 0/40 -> 1/1 (one-sided Fisher p=0.0244); 40 valid -> 1 invalid",
    )
    assert finding({"invalid": 40}, {"valid": 1})[0] == "improvement"


def test_the_p_value_weighs_the_baseline_answers_that_were_already_wrong():
    assert finding({"valid": 38, "invalid": 2}, {"valid": 30, "invalid": 10}) == (
        "regression",
        "invalid",
        "invalid",
        "error/invalid 2/40 -> 10/40 (one-sided Fisher p=0.0126); 38 valid, 2 invalid -> 30 valid, 10 invalid",
    )


def test_a_share_of_wrong_answers_that_falls_but_stays_above_zero_is_an_improvement():
    assert finding({"invalid": 20, "valid": 20}, {"invalid": 2, "valid": 38}) == (
        "improvement",
        "invalid",
        "invalid",
        "error/invalid 20/40 -> 2/40 (one-sided Fisher p=4.17e-06); 20 invalid, 20 valid -> 2 invalid, 38 valid",
    )


def test_a_p_value_equal_to_alpha_is_not_significant():
    p = rise_p_value((0, 40), (10, 40))
    assert finding({"valid": 40}, {"valid": 30, "invalid": 10}, alpha=p)[0] == "noise"


def test_noise_names_every_share_that_moved_below_significance():
    assert finding({"valid": 40}, {"valid": 38, "invalid": 1, "rejected": 1}) == (
        "noise",
        "valid",
        "invalid",
        (
            "error/invalid 0/40 -> 1/40 (one-sided Fisher p=0.5); rejected 0/40 -> 1/40 (one-sided Fisher p=0.5); "
            "valid 40/40 -> 38/40 (one-sided Fisher p=0.247): below significance (alpha 0.05)"
        ),
    )


def test_a_keyword_only_one_side_counted_is_skipped_and_the_rest_still_compared():
    """Sorted, ``additionalProperties`` (baseline only) and ``allOf`` (candidate only) come before ``pattern``."""
    baseline, candidate = tables(
        {"additionalProperties": {"valid": 40}, "pattern": {"valid": 40}},
        {"allOf": {"invalid": 40}, "pattern": {"valid": 30, "invalid": 10}},
    )
    assert [(f.kind, f.subject) for f in candidate.compare(baseline, PAIRING)] == [
        ("regression", "pattern")
    ]


def test_a_baseline_that_is_not_a_structured_table_gives_nothing_to_compare():
    _, candidate = tables({}, {"enum": {"invalid": 40}})
    assert candidate.compare(Table(), PAIRING) == []


def test_the_keyword_matrix_is_drawn_with_each_target_labelled():
    table, _ = tables({"maxLength": {"valid": 3, "invalid": 1}}, {})
    ((title, svg),) = table.figures(lambda target: f"label-of-{target}")
    assert title == "Keyword matrix" and svg.startswith("<svg")
    assert "label-of-old" in svg and "maxLength" in svg


def cause(row: str, message: str):
    c = StructuredTable().cause(row, message)
    return c and (c.key, c.title, c.place, c.severity)


def test_a_cause_is_the_test_and_case_without_the_request_path():
    assert cause(
        "test_corpus[response_format-stream-escapes]", "Failed: escapes broke the schema"
    ) == (
        "test_corpus[escapes]",
        "escapes broke the schema",
        "response_format-stream",
        "critical",
    )
    assert cause("test_corpus[response_format-escapes]", "Failed: boom") == (
        "test_corpus[escapes]",
        "test_corpus[escapes]: boom",
        "response_format",
        "major",
    )
    assert cause("test_corpus[native-Xcase]", "boom")[:3] == (
        "test_corpus[Xcase]",
        "test_corpus[Xcase]: boom",
        "native",
    )


def test_a_row_without_a_request_path_keeps_its_whole_case_and_no_place():
    assert cause("test_survival[abc-def]", "Failed: boom") == (
        "test_survival[abc-def]",
        "test_survival[abc-def]: boom",
        "",
        "major",
    )
    assert cause("test_support", "boom") is None


def test_a_row_that_is_only_a_request_path_is_the_bare_test():
    assert cause("test_sweep[native]", "\n \nFailed: zzz broke the schema") == (
        "test_sweep",
        "test_sweep: zzz broke the schema",
        "native",
        "critical",
    )
    assert (
        cause("test_sweep[native-zzz]", "Failed: boom")[1] == "test_sweep[zzz]: boom"
    )  # the case is not in the message


def test_a_failure_without_a_message_is_titled_by_its_key():
    assert cause("test_corpus[native-escapes]", "") == (
        "test_corpus[escapes]",
        "test_corpus[escapes]",
        "native",
        "major",
    )
    assert cause("test_corpus[native-escapes]", " \n ")[1] == "test_corpus[escapes]"


def test_severity_reads_the_failure_not_the_request_it_quotes():
    message = 'Failed: HTTP 500\n  request: {"note": "a violation"}'
    assert cause("test_corpus[native-escapes]", message)[3] == "major"
    assert (
        cause(
            "test_corpus[native-escapes]", "Failed: the grammar let through a quote\n  request: {}"
        )[3]
        == "critical"
    )


def test_the_share_test_is_fishers_exact_one_sided_test_without_scipy():
    """The gate's share test is scipy's ``fisher_exact(alternative="greater")`` in exact integers: the same p on a
    grid of tables, small and large, so a plain install gates structured output as one with scipy does."""
    from scipy.stats import fisher_exact

    for bn, an in ((5, 7), (40, 40), (75, 300)):
        for b in range(0, bn + 1, max(1, bn // 6)):
            for a in range(0, an + 1, max(1, an // 6)):
                want = float(fisher_exact([[a, an - a], [b, bn - b]], alternative="greater")[1])
                assert rise_p_value((b, bn), (a, an)) == pytest.approx(want, rel=1e-9), (
                    b,
                    bn,
                    a,
                    an,
                )

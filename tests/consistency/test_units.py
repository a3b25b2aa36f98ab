"""The consistency suite's judgement without a server: how two answers to one request compare (vLLM's
check_logprobs_close rule), what overlaps, and the table's rows, merge, causes and gate findings."""

from __future__ import annotations

import pytest

from pytest_infer.consistency import Answer, ConsistencyTable, Tally, compare
from pytest_infer.table import Pairing


def answer(
    tokens: list[str], tops: list[list[str]] | None = None, started: float = 0.0, ended: float = 1.0
) -> Answer:
    """A chat answer of ``tokens`` whose logprobs list ``tops`` per token (None: no logprobs at all)."""
    logprobs = (
        None
        if tops is None
        else {"content": [{"token": t, "logprob": -0.1, "top_logprobs": [{"token": x} for x in top]}
                          for t, top in zip(tokens, tops)]}
    )  # fmt: skip
    data = {
        "choices": [
            {
                "message": {"content": "".join(tokens)},
                "logprobs": logprobs,
                "finish_reason": "length",
            }
        ]
    }
    return Answer({}, 200, data, None, started, ended, "curl")


def test_identical_answers_are_identical():
    assert (
        compare(answer(["a", "b"], [["a"], ["b"]]), answer(["a", "b"], [["a"], ["b"]])).kind
        == "identical"
    )


def test_a_flip_to_a_token_whose_alternative_was_the_alone_one_is_a_near_tie():
    found = compare(
        answer(["a", "b", "c"], [["a"], ["b", "x"], ["c"]]),
        answer(["a", "x", "c"], [["a"], ["x", "b"], ["c"]]),
    )
    assert (found.kind, found.position, found.alone, found.batched) == ("near-tie", 1, "b", "x")
    assert found.batched_in_alone_top is True
    assert "among the batched answer's top-2" in found.describe()


def test_a_token_the_batched_answer_did_not_rank_is_outside_the_top_k():
    found = compare(answer(["a", "b"], [["a"], ["b"]]), answer(["a", "x"], [["a"], ["x", "y"]]))
    assert (found.kind, found.position) == ("outside-top-k", 1)
    assert "not among" in found.describe()


def test_without_logprobs_a_change_is_unclassified_at_its_character():
    found = compare(answer(["ab", "cd"]), answer(["ab", "xd"]))
    assert (found.kind, found.position, found.unit) == ("unclassified", 2, "character")


def test_a_batched_answer_that_ends_early_is_unclassified():
    found = compare(answer(["a", "b"], [["a"], ["b"]]), answer(["a"], [["a"]]))
    assert (found.kind, found.position, found.batched) == ("unclassified", 1, "(end)")


def test_overlap_counts_only_answers_open_at_the_same_time():
    mine = answer(["a"], started=1.0, ended=2.0)
    others = [mine, answer(["b"], started=0.0, ended=1.5), answer(["c"], started=2.5, ended=3.0)]
    assert mine.overlap(others) == 1


def _row(identical: int, outside: int, params: dict[str, str]) -> dict:
    tally = Tally(prompts=4, in_flight=8, overlapped=4, identical=identical, outside=outside)
    return {
        "batch": {**tally.to_json(), "divergences": []},
        "params": {c: {"outcome": o, "message": f"{c}: {o}"} for c, o in params.items()},
    }


def test_the_gate_names_fewer_identical_answers_and_a_parameter_check_that_broke():
    before = ConsistencyTable({"old": _row(4, 0, {"seeds": "passed", "stop": "passed"})})
    after = ConsistencyTable({"new": _row(2, 2, {"seeds": "failed", "stop": "passed"})})
    found = after.compare(before, Pairing("old", "new", "v1 -> v2"))
    assert [(f.kind, f.subject, f.before, f.after) for f in found] == [
        ("regression", "greedy answers identical alone and in a batch", "100%", "50%"),
        ("regression", "parameters in a batch: seeds", "kept", "not kept"),
    ]
    assert before.compare(before, Pairing("old", "old", "same")) == []


def test_near_tie_flips_alone_are_a_change_not_a_regression():
    before = ConsistencyTable({"old": _row(4, 0, {})})
    after = ConsistencyTable({"new": _row(3, 0, {})})
    assert [f.kind for f in after.compare(before, Pairing("old", "new", "v1 -> v2"))] == ["change"]


def test_rows_merge_and_render():
    table = ConsistencyTable({"t": _row(3, 1, {"seeds": "passed"})})
    table.merge(
        ConsistencyTable(
            {"t": {"batch": {}, "params": {"n": {"outcome": "failed", "message": "n: x"}}}}
        )
    )
    assert (
        sorted(table.counts["t"]["params"]) == ["n", "seeds"]
        and table.counts["t"]["batch"]["identical"] == 3
    )
    sections = {s.heading: s.rows for s in table.sections()}
    assert sections["alone vs batch"]["identical answers"]["t"].text == "3/4"
    assert sections["alone vs batch"]["divergences outside the top-k"]["t"].css == "failed"
    assert sections["parameter"]["n"]["t"].css == "failed"


def test_failures_fold_by_cause():
    table = ConsistencyTable()
    beyond = table.cause("r", "2 of 4 greedy answers changed in a batch beyond a near-tie: ...")
    swapped = table.cause(
        "r", "seed: 2 of 2 requests answered differently in the batch than alone (...)"
    )
    assert beyond is not None and beyond.severity == "critical"
    assert swapped is not None and swapped.place == "seed" and swapped.key != beyond.key


def test_numerics_agree_up_to_the_first_disagreement_and_judge_it_by_both_top_ks():
    from pytest_infer.consistency.reference import Step, agreement

    reference = [Step("a", -0.1, ("a", "b")), Step("b", -0.2, ("b", "c")), Step("c", -0.3, ("c",))]
    near = agreement(
        [Step("a", -0.15, ("a",)), Step("c", -0.4, ("c", "b")), Step("x", -1, ())], reference
    )
    assert (near.compared, near.agreed, near.max_diff) == (2, 1, pytest.approx(0.05))
    assert near.disagreement["position"] == 1 and near.near_tie
    far = agreement([Step("a", -0.1, ("a",)), Step("z", -0.4, ("z", "y"))], reference)
    assert far.disagreement["server_in_reference_top"] is False and not far.near_tie
    same = agreement(reference, reference)
    assert (same.agreed, same.max_diff, same.disagreement) == (3, 0.0, {})


def _numerics(agreed: int, diff: float) -> dict:
    return {
        "compared": 64,
        "agreed": agreed,
        "max_logprob_diff": diff,
        "near_ties": 0,
        "outside_top_k": 0,
    }


def test_the_gate_names_numerics_that_moved():
    """An injected shift past the limit (0.7 nats, as perturb_logprobs makes it) and a drop in agreement each gate;
    the same numbers, or a shift within the limit, do not."""
    before = ConsistencyTable({"old": {"batch": {}, "params": {}, "numerics": _numerics(64, 0.0)}})
    pairing = Pairing("old", "new", "v1 -> v2")
    for numerics, gated in (
        (_numerics(64, 0.7), True),
        (_numerics(63, 0.0), True),
        (_numerics(64, 0.1), False),
    ):
        after = ConsistencyTable({"new": {"batch": {}, "params": {}, "numerics": numerics}})
        found = after.compare(before, pairing)
        assert [(f.kind, f.subject) for f in found] == (
            [("regression", "numerics against the reference")] if gated else []
        ), numerics
    moved = ConsistencyTable({"new": {"batch": {}, "params": {}, "numerics": _numerics(64, 0.7)}})
    assert moved.compare(before, pairing)[0].after == "64/64 agree, max diff 0.7000"


def _under_load(part: str, broken: list[str]) -> dict:
    return {
        part: {
            "cases": 13,
            "in_flight": 8,
            "right_alone": 12,
            "right_in_batch": 12 - len(broken),
            "held_to": 12,
            "overlapped": 13,
            "broken": broken,
        }
    }


@pytest.mark.parametrize(
    ("part", "subject", "right"),
    [
        ("structured", "structured answers valid alone and in a batch", "valid"),
        ("tools", "tool calls parsed as scripted alone and in a batch", "parsed as scripted"),
    ],
)
def test_the_gate_names_a_case_right_alone_that_broke_in_a_batch_and_the_table_shows_it(
    part: str, subject: str, right: str
):
    before = ConsistencyTable({"old": _under_load(part, [])})
    after = ConsistencyTable({"new": _under_load(part, ["type-list", "nullable-union"])})
    (finding,) = after.compare(before, Pairing("old", "new", "v1 -> v2"))
    assert (finding.kind, finding.subject) == ("regression", subject)
    assert finding.detail == f"{right} alone, not in a batch of 8: nullable-union, type-list"
    assert before.compare(before, Pairing("old", "old", "same")) == []
    assert after.compare(after, Pairing("new", "new", "same")) == []  # broken alike: no new one
    (section,) = after.sections()
    broken = section.rows[f"{right} alone twice, not in the batch"]["new"]
    assert (broken.text, broken.css) == ("2/12", "failed")
    assert section.rows[f"{right} in the batch"]["new"].text == "10/13"

"""Consistency: does each request in a busy batch get the answer it gets alone, with its own parameters?

Users of every inference server report greedy answers that change with concurrency, and per-request settings (seeds,
stop strings, logit bias, grammars, logprobs) applied to the wrong request or to none. Two checks:

- Alone against in a batch: fixed prompts, greedy, a fixed ``max_tokens``, each sent alone (twice: it must be
  reproducible alone), then again while ``--consistency-in-flight`` other requests run. Where an answer changes, the
  first token where it parts is judged as vLLM's ``check_logprobs_close`` does: the token the alone answer chose is
  among the batched answer's top-k logprobs (a near-tie that flipped: reported and counted) or it is not (a different
  computation: fails). Without logprobs there a change cannot be classified: inconclusive. With
  ``--infer-deterministic`` (the engine's batch-invariant mode) every change fails, a near-tie too.
- Every request keeps its own parameters: one batch mixing requests of distinct settings, each sent alone twice as the
  control (pytest_infer/consistency/mix.py says what each check asks).
- Under load: the structured corpus's schemas, valid alone twice, must stay valid in a batch, and the tool
  parser's scripted outputs, parsed as scripted alone twice, must stay so (pytest_infer/consistency/underload.py).
"""

from __future__ import annotations

import pytest

from pytest_infer import Inconclusive, InferClient, Unsupported
from pytest_infer.consistency import (
    CHECKS,
    PROMPTS,
    Tally,
    compare,
    filler,
    greedy,
    judge_under_load,
    send,
    send_together,
)
from pytest_infer.consistency.reference import MAX_LOGPROB_DIFF, agreement, server_steps
from pytest_infer.consistency.reference import PROMPTS as NUMERICS_PROMPTS
from pytest_infer.consistency.underload import (
    STRUCTURED,
    TOOLS,
    structured_under_load,
    tools_under_load,
)
from pytest_infer.outcomes import NotExercised

pytestmark = pytest.mark.consistency

MAX_TOKENS = 16
FILLER_TOKENS = (
    4 * MAX_TOKENS
)  # the others run longer, so they are still in flight beside the measured ones


def test_greedy_answers_alone_and_in_a_batch_agree(
    infer_live_server,
    infer_endpoint,
    consistency_in_flight,
    consistency_deterministic,
    consistency_record,
    infer_record,
):
    model = infer_endpoint.model
    bodies = [greedy(model, prompt, MAX_TOKENS) for prompt in PROMPTS]
    with InferClient(infer_endpoint) as client:
        alone = [send(client, body) for body in bodies]
        again = [send(client, body) for body in bodies]
        unanswered = [a for a in alone + again if a.problem is not None]
        assert not unanswered, (
            f"a greedy request alone was not answered: {unanswered[0].problem}\nreproduce: {unanswered[0].reproducer}"
        )
        changing = [(a, b) for a, b in zip(alone, again) if a.text() != b.text()]
        if changing:
            a, b = changing[0]
            raise Inconclusive(
                f"{len(changing)} of {len(bodies)} greedy requests gave two answers alone ({a.text()!r:.120} then "
                f"{b.text()!r:.120}): not reproducible alone, so the batch cannot be held to them\n"
                f"reproduce: {a.reproducer}"
            )
        others = [filler(model, i, FILLER_TOKENS) for i in range(consistency_in_flight)]
        answers = send_together(client, bodies, others)
    batched = answers[: len(bodies)]
    unanswered = [a for a in batched if a.problem is not None]
    assert not unanswered, (
        f"a greedy request in a batch was not answered, though alone it was: {unanswered[0].problem}\n"
        f"reproduce (alone): {unanswered[0].reproducer}"
    )
    tally = Tally(in_flight=consistency_in_flight)
    judged = []
    for a, b in zip(alone, batched):
        divergence = compare(a, b)
        tally.count(divergence)
        tally.overlapped += b.overlap(answers) > 0
        judged.append((a, divergence))
    record = {
        **tally.to_json(),
        "divergences": [
            f"{a.body['messages'][0]['content']!r}: {d.describe()}"
            for a, d in judged
            if d.kind != "identical"
        ],
    }
    consistency_record["batch"] = record
    infer_record("infer_reproducer", alone[0].reproducer)
    if not tally.overlapped:
        raise NotExercised(
            f"none of the {len(bodies)} requests overlapped another in flight ({consistency_in_flight} sent beside "
            "them): the server answered them one after another, so no batch was judged"
        )
    if consistency_deterministic:  # its batch-invariant mode: any change is a broken promise
        changed = [(a, d) for a, d in judged if d.kind != "identical"]
        assert not changed, (
            f"{len(changed)} of {len(bodies)} greedy answers changed in a batch though the server runs in its "
            "batch-invariant mode (--infer-deterministic): "
            + "; ".join(f"{a.body['messages'][0]['content']!r} {d.describe()}" for a, d in changed)
            + f"\nreproduce (alone, then with {consistency_in_flight} others in flight): {changed[0][0].reproducer}"
        )
    outside = [(a, d) for a, d in judged if d.kind == "outside-top-k"]
    assert not outside, (
        f"{len(outside)} of {len(bodies)} greedy answers changed in a batch beyond a near-tie: "
        + "; ".join(f"{a.body['messages'][0]['content']!r} {d.describe()}" for a, d in outside)
        + f"\nreproduce (alone, then with {consistency_in_flight} others in flight): {outside[0][0].reproducer}"
    )
    unclassified = [(a, d) for a, d in judged if d.kind == "unclassified"]
    if unclassified:
        a, d = unclassified[0]
        raise Inconclusive(
            f"{len(unclassified)} of {len(bodies)} greedy answers changed in a batch where the answer carries no "
            f"logprobs to judge the change by: {a.body['messages'][0]['content']!r} {d.describe()}\n"
            f"reproduce: {a.reproducer}"
        )
    infer_record(
        "infer_evidence",
        f"{tally.identical} of {tally.prompts} greedy answers ({MAX_TOKENS} tokens) identical alone and with "
        f"{consistency_in_flight} others in flight ({tally.overlapped} overlapped one); near-tie flips: "
        f"{tally.near_ties}"
        + (f" (first at tokens {sorted(tally.first_divergence)})" if tally.near_ties else ""),
    )


OUTCOMES = {"inconclusive": Inconclusive, "not_exercised": NotExercised}


@pytest.mark.parametrize("check", CHECKS)
def test_each_request_keeps_its_own_parameters_in_a_batch(
    check, infer_live_server, consistency_mix, consistency_record, infer_record
):
    verdict = consistency_mix.judge(check)
    consistency_record["params"][check] = verdict._asdict()
    if verdict.outcome == "unsupported":
        raise Unsupported(check, verdict.message)
    if verdict.outcome in OUTCOMES:
        raise OUTCOMES[verdict.outcome](verdict.message)
    assert verdict.outcome == "passed", verdict.message
    infer_record("infer_evidence", verdict.message)


def test_structured_answers_alone_and_in_a_batch_agree(
    infer_live_server, infer_endpoint, consistency_in_flight, consistency_record, infer_record
):
    with InferClient(infer_endpoint) as client:
        under_load = structured_under_load(client, consistency_in_flight)
    _judge_under_load(under_load, STRUCTURED, consistency_record, "structured", infer_record)


def test_tool_calls_alone_and_in_a_batch_agree(
    infer_live_server,
    infer_endpoint,
    consistency_scripting,
    consistency_in_flight,
    consistency_record,
    infer_record,
):
    with InferClient(infer_endpoint) as client:
        under_load = tools_under_load(consistency_scripting, client, consistency_in_flight)
    _judge_under_load(under_load, TOOLS, consistency_record, "tools", infer_record)


def _judge_under_load(under_load, nouns, consistency_record, part: str, infer_record) -> None:
    consistency_record[part] = under_load.to_json()
    verdict = judge_under_load(under_load, nouns)
    if verdict.outcome in OUTCOMES:
        raise OUTCOMES[verdict.outcome](verdict.message)
    infer_record("infer_reproducer", under_load.alone[0].curl)
    assert verdict.outcome == "passed", verdict.message
    infer_record("infer_evidence", verdict.message)


def test_numerics_match_the_reference(
    infer_live_server, infer_endpoint, consistency_reference, consistency_record, infer_record
):
    """The server's greedy continuation of fixed prompts (completions route, logprobs) against the reference's, up to
    the first disagreement (check_logprobs_close): a disagreement where either token is outside the other's top-k
    fails, and so does a logprob on an agreeing token more than MAX_LOGPROB_DIFF from the reference's."""
    served, curls = [], []
    with InferClient(infer_endpoint) as client:
        for prompt in NUMERICS_PROMPTS:
            steps, why, curl = server_steps(client, prompt)
            if steps is None:
                if why.startswith("HTTP 404"):
                    raise Unsupported("completions logprobs", f"{why}\nreproduce: {curl}")
                raise NotExercised(
                    f"the completions route gave no logprobs to compare: {why}\nreproduce: {curl}"
                )
            served.append(steps)
            curls.append(curl)
    reference = consistency_reference(infer_endpoint.model)  # the model the server says it serves
    found = [agreement(steps, expected) for steps, expected in zip(served, reference)]
    compared, agreed = sum(a.compared for a in found), sum(a.agreed for a in found)
    max_diff = max(a.max_diff for a in found)
    outside = [
        (p, a, c)
        for p, a, c in zip(NUMERICS_PROMPTS, found, curls)
        if a.disagreement and not a.near_tie
    ]
    consistency_record["numerics"] = {
        "compared": compared,
        "agreed": agreed,
        "max_logprob_diff": round(max_diff, 6),
        "near_ties": sum(a.near_tie for a in found),
        "outside_top_k": len(outside),
        "disagreements": [a.disagreement for a in found if a.disagreement],
    }
    infer_record("infer_reproducer", curls[0])
    assert not outside, (
        f"{len(outside)} of {len(found)} greedy continuations part from the reference beyond a near-tie: "
        + "; ".join(f"{p!r} at token {a.disagreement['position']}: server {a.disagreement['server']!r}, reference "
                    f"{a.disagreement['reference']!r}" for p, a, _ in outside)
        + f"\nreproduce: {outside[0][2]}"
    )  # fmt: skip
    assert max_diff <= MAX_LOGPROB_DIFF, (
        f"a logprob on a token both chose differs from the reference by {max_diff:.4f} (limit {MAX_LOGPROB_DIFF}): "
        f"the server's numbers moved\nreproduce: {curls[0]}"
    )
    infer_record(
        "infer_evidence",
        f"{agreed} of {compared} greedy tokens agree with the reference (transformers, the same weights); largest "
        f"logprob difference on them {max_diff:.4f} (limit {MAX_LOGPROB_DIFF}); near-tie disagreements: "
        f"{sum(a.near_tie for a in found)}",
    )

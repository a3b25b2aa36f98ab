"""Grammar probes: per keyword, the model is pushed (logit_bias, greedy) towards exactly what the
grammar must mask; a masked token that gets through breaks the schema, whatever the model. A probe passes
only on a valid answer: one cut at the token limit has not shown the mask working."""

from __future__ import annotations

import pytest

from pytest_infer import InferClient, Unsupported
from pytest_infer.outcomes import Inconclusive
from pytest_infer.structured import AnswerClass
from pytest_infer.structured.judge import record_evidence
from pytest_infer.structured.probes import BY_ID, body, require_bias, token_ids
from pytest_infer.structured.runner import RESPONSE_FORMAT

pytestmark = pytest.mark.structured


@pytest.fixture(scope="session")
def probe_bias_applies(infer_endpoint, structured_tokenizer) -> None:
    """Once per target: the server applies logit_bias, or every probe is inconclusive."""
    with InferClient(infer_endpoint) as client:
        require_bias(client, infer_endpoint.model, structured_tokenizer)


@pytest.mark.parametrize("probe_id", list(BY_ID))
def test_grammar_masks(
    probe_id,
    probe_bias_applies,
    infer_client,
    structured_runner,
    structured_support,
    structured_tokenizer,
    infer_record,
):
    structured_support(RESPONSE_FORMAT).require_applied(
        RESPONSE_FORMAT
    )  # the probes send a strict response_format
    probe = BY_ID[probe_id]
    request = body(
        probe,
        infer_client.model,
        token_ids(infer_client, infer_client.model, probe.push, structured_tokenizer),
    )
    attempt = structured_runner.send(probe.schema, request)
    verdict = attempt.verdict
    if verdict.outcome is AnswerClass.REJECTED:
        raise Unsupported(
            f"json_schema with {probe.id}",
            f"the schema is refused, so there is nothing to mask: {verdict.message}",
        )
    if verdict.outcome.failed:
        record_evidence(infer_record, attempt)
        pytest.fail(
            f"{probe.id}: the grammar let through {probe.push!r} at {probe.where}\n{attempt.describe()}",
            pytrace=False,
        )
    if verdict.outcome is not AnswerClass.VALID:
        raise Inconclusive(
            f"{probe.id}: the answer is {verdict.signature}, not valid, so the mask at {probe.where} was not seen"
            f" working: {attempt.output!r}"
        )

"""What each check sends to a correct server, and how it ends on a server that answers nothing right: both stated here.

A check's requests are its claim (a probe that no longer carries the field it exists for tests nothing), so the routes
it calls and the top-level fields it sends are pinned below and change only by an edit of this table. On four broken
servers, every check must end without a pass: a failure by default, or the stated way of giving up (the route or
feature is unsupported, the control failed, nothing could be judged), each naming the check or what stopped it.
"""

from __future__ import annotations

import re
import sys

import pytest

from pytest_infer import conformance
from pytest_infer.outcomes import Inconclusive, NotExercised, Unsupported
from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body

from .test_mutations import CHECK_IDS

# check -> {route: the top-level request fields it sends there, over all its requests}
SENDS = {
    "chat.fields": {"POST /v1/chat/completions": "max_tokens messages model temperature"},
    "chat.finish-reason": {"POST /v1/chat/completions": "max_tokens messages model temperature"},
    "chat.json-object": {"POST /v1/chat/completions": "max_tokens messages model response_format seed temperature"},
    "chat.json-schema": {"POST /v1/chat/completions": "max_tokens messages model response_format seed temperature"},
    "chat.json-schema-missing": {"POST /v1/chat/completions": "max_tokens messages model response_format"},
    "chat.logprobs": {"POST /v1/chat/completions": "logprobs max_tokens messages model temperature top_logprobs"},
    "chat.logprobs-multibyte": {"POST /v1/chat/completions": "logprobs max_tokens messages model temperature"},
    "chat.logprobs-off": {"POST /v1/chat/completions": "logprobs max_tokens messages model temperature"},
    "chat.logprobs-without-top": {"POST /v1/chat/completions": "logprobs max_tokens messages model temperature"},
    "chat.max-completion-tokens": {
        "POST /v1/chat/completions": "max_completion_tokens max_tokens messages model temperature"
    },
    "chat.max-tokens": {"POST /v1/chat/completions": "max_tokens messages model temperature"},
    "chat.model": {"GET /v1/models": "", "POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "chat.n": {"POST /v1/chat/completions": "max_tokens messages model n seed temperature"},
    "chat.parameter-ranges": {
        "POST /v1/chat/completions": "logprobs max_tokens messages model n seed temperature top_logprobs top_p"
    },
    "chat.reasoning": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "chat.request-fields": {
        "POST /v1/chat/completions": "frequency_penalty logprobs max_completion_tokens max_tokens messages model n "
        "presence_penalty response_format temperature top_p"
    },
    "chat.seed": {"POST /v1/chat/completions": "max_tokens messages model seed temperature"},
    "chat.stop": {"POST /v1/chat/completions": "logprobs max_tokens messages model stop temperature"},
    "chat.usage": {"POST /v1/chat/completions": "max_tokens messages model temperature"},
    "chat.usage-details": {"POST /v1/chat/completions": "max_tokens messages model temperature"},
    "completions.echo": {"POST /v1/completions": "echo max_tokens model prompt temperature"},
    "completions.fields": {"POST /v1/completions": "max_tokens model prompt temperature"},
    "completions.logprobs": {"POST /v1/completions": "logprobs max_tokens model prompt temperature"},
    "completions.model": {"GET /v1/models": "", "POST /v1/completions": "max_tokens model prompt stream temperature"},
    "completions.prompt-list-n": {"POST /v1/completions": "max_tokens model n prompt seed temperature"},
    "completions.stream": {"POST /v1/completions": "max_tokens model prompt stream temperature"},
    "embeddings.base64": {"POST /v1/embeddings": "encoding_format input model"},
    "embeddings.dimensions": {"POST /v1/embeddings": "dimensions encoding_format input model"},
    "embeddings.fields": {"POST /v1/embeddings": "encoding_format input model"},
    "errors.bad-input-4xx": {"POST /v1/chat/completions": "max_tokens messages model temperature"},
    "errors.bad-input-stream": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "errors.context-overflow": {"GET /v1/models": "", "POST /v1/chat/completions": "max_tokens messages model"},
    "errors.context-overflow-stream": {
        "GET /v1/models": "",
        "POST /v1/chat/completions": "max_tokens messages model stream",
    },
    "errors.envelope": {"POST /v1/chat/completions": "max_tokens messages model"},
    "errors.envelope-types": {"POST /v1/chat/completions": "max_tokens messages model"},
    "errors.unknown-model": {"POST /v1/chat/completions": "max_tokens messages model"},
    "messages.count-tokens": {
        "POST /v1/messages": "max_tokens messages model temperature",
        "POST /v1/messages/count_tokens": "messages model",
    },
    "messages.create": {"POST /v1/messages": "max_tokens messages model temperature"},
    "messages.errors": {"POST /v1/messages": "max_tokens messages model temperature"},
    "messages.model": {"GET /v1/models": "", "POST /v1/messages": "max_tokens messages model stream temperature"},
    "messages.parameter-ranges": {"POST /v1/messages": "max_tokens messages model temperature top_k top_p"},
    "messages.required-fields": {"POST /v1/messages": "max_tokens messages model"},
    "messages.roles": {"POST /v1/messages": "max_tokens messages model"},
    "messages.stop-sequence": {"POST /v1/messages": "max_tokens messages model stop_sequences temperature"},
    "messages.stream-events": {"POST /v1/messages": "max_tokens messages model stream temperature"},
    "models.list": {"GET /v1/models": ""},
    "models.retrieve": {"GET /v1/models/fake-model": ""},
    "responses.cancel": {
        "POST /v1/responses": "background input max_output_tokens model store stream temperature",
        "POST /v1/responses/resp-<id>/cancel": "",
        "POST /v1/responses/resp_does_not_exist/cancel": "",
    },
    "responses.chain": {
        "GET /v1/responses/resp-<id>": "",
        "POST /v1/responses": "input max_output_tokens model previous_response_id store stream temperature",
    },
    "responses.create": {"POST /v1/responses": "input max_output_tokens model temperature"},
    "responses.errors": {
        "GET /v1/responses/resp_does_not_exist": "",
        "POST /v1/responses": "input max_output_tokens model stream temperature",
    },
    "responses.model": {"GET /v1/models": "", "POST /v1/responses": "input max_output_tokens model stream temperature"},
    "responses.retrieve": {
        "GET /v1/responses/resp-<id>": "",
        "POST /v1/responses": "input max_output_tokens model store stream temperature",
    },
    "responses.stream-events": {"POST /v1/responses": "input max_output_tokens model stream temperature"},
    "responses.stream-terminal": {"POST /v1/responses": "input max_output_tokens model stream temperature"},
    "responses.structured": {"POST /v1/responses": "input max_output_tokens model stream temperature text"},
    "responses.usage": {"POST /v1/responses": "input max_output_tokens model stream temperature"},
    "sdk.anthropic": {"POST /v1/messages": "max_tokens messages model stream temperature"},
    "sdk.chat": {"POST /v1/chat/completions": "max_tokens messages model temperature"},
    "sdk.chat-async": {"POST /v1/chat/completions": "max_tokens messages model temperature"},
    "sdk.chat-stream": {"POST /v1/chat/completions": "max_tokens messages model stream stream_options temperature"},
    "sdk.chat-stream-async": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "sdk.completions": {"POST /v1/completions": "max_tokens model prompt stream temperature"},
    "sdk.embeddings": {"POST /v1/embeddings": "encoding_format input model"},
    "sdk.errors": {"POST /v1/chat/completions": "max_tokens messages model"},
    "sdk.errors-stream-async": {"POST /v1/chat/completions": "max_tokens messages model stream"},
    "sdk.responses": {"POST /v1/responses": "input max_output_tokens model stream temperature"},
    "sdk.responses-async": {"POST /v1/responses": "input max_output_tokens model stream temperature"},
    "sdk.tool-stream": {
        "POST /v1/chat/completions": "max_tokens messages model seed stream temperature tool_choice tools"
    },
    "stream.chunk-identity": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "stream.error-event": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "stream.first-delta-role": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "stream.include-usage": {
        "POST /v1/chat/completions": "max_tokens messages model stream stream_options temperature"
    },
    "stream.multibyte-text": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "stream.one-finish-reason": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "stream.options-without-stream": {"POST /v1/chat/completions": "max_tokens messages model stream stream_options"},
    "stream.sse-framing": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "stream.stop": {"POST /v1/chat/completions": "logprobs max_tokens messages model stop stream temperature"},
    "stream.text-equals-nonstream": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "stream.usage-off": {"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
    "tokenize.chat-count": {
        "POST /tokenize": "messages model",
        "POST /v1/chat/completions": "max_tokens messages model",
    },
    "tokenize.round-trip": {"POST /detokenize": "model tokens", "POST /tokenize": "add_special_tokens model prompt"},
    "tools.auto": {"POST /v1/chat/completions": "max_tokens messages model seed temperature tool_choice tools"},
    "tools.named": {"POST /v1/chat/completions": "max_tokens messages model seed temperature tool_choice tools"},
    "tools.none": {"POST /v1/chat/completions": "max_tokens messages model seed temperature tool_choice tools"},
    "tools.parallel": {
        "POST /v1/chat/completions": "max_tokens messages model parallel_tool_calls seed stream temperature "
        "tool_choice tools"
    },
    "tools.required": {"POST /v1/chat/completions": "max_tokens messages model seed temperature tool_choice tools"},
    "tools.result-message": {"POST /v1/chat/completions": "max_tokens messages model temperature tool_choice tools"},
    "tools.stream-fragments": {
        "POST /v1/chat/completions": "max_tokens messages model seed stream temperature tool_choice tools"
    },
}

BROKEN = {
    "no-route": Deviation(request=lambda path, body: (404, error_body(f"no route {path}", "not_found_error"))),
    "refuses": Deviation(request=lambda path, body: (400, error_body(f"{path} refuses {sorted(body)}"))),
    "not-an-object": Deviation(request=lambda path, body: (200, "not an object")),
    "empty-object": Deviation(request=lambda path, body: (200, {})),
}
SKIPPED = pytest.skip.Exception  # a check that stops with a plain pytest.skip
# check -> {broken server: how it gives up}; every pair not named here ends in a CheckFailure
GIVES_UP = {
    "chat.json-object": {"no-route": Unsupported, "refuses": Unsupported},
    "chat.json-schema": {"no-route": Unsupported, "refuses": Unsupported},
    "chat.json-schema-missing": {
        "empty-object": Inconclusive,
        "no-route": Unsupported,
        "not-an-object": Inconclusive,
        "refuses": Unsupported,
    },
    "chat.logprobs": {"no-route": Unsupported, "refuses": Unsupported},
    "chat.logprobs-multibyte": {"empty-object": Inconclusive, "no-route": Unsupported, "refuses": Unsupported},
    "chat.logprobs-off": {"empty-object": Inconclusive},
    "chat.logprobs-without-top": {"no-route": Unsupported, "refuses": Unsupported},
    "chat.n": {"no-route": Unsupported, "refuses": Unsupported},
    "chat.parameter-ranges": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "chat.seed": {"empty-object": Inconclusive, "no-route": Unsupported, "refuses": Unsupported},
    "chat.stop": {"empty-object": Inconclusive},
    "chat.usage-details": {"empty-object": NotExercised},
    "completions.echo": {"no-route": Unsupported, "refuses": Unsupported},
    "completions.fields": {"no-route": Unsupported, "refuses": Unsupported},
    "completions.logprobs": {"no-route": Unsupported, "refuses": Unsupported},
    "completions.model": {"no-route": Unsupported, "refuses": Unsupported},
    "completions.prompt-list-n": {"no-route": Unsupported, "refuses": Unsupported},
    "completions.stream": {"empty-object": Inconclusive, "no-route": Unsupported, "refuses": Unsupported},
    "embeddings.base64": {"no-route": Unsupported, "refuses": Unsupported},
    "embeddings.dimensions": {
        "empty-object": Inconclusive,
        "no-route": Unsupported,
        "not-an-object": Inconclusive,
        "refuses": Unsupported,
    },
    "embeddings.fields": {"no-route": Unsupported, "refuses": Unsupported},
    "errors.bad-input-4xx": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "errors.bad-input-stream": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "errors.context-overflow": {
        "empty-object": SKIPPED,
        "no-route": SKIPPED,
        "not-an-object": SKIPPED,
        "refuses": SKIPPED,
    },
    "errors.context-overflow-stream": {
        "empty-object": SKIPPED,
        "no-route": SKIPPED,
        "not-an-object": SKIPPED,
        "refuses": SKIPPED,
    },
    "errors.envelope": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "errors.envelope-types": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "errors.unknown-model": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "messages.count-tokens": {"no-route": Unsupported, "refuses": Unsupported},
    "messages.create": {"no-route": Unsupported, "refuses": Unsupported},
    "messages.errors": {
        "empty-object": Inconclusive,
        "no-route": Unsupported,
        "not-an-object": Inconclusive,
        "refuses": Unsupported,
    },
    "messages.stop-sequence": {"no-route": Unsupported, "refuses": Unsupported},
    "messages.model": {"no-route": Unsupported, "refuses": Unsupported},
    **{
        check_id: {
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        }
        for check_id in ("messages.parameter-ranges", "messages.required-fields", "messages.roles")
    },
    "messages.stream-events": {"no-route": Unsupported, "refuses": Unsupported},
    "responses.cancel": {
        "empty-object": Inconclusive,
        "no-route": Unsupported,
        "not-an-object": Inconclusive,
        "refuses": Unsupported,
    },
    "responses.chain": {"no-route": Unsupported, "refuses": Unsupported},
    "responses.create": {"no-route": Unsupported, "refuses": Unsupported},
    "responses.model": {"no-route": Unsupported, "refuses": Unsupported},
    "responses.errors": {
        "empty-object": Inconclusive,
        "no-route": Unsupported,
        "not-an-object": Inconclusive,
        "refuses": Unsupported,
    },
    "responses.retrieve": {"empty-object": Inconclusive, "no-route": Unsupported, "refuses": Unsupported},
    "responses.stream-events": {"no-route": Unsupported, "refuses": Unsupported},
    "responses.stream-terminal": {"no-route": Unsupported, "refuses": Unsupported},
    "responses.structured": {"no-route": Unsupported, "refuses": Unsupported},
    "responses.usage": {"no-route": Unsupported, "refuses": Unsupported},
    "sdk.anthropic": {"no-route": Unsupported, "refuses": Unsupported},
    "sdk.chat-stream": {"empty-object": Inconclusive},
    "sdk.chat-stream-async": {"empty-object": Inconclusive},
    "sdk.completions": {"no-route": Unsupported, "refuses": Unsupported},
    "sdk.embeddings": {"no-route": Unsupported, "refuses": Unsupported},
    "sdk.errors": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "sdk.errors-stream-async": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "sdk.responses": {"no-route": Unsupported, "refuses": Unsupported},
    "sdk.responses-async": {"no-route": Unsupported, "refuses": Unsupported},
    "sdk.tool-stream": {"no-route": Unsupported, "refuses": Unsupported},
    "stream.error-event": {"empty-object": NotExercised, "not-an-object": NotExercised},
    "stream.options-without-stream": {
        "empty-object": Inconclusive,
        "no-route": Inconclusive,
        "not-an-object": Inconclusive,
        "refuses": Inconclusive,
    },
    "stream.multibyte-text": {"empty-object": Inconclusive},
    "stream.stop": {"empty-object": Inconclusive},
    "tokenize.chat-count": {"no-route": Unsupported, "refuses": Unsupported},
    "tokenize.round-trip": {"no-route": Unsupported, "refuses": Unsupported},
    "tools.auto": {"no-route": Unsupported, "refuses": Unsupported},
    "tools.named": {"no-route": Unsupported, "refuses": Unsupported},
    "tools.none": {"no-route": Unsupported, "refuses": Unsupported},
    "tools.parallel": {"empty-object": NotExercised, "no-route": Unsupported, "refuses": Unsupported},
    "tools.required": {"no-route": Unsupported, "refuses": Unsupported},
    "tools.stream-fragments": {"no-route": Unsupported, "refuses": Unsupported},
}


RESPONSE_ID = re.compile(r"resp-\d+")  # numbered in test order


def _route(method: str, path: str) -> str:
    return f"{method} {RESPONSE_ID.sub('resp-<id>', path)}"


HERE = "tests/conformance/test_check_requests_and_outcomes.py (docs/guide/extending.md)"


def test_every_check_is_stated() -> None:
    """A check's requests are its claim: each one's routes and fields are pinned in SENDS."""
    missing, stale = sorted(set(CHECK_IDS) - set(SENDS)), sorted(set(SENDS) - set(CHECK_IDS))
    assert not missing and not stale, (
        f"add each check to SENDS in {HERE}: {{route: its top-level request fields}} on a correct server"
        f" (test_requests_a_check_sends shows what it sent), so a probe that stops sending the field it exists for"
        f" fails. Missing: {missing}; stale (no such check any more): {stale}"
    )
    assert set(GIVES_UP) <= set(CHECK_IDS), (
        f"GIVES_UP in {HERE} names checks that do not exist: {set(GIVES_UP) - set(CHECK_IDS)}"
    )


def test_a_new_check_missing_from_sends_is_told_where_to_add_it(monkeypatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CHECK_IDS", [*CHECK_IDS, "chat.new"])
    with pytest.raises(AssertionError, match=r"add each check to SENDS in tests/conformance/.*Missing: \['chat.new'\]"):
        test_every_check_is_stated()


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_requests_a_check_sends(check_id: str, ctx: conformance.CheckContext, fake: FakeServer) -> None:
    try:
        conformance.run(check_id, ctx)
    except NotExercised:
        pass
    sent: dict[str, set[str]] = {}
    for method, path, body in fake.requests:
        sent.setdefault(_route(method, path), set()).update(body if isinstance(body, dict) else ())
    stated = SENDS.get(check_id)
    assert {route: " ".join(sorted(fields)) for route, fields in sent.items()} == stated, (
        f"{check_id} sends what SENDS in {HERE} does not state (None: not in it): put the new routes and fields there"
        " if the check is meant to send them"
    )


@pytest.mark.parametrize("broken", sorted(BROKEN))
@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_outcome_on_a_broken_server(
    check_id: str, broken: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """None of them answers anything: a check that passes on one has judged nothing."""
    fake.set_deviation(BROKEN[broken])
    expected = GIVES_UP.get(check_id, {}).get(broken, conformance.CheckFailure)
    try:
        evidence = conformance.run(check_id, ctx)
    except (conformance.CheckFailure, pytest.skip.Exception) as stopped:
        assert type(stopped) is expected, f"{check_id} on {broken!r}: {type(stopped).__name__}: {stopped}"
        text = str(stopped)
    else:
        pytest.fail(f"{check_id} passed on the {broken!r} server, judging: {evidence}")
    if expected is conformance.CheckFailure:
        assert f"[{check_id}]" in text and "expected: " in text and "got: " in text, text
    else:
        assert text.strip(), f"{check_id} gave up on {broken!r} without saying why"

"""The Responses API (``/v1/responses``): what the openai SDK's ``responses`` client and agent
frameworks speak.

Responses stream typed events (``event: response.output_text.delta``) with
sequence numbers and end with one terminal event, not ``data: [DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from ..context import CheckContext, Exchange, StreamExchange, object_or_empty
from ..registry import check
from .chat import shown
from .models import judge_model_names

REFERENCE = "OpenAI API reference: Responses (create, retrieve, cancel, streaming events)"
PATH = "/v1/responses"
INPUT = "Write a short story about a cat who learns to sail."
LIMIT = 8
TERMINAL = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}
STATUSES = ("completed", "incomplete", "failed", "in_progress", "queued", "cancelled")
SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


def body(ctx: CheckContext, **params: Any) -> dict[str, Any]:
    """``stream: false`` said outright, so each check judges what it names; ``responses.create``
    judges the default.
    """
    return {
        "model": ctx.model,
        "input": INPUT,
        "max_output_tokens": LIMIT,
        "temperature": 0,
        "stream": False,
        **params,
    }


def create(ctx: CheckContext, **params: Any) -> tuple[Exchange, dict[str, Any]]:
    ex = ctx.offered("responses", ctx.post(PATH, body(ctx, **params)))
    return ex, ctx.expect_json_object(ex, "POST /v1/responses")


def output_text(response: dict[str, Any]) -> str | None:
    """The text of every ``output_text`` part of every message item, as the SDK's ``output_text``
    joins it.
    """
    parts = [
        part.get("text")
        for item in response.get("output") or []
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
    ]
    texts = [p for p in parts if isinstance(p, str)]
    return "".join(texts) if parts and len(texts) == len(parts) else None


def _problems(r: dict[str, Any]) -> list[str]:
    problems = []
    if r.get("object") != "response":
        problems.append(f"object is {r.get('object')!r}")
    if not isinstance(r.get("id"), str) or not r.get("id"):
        problems.append(f"id is {r.get('id')!r}")
    if not isinstance(r.get("created_at"), (int, float)) or isinstance(r.get("created_at"), bool):
        problems.append(f"created_at is {r.get('created_at')!r}")
    if r.get("status") not in STATUSES:
        problems.append(f"status is {r.get('status')!r}")
    incomplete = r.get("incomplete_details")
    if (r.get("status") == "incomplete") != isinstance(incomplete, dict) or (
        isinstance(incomplete, dict) and not isinstance(incomplete.get("reason"), str)
    ):
        problems.append(f"status {r.get('status')!r} with incomplete_details {incomplete!r}")
    messages = [
        i for i in r.get("output") or [] if isinstance(i, dict) and i.get("type") == "message"
    ]
    if not messages:
        problems.append(f"output has no message item: {r.get('output')!r}")
    elif any(m.get("role") != "assistant" for m in messages):
        problems.append(
            f"a message item's role is not 'assistant': {[m.get('role') for m in messages]}"
        )
    elif output_text(r) is None:
        problems.append(
            f"a message has no output_text part with text: {messages[0].get('content')!r}"
        )
    return problems


@check(
    "responses.create",
    "a response object: id, created_at, status, an assistant message of output_text parts",
    reference=REFERENCE,
    needs=("responses",),
)
def create_fields(ctx: CheckContext) -> str:
    """What ``client.responses.create(...).output_text`` reads; a cut-off answer says why it is
    incomplete.

    Sent without ``stream``, as the SDK sends it: a non-streamed answer is the default."""
    sent = {k: v for k, v in body(ctx).items() if k != "stream"}
    ex = ctx.offered("responses", ctx.post(PATH, sent))
    data = ctx.expect_json_object(
        ex, "POST /v1/responses without stream (a JSON response by default)"
    )
    problems = _problems(data)
    ctx.expect(not problems, "a well-formed response", "; ".join(problems), ex)
    return (
        f"a response with id, created_at, status {data['status']!r}, output_text "
        f"{shown(output_text(data))}"
    )


@check(
    "responses.usage",
    "usage: input, output and total tokens that add up, within max_output_tokens, details within "
    "totals",
    reference=REFERENCE,
    needs=("responses",),
)
def usage(ctx: CheckContext) -> str:
    """Billing and context budgeting read the Responses usage names (input/output, not
    prompt/completion).
    """
    ex, data = create(ctx)
    u = data.get("usage")
    ctx.expect(isinstance(u, dict), "a usage object", u, ex)
    assert isinstance(u, dict)
    counts: dict[str, Any] = {
        k: u.get(k) for k in ("input_tokens", "output_tokens", "total_tokens")
    }
    ctx.expect(
        all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in counts.values()),
        "positive integer input_tokens, output_tokens, total_tokens",
        counts,
        ex,
    )
    ctx.expect(
        counts["total_tokens"] == counts["input_tokens"] + counts["output_tokens"],
        "total_tokens = input_tokens + output_tokens",
        counts,
        ex,
    )
    ctx.expect(
        counts["output_tokens"] <= LIMIT,
        f"output_tokens <= max_output_tokens ({LIMIT})",
        counts,
        ex,
    )
    for details, key, total in (
        ("input_tokens_details", "cached_tokens", "input_tokens"),
        ("output_tokens_details", "reasoning_tokens", "output_tokens"),
    ):
        value = object_or_empty(u.get(details)).get(key) if details in u else 0
        within = (
            isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= counts[total]
        )
        ctx.expect(
            within,
            f"{details}.{key} an integer within {total} ({counts[total]})",
            {details: u.get(details)},
            ex,
        )
    return (
        f"usage {counts['input_tokens']} + {counts['output_tokens']} = {counts['total_tokens']} "
        "tokens, details within"
        " them"
    )


def _stream(ctx: CheckContext) -> tuple[StreamExchange, list[dict[str, Any]]]:
    ex = ctx.offered("responses", ctx.stream(PATH, body(ctx), terminated=False))
    return ex, ctx.expect_typed_events(ex, "a streamed response")


@check(
    "responses.model",
    "the response and every streamed event carrying one name the model asked for (or an alias "
    "/v1/models lists)",
    reference=REFERENCE,
    needs=("responses",),
)
def model(ctx: CheckContext) -> str:
    """Agent frameworks log and route by the response's ``model``; the stream's response objects
    carry it too.
    """
    ex, data = create(ctx)
    stream, events = _stream(ctx)
    # response.created, .completed, ...
    named = [object_or_empty(e.get("response")).get("model") for e in events]
    return judge_model_names(ctx, "responses", (ex, data), (stream, named))


@check(
    "responses.stream-events",
    "a stream: response.created first, sequence numbers 0, 1, 2..., deltas that join into the "
    "final text",
    reference=REFERENCE,
    needs=("responses",),
)
def stream_events(ctx: CheckContext) -> str:
    """The SDK's event accumulator relies on the order and on item ids it has seen announced."""
    ex, events = _stream(ctx)
    types = [e["type"] for e in events]
    ctx.expect(types[0] == "response.created", "response.created as the first event", types[:3], ex)
    numbers = [e.get("sequence_number") for e in events]
    ctx.expect(
        numbers == list(range(len(events))),
        "sequence_number 0, 1, 2, ... on every event",
        numbers,
        ex,
    )
    added = {
        object_or_empty(e.get("item")).get("id")
        for e in events
        if e["type"] == "response.output_item.added"
    }
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    strays = [d.get("item_id") for d in deltas if d.get("item_id") not in added]
    ctx.expect(
        not strays,
        "deltas only for items announced by response.output_item.added "
        f"({sorted(map(str, added))})",
        strays,
        ex,
    )
    final = next((e.get("response") for e in reversed(events) if e["type"] in TERMINAL), None)
    ctx.expect(isinstance(final, dict), "a terminal event carrying the response", types[-3:], ex)
    assert isinstance(final, dict)
    joined = "".join(str(d.get("delta", "")) for d in deltas)
    ctx.expect(
        joined == output_text(final),
        f"the deltas to join into the final response's text {output_text(final)!r}",
        joined,
        ex,
    )
    return (
        f"{len(events)} events from response.created, numbered 0..{len(events) - 1}, {len(deltas)} "
        "deltas joining to"
        f" {shown(joined)}"
    )


@check(
    "responses.stream-terminal",
    "a stream ends with exactly one terminal event, named for the response's status",
    reference=REFERENCE,
    needs=("responses",),
)
def stream_terminal(ctx: CheckContext) -> str:
    """A client stops reading at response.completed / .incomplete / .failed and branches on which it
    got.
    """
    ex, events = _stream(ctx)
    terminals = [i for i, e in enumerate(events) if e["type"] in TERMINAL]
    ctx.expect(
        terminals == [len(events) - 1],
        "one terminal event, the last",
        [events[i]["type"] for i in terminals] or [e["type"] for e in events[-2:]],
        ex,
    )
    last = events[-1]
    status = object_or_empty(last.get("response")).get("status")
    ctx.expect(
        TERMINAL[last["type"]] == status,
        f"event response.{status} for a response whose status is {status!r}",
        last["type"],
        ex,
    )
    return f"one terminal event, the last of {len(events)}: {last['type']} for status {status!r}"


@check(
    "responses.structured",
    "text.format json_schema gives output text that validates against the schema",
    reference=REFERENCE,
    needs=("responses", "response_format"),
)
def structured(ctx: CheckContext) -> str:
    """Responses take the schema under ``text.format``, not ``response_format``; a server that drops
    it answers free text."""
    fmt = {"format": {"type": "json_schema", "name": "answer", "schema": SCHEMA, "strict": True}}
    ex, data = create(ctx, text=fmt, max_output_tokens=32)
    text = output_text(data)
    try:
        value = json.loads(text or "")
    except ValueError:
        ctx.fail("JSON that validates against the schema", text, ex)
    errors = [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(value)]
    ctx.expect(
        not errors, f"JSON valid against {json.dumps(SCHEMA)}", f"{text} ({'; '.join(errors)})", ex
    )
    return f"text.format json_schema: output text {shown(text)} valid against the schema"


def _stored(ctx: CheckContext) -> tuple[dict[str, Any], Exchange, dict[str, Any]]:
    """A response created with store: true, and what GET /v1/responses/{id} gives back."""
    _, created = create(ctx, store=True)
    ex = ctx.offered("responses_store", ctx.get(f"{PATH}/{created.get('id')}"))
    return (
        created,
        ex,
        ctx.expect_json_object(ex, f"GET /v1/responses/{created.get('id')} of a stored response"),
    )


@check(
    "responses.retrieve",
    "a response created with store: true comes back whole from GET /v1/responses/{id}",
    reference=REFERENCE,
    needs=("responses",),
)
def retrieve(ctx: CheckContext) -> str:
    """Background jobs and audit trails fetch a response after the fact."""
    created, ex, got = _stored(ctx)
    ctx.nonempty(created.get("id"), "id in the created response", ex)
    ctx.nonempty(output_text(created), "output_text in the created response", ex)
    same = {
        k: (created.get(k), got.get(k)) for k in ("id", "status") if created.get(k) != got.get(k)
    }
    ctx.expect(
        not same and output_text(got) == output_text(created),
        f"the created response (id, status, text {output_text(created)!r})",
        same or output_text(got),
        ex,
    )
    return (
        f"GET {PATH}/{created['id']}: the same id, status {created.get('status')!r} and text "
        f"{shown(output_text(got))}"
    )


@check(
    "responses.chain",
    "previous_response_id carries the earlier turn: the next response bills its tokens as input",
    reference=REFERENCE,
    needs=("responses",),
)
def chain(ctx: CheckContext) -> str:
    """Multi-turn clients send only the new message and the id of the last response."""
    first, _, _ = _stored(ctx)
    _, alone = create(ctx, input="And then?")
    ex2, chained = create(ctx, input="And then?", previous_response_id=first.get("id"))
    before, after = (object_or_empty(r.get("usage")).get("input_tokens") for r in (alone, chained))
    carried = object_or_empty(first.get("usage")).get("input_tokens")
    ctx.expect(
        isinstance(before, int)
        and isinstance(after, int)
        and isinstance(carried, int)
        and after >= before + carried,
        f"input_tokens >= {before} + the first turn's {carried}",
        after,
        ex2,
    )
    return f"chained input_tokens {after} >= {before} alone + {carried} of the first turn"


@check(
    "responses.cancel",
    "a background response can be cancelled; a finished or unknown one is refused with the error "
    "envelope",
    reference=REFERENCE,
    needs=("responses",),
)
def cancel(ctx: CheckContext) -> str:
    """Long agent runs are started with background: true and cancelled from another request."""
    ex = ctx.control(
        ctx.post(PATH, body(ctx, store=True, background=True, max_output_tokens=256)),
        "a background response",
        feature="responses_store",
    )
    data = ctx.expect_json_object(ex, "a background response")
    ctx.expect(
        data.get("status") in ("queued", "in_progress", "completed", "incomplete"),
        "status queued or in_progress (or already done)",
        data.get("status"),
        ex,
    )
    done = ctx.post(f"{PATH}/{data.get('id')}/cancel", {})
    if done.status == 200:
        status = (done.data or {}).get("status") if isinstance(done.data, dict) else None
        finished = status in ("completed", "incomplete") and data.get("status") in (
            "completed",
            "incomplete",
        )
        ctx.expect(
            status == "cancelled" or finished,
            "status 'cancelled' (a finished response stays finished)",
            status,
            done,
        )
    else:
        ctx.expect(
            data.get("status") in ("completed", "incomplete"),
            f"HTTP 200 for cancelling a {data.get('status')} background response",
            f"HTTP {done.status}: {done.text}",
            done,
        )
        ctx.expect_refused(done, "cancelling a finished response")
    unknown = ctx.post(f"{PATH}/resp_does_not_exist/cancel", {})
    ctx.expect(
        unknown.status == 404,
        "HTTP 404 for cancelling an unknown response id",
        f"HTTP {unknown.status}: {unknown.text}",
        unknown,
    )
    ctx.expect_envelope(unknown)
    return (
        f"cancelling a {data.get('status')} background response: HTTP {done.status} "
        f"{shown(done.text, 80)}; an unknown"
        " id: HTTP 404 with the envelope"
    )


@check(
    "responses.errors",
    "bad input and an unknown id get 4xx with the error envelope",
    reference=REFERENCE,
    needs=("responses",),
)
def errors(ctx: CheckContext) -> str:
    """The SDK turns the envelope into ``openai.BadRequestError`` / ``NotFoundError`` with the
    server's message.
    """
    ctx.control(
        ctx.post(PATH, body(ctx)), "the same response with max_output_tokens 8", feature="responses"
    )
    bad = ctx.post(PATH, body(ctx, max_output_tokens=-1))
    ctx.expect_refused(bad, "max_output_tokens: -1")
    missing = ctx.get(f"{PATH}/resp_does_not_exist")
    ctx.expect(
        missing.status == 404,
        "HTTP 404 for an unknown response id",
        f"HTTP {missing.status}: {missing.text}",
        missing,
    )
    ctx.expect_envelope(missing)
    return (
        f"max_output_tokens -1: HTTP {bad.status} with the envelope; an unknown id: HTTP 404 with "
        "the envelope; the"
        " good request answered"
    )

"""How each check in `pytest_infer/conformance/checks/responses.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.testing.fakeserver import Deviation, error_body

from ..deviations import (
    RESPONSES,
    _message_item,
    _misnamed_event,
    _renumbered,
    _set,
    _typed,
    _without,
    answer_when,
    on_events,
    on_response,
)
from . import Proof, model_proof


def _terminal_named(kind: str) -> Callable[[dict, list], list]:
    """vLLM 0.32: ``response.completed`` ends a stream whose response is ``incomplete``."""
    return lambda body, events: events[:-1] + [{**events[-1], "type": kind}]


def _stray_delta(body: dict, events: list) -> list:
    i = next(i for i, e in enumerate(events) if _typed("response.output_text.delta")(e))
    return events[:i] + [{**events[i], "item_id": "msg-bogus"}] + events[i + 1 :]


def _stored_elsewhere(p: str, body: dict):
    if p.startswith(RESPONSES + "/resp-") and not p.endswith("/cancel") and not body:
        return 200, {"id": "resp-other", "object": "response", "status": "completed", "output": []}
    return None


def _details(key: str, inner: str, value: Any) -> Deviation:
    return on_response(lambda p, b, r: r["usage"][key].update({inner: value}), path=RESPONSES)


def _response(change: Any, when: Any = None) -> Deviation:
    """``change(body, response)`` on each POST /v1/responses answer (``when(body)`` says which)."""
    return on_response(
        lambda p, b, r: change(b, r) if when is None or when(b) else None, path=RESPONSES
    )


def _fields(**changes: Any) -> Deviation:
    return _response(lambda b, r: r.update(changes))


def _part(**changes: Any) -> Deviation:
    return _response(lambda b, r: r["output"][0]["content"][0].update(changes))


def _usage(**changes: Any) -> Deviation:
    return _response(lambda b, r: r["usage"].update(changes))


def _last_event(change: Any) -> Deviation:
    return on_events(lambda b, events: events[:-1] + [change(dict(events[-1]))], path=RESPONSES)


def _without_response(event: dict) -> dict:
    event.pop("response")
    return event


def _item_named_only(body: dict, events: list) -> list:
    """``response.output_item.added`` naming its item by id, not carrying it."""
    return [
        {**e, "item": e["item"]["id"]} if e.get("type") == "response.output_item.added" else e
        for e in events
    ]


def _split_exclaiming(body: dict, resp: dict) -> None:
    """The answer's text in two output_text parts and one more character than the stored
    response's."""
    text = resp["output"][0]["content"][0]["text"]
    resp["output"][0]["content"] = [
        {"type": "output_text", "text": text[:2], "annotations": []},
        {"type": "output_text", "text": text[2:] + "!", "annotations": []},
    ]


def _all_cached_reasoning_over(body: dict, resp: dict) -> None:
    usage = resp["usage"]
    usage["input_tokens_details"]["cached_tokens"] = usage["input_tokens"]
    usage["output_tokens_details"]["reasoning_tokens"] = 99


def _first_delta_textless(body: dict, events: list) -> list:
    """The first ``response.output_text.delta`` without its ``delta``: the joined text lacks that
    character, no more."""
    i = next(i for i, e in enumerate(events) if e.get("type") == "response.output_text.delta")
    return events[:i] + [{k: v for k, v in events[i].items() if k != "delta"}] + events[i + 1 :]


def _first_turn(b: dict) -> bool:
    return bool(b.get("store")) and not b.get("previous_response_id") and not b.get("background")


def _alone(b: dict) -> bool:
    return b.get("input") == "And then?" and not b.get("previous_response_id")


def _chained(b: dict) -> bool:
    return bool(b.get("previous_response_id"))


def _cancel(p: str, b: dict) -> bool:
    return p.endswith("/cancel") and "does_not_exist" not in p


def _unknown(p: str, b: dict) -> bool:
    return "does_not_exist" in p


REASONING_ITEM = {"type": "reasoning", "id": "rs_1", "summary": []}
NOT_FOUND = {"detail": "Not Found"}


PROOFS: dict[str, Proof] = {
    "responses.cancel": Proof(
        mutation=answer_when(
            lambda p, b: p.endswith("/cancel") and "does_not_exist" not in p,
            200,
            {"id": "x", "object": "response", "status": "in_progress"},
        ),
        says="got:      in_progress",
        sends={
            "POST /v1/responses": "background input max_output_tokens model store stream "
            "temperature",
            "POST /v1/responses/resp-<id>/cancel": "",
            "POST /v1/responses/resp_does_not_exist/cancel": "",
        },
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        },
        branches=[
            (
                "unknown-id",
                answer_when(lambda p, b: "does_not_exist" in p, 500, {"detail": "boom"}),
                'HTTP 500: {"detail": "boom"}',
            ),
            (
                "refused",
                answer_when(
                    lambda p, b: p.endswith("/cancel") and "does_not_exist" not in p,
                    400,
                    error_body("no"),
                ),
                "HTTP 400",
            ),
            (
                "started-failed",
                _response(lambda b, r: r.update(status="failed"), lambda b: b.get("background")),
                "got:      failed",
            ),
            (
                "queued-completes",
                answer_when(_cancel, 200, {"id": "x", "object": "response", "status": "completed"}),
                "got:      completed",
            ),
            ("cancel-not-object", answer_when(_cancel, 200, ["cancelled"]), "got:      null"),
            (
                "finished-refused-without-envelope",
                Deviation(
                    request=answer_when(_cancel, 400, {"detail": "already done"}).request,
                    response=_response(
                        lambda b, r: r.update(status="completed"), lambda b: b.get("background")
                    ).response,
                ),
                '{"detail": "already done"}',
            ),
            (
                "unknown-envelope",
                answer_when(lambda p, b: _unknown(p, b) and p.endswith("/cancel"), 404, NOT_FOUND),
                '{"detail": "Not Found"}',
            ),
            (
                "finished-cancel-crashes",
                Deviation(
                    request=answer_when(_cancel, 500, {"detail": "boom"}).request,
                    response=_response(
                        lambda b, r: r.update(status="completed"), lambda b: b.get("background")
                    ).response,
                ),
                "expected: HTTP 400/404/422 for cancelling a finished response",
            ),
        ],
    ),
    "responses.chain": Proof(
        mutation=Deviation(
            request=lambda p, body: (
                None if p != RESPONSES else body.pop("previous_response_id", None) and None
            )
        ),
        says="input_tokens >= ",
        sends={
            "GET /v1/responses/resp-<id>": "",
            "POST /v1/responses": "input max_output_tokens model previous_response_id store "
            "stream temperature",
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "first-turn-uncounted",
                _response(lambda b, r: r["usage"].update(input_tokens="fifty"), _first_turn),
                "the first turn's fifty",
            ),
            (
                "alone-uncounted",
                _response(lambda b, r: r["usage"].update(input_tokens="nine"), _alone),
                "input_tokens >= nine",
            ),
            (
                "chained-uncounted",
                _response(lambda b, r: r["usage"].update(input_tokens="many"), _chained),
                "got:      many",
            ),
            (
                "usage-not-object",
                _response(lambda b, r: r.update(usage="many"), _chained),
                "got:      null",
            ),  # crashed the check,
        ],
    ),
    "responses.create": Proof(
        mutation=on_response(lambda p, b, r: _set(r, object="responses"), path=RESPONSES),
        says="object is 'responses'",
        sends={"POST /v1/responses": "input max_output_tokens model temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "status",
                on_response(lambda p, b, r: _set(r, status="done"), path=RESPONSES),
                "status is 'done'",
            ),
            (
                "incomplete-details",
                on_response(lambda p, b, r: _set(r, incomplete_details=None), path=RESPONSES),
                "status 'incomplete' with incomplete_details None",
            ),
            (
                "no-message",
                on_response(lambda p, b, r: _set(r, output=[]), path=RESPONSES),
                "output has no message item: []",
            ),
            (
                "role",
                on_response(lambda p, b, r: _message_item(r).update(role="user"), path=RESPONSES),
                "['user']",
            ),
            (
                "part-type",
                on_response(
                    lambda p, b, r: _message_item(r)["content"][0].update(type="text"),
                    path=RESPONSES,
                ),
                "'type': 'text'",
            ),
            ("id", on_response(lambda p, b, r: _set(r, id=""), path=RESPONSES), "id is ''"),
            (
                "streams-by-default",
                answer_when(lambda p, b: p == RESPONSES and "stream" not in b, 200, "data: {}"),
                'got:      "data: {}"',
            ),
            (
                "created_at",
                on_response(lambda p, b, r: _set(r, created_at="today"), path=RESPONSES),
                "created_at is 'today'",
            ),
            ("id-not-string", _fields(id=7), "id is 7"),
            ("created_at-bool", _fields(created_at=True), "created_at is True"),
            (
                "completed-with-details",
                _fields(status="completed"),
                "status 'completed' with incomplete_details {'reason': 'max_output_tokens'}",
            ),
            ("incomplete-reason", _fields(incomplete_details={"reason": 8}), "{'reason': 8}"),
            (
                "only-reasoning",
                _fields(output=[REASONING_ITEM]),
                "{'type': 'reasoning', 'id': 'rs_1', 'summary': []}",
            ),
            ("item-not-object", _fields(output=["Sure."]), "['Sure.']"),
            (
                "part-not-object",
                _response(lambda b, r: r["output"][0].update(content=["Sure."])),
                "['Sure.']",
            ),
            ("text-not-string", _part(text=7), "'text': 7"),
            # a stray string item is skipped (not judged here), the message's bad text is judged
            # without tripping on it
            (
                "stray-item",
                _response(
                    lambda b, r: r.update(
                        output=[
                            "Sure.",
                            {**r["output"][0], "content": [{"type": "output_text", "text": 7}]},
                        ]
                    )
                ),
                "'text': 7}]",
            ),
            ("two-problems", _fields(id="", created_at="today"), "id is ''; created_at is 'today'"),
        ],
    ),
    "responses.errors": Proof(
        mutation=answer_when(
            lambda p, b: p == RESPONSES and b.get("max_output_tokens") == -1,
            200,
            {"object": "response", "status": "completed"},
        ),
        says="HTTP 200",
        sends={
            "GET /v1/responses/resp_does_not_exist": "",
            "POST /v1/responses": "input max_output_tokens model stream temperature",
        },
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        },
        branches=[
            (
                "unknown-id",
                answer_when(lambda p, b: "does_not_exist" in p, 500, {"detail": "boom"}),
                "HTTP 500",
            ),
            (
                "envelope",
                answer_when(
                    lambda p, b: p == RESPONSES and b.get("max_output_tokens") == -1,
                    400,
                    {"detail": "bad"},
                ),
                '{"detail": "bad"}',
            ),
            ("unknown-envelope", answer_when(_unknown, 404, NOT_FOUND), '{"detail": "Not Found"}'),
        ],
    ),
    "responses.model": model_proof(
        "/v1/responses",
        "input max_output_tokens model stream temperature",
        streamed="'another-model' in 3 of ",
    ),
    "responses.retrieve": Proof(
        mutation=Deviation(request=_stored_elsewhere),
        says='"id": ["resp-',
        sends={
            "GET /v1/responses/resp-<id>": "",
            "POST /v1/responses": "input max_output_tokens model store stream temperature",
        },
        gives_up={"empty-object": Inconclusive, "no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "text",
                on_response(
                    lambda p, b, r: _message_item(r)["content"][0].update(
                        text=_message_item(r)["content"][0]["text"] + "!"
                    ),
                    path=RESPONSES,
                ),
                "!'",
            ),
            (
                "status",
                _fields(status="completed", incomplete_details=None),
                '"status": ["completed", "incomplete"]',
            ),
            ("text-parts", _response(_split_exclaiming), "'mxqrnx u!'"),
        ],
    ),
    "responses.stream-events": Proof(
        mutation=on_events(
            lambda b, events: [{**e, "sequence_number": i + 1} for i, e in enumerate(events)],
            path=RESPONSES,
        ),
        says="[1, 2, 3",
        sends={"POST /v1/responses": "input max_output_tokens model stream temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "first",
                on_events(_without("response.created"), path=RESPONSES),
                '["response.in_progress"',
            ),
            ("stray-delta", on_events(_stray_delta, path=RESPONSES), '["msg-bogus"]'),
            (
                "lost-delta",
                on_events(_without("response.output_text.delta", first_only=True), path=RESPONSES),
                "the deltas to join",
            ),
            ("event-name", on_events(_misnamed_event, path=RESPONSES), "event: wrong"),
            (
                "no-terminal",
                on_events(lambda b, events: events[:-1], path=RESPONSES),
                '"response.output_item.done"]',
            ),
            ("terminal-without-response", _last_event(_without_response), '"response.incomplete"]'),
            (
                "item-not-object",
                on_events(_item_named_only, path=RESPONSES),
                '["msg-',
            ),  # crashed the check
            ("delta-missing", on_events(_first_delta_textless, path=RESPONSES), "got:      xqrnx"),
        ],
    ),
    "responses.stream-terminal": Proof(
        mutation=on_events(_terminal_named("response.completed"), path=RESPONSES),
        says="got:      response.completed",
        sends={"POST /v1/responses": "input max_output_tokens model stream temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "twice",
                on_events(lambda b, events: _renumbered(events + events[-1:]), path=RESPONSES),
                '["response.incomplete", "response.incomplete"]',
            ),
            (
                "not-last",
                on_events(
                    lambda b, events: _renumbered(events[:-2] + events[-1:] + events[-2:-1]),
                    path=RESPONSES,
                ),
                'got:      ["response.incomplete"]',
            ),
            (
                "none",
                on_events(lambda b, events: events[:-1], path=RESPONSES),
                '["response.content_part.done", "response.output_item.done"]',
            ),
            ("without-response", _last_event(_without_response), "response.incomplete"),
            (
                "response-not-object",
                _last_event(lambda e: {**e, "response": "resp_1"}),
                "response.incomplete",
            ),  # crashed the check,
        ],
    ),
    "responses.structured": Proof(
        mutation=on_response(
            lambda p, b, r: (
                _message_item(r)["content"][0].update(text="Sure! Here it is.")
                if b.get("text")
                else None
            ),
            path=RESPONSES,
        ),
        says="Sure! Here it is.",
        sends={"POST /v1/responses": "input max_output_tokens model stream temperature text"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "invalid",
                on_response(
                    lambda p, b, r: (
                        _message_item(r)["content"][0].update(text='{"ok": true, "extra": 1}')
                        if b.get("text")
                        else None
                    ),
                    path=RESPONSES,
                ),
                "'extra' was unexpected",
            ),
            ("two-errors", _part(text='{"extra": 1}'), '{"extra": 1}'),
        ],
    ),
    "responses.usage": Proof(
        mutation=_usage(total_tokens=1),
        says='"total_tokens": 1',
        sends={"POST /v1/responses": "input max_output_tokens model stream temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            ("over-limit", _usage(output_tokens=20, total_tokens=71), '"output_tokens": 20'),
            ("zero", _usage(input_tokens=0, total_tokens=8), '"input_tokens": 0'),
            (
                "cached",
                _details("input_tokens_details", "cached_tokens", "3"),
                '"cached_tokens": "3"',
            ),
            (
                "reasoning",
                _details("output_tokens_details", "reasoning_tokens", 99),
                '"reasoning_tokens": 99',
            ),
            (
                "none",
                on_response(lambda p, b, r: _set(r, usage=None), path=RESPONSES),
                "got:      null",
            ),
            ("bool", _usage(input_tokens=True), '"input_tokens": true'),
            ("string", _usage(output_tokens="8"), '"output_tokens": "8"'),
            (
                "cached-negative",
                _response(lambda b, r: r["usage"]["input_tokens_details"].update(cached_tokens=-1)),
                '"cached_tokens": -1',
            ),
            (
                "reasoning-bool",
                _response(
                    lambda b, r: r["usage"]["output_tokens_details"].update(reasoning_tokens=True)
                ),
                '"reasoning_tokens": true',
            ),
            # every input token cached is within input_tokens: only the reasoning count is wrong
            ("all-cached", _response(_all_cached_reasoning_over), '"reasoning_tokens": 99'),
            ("details-null", _usage(input_tokens_details=None), '"input_tokens_details": null'),
            (
                "details-not-object",
                _usage(input_tokens_details=[0]),
                '"input_tokens_details": [0]',
            ),  # crashed the check
            ("not-object", _fields(usage="many"), "got:      many"),
        ],
    ),
}

"""Further failure branches of the checks in `pytest_infer/conformance/checks/responses.py`, each its own deviation."""

from __future__ import annotations

from typing import Any

from pytest_infer.testing.fakeserver import Deviation

from ..deviations import RESPONSES, answer_when, on_events, on_response


def _response(change: Any, when: Any = None) -> Deviation:
    """``change(body, response)`` on each POST /v1/responses answer (``when(body)`` says which)."""
    return on_response(lambda p, b, r: change(b, r) if when is None or when(b) else None, path=RESPONSES)


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
    return [{**e, "item": e["item"]["id"]} if e.get("type") == "response.output_item.added" else e for e in events]


def _split_exclaiming(body: dict, resp: dict) -> None:
    """The answer's text in two output_text parts and one more character than the stored response's."""
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
    """The first ``response.output_text.delta`` without its ``delta``: the joined text lacks that character, no more."""
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

BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "responses.create": [
        ("id-not-string", _fields(id=7), "id is 7"),
        ("created_at-bool", _fields(created_at=True), "created_at is True"),
        (
            "completed-with-details",
            _fields(status="completed"),
            "status 'completed' with incomplete_details {'reason': 'max_output_tokens'}",
        ),
        ("incomplete-reason", _fields(incomplete_details={"reason": 8}), "{'reason': 8}"),
        ("only-reasoning", _fields(output=[REASONING_ITEM]), "{'type': 'reasoning', 'id': 'rs_1', 'summary': []}"),
        ("item-not-object", _fields(output=["Sure."]), "['Sure.']"),
        ("part-not-object", _response(lambda b, r: r["output"][0].update(content=["Sure."])), "['Sure.']"),
        ("text-not-string", _part(text=7), "'text': 7"),
        # a stray string item is skipped (not judged here), the message's bad text is judged without tripping on it
        (
            "stray-item",
            _response(
                lambda b, r: r.update(
                    output=["Sure.", {**r["output"][0], "content": [{"type": "output_text", "text": 7}]}]
                )
            ),
            "'text': 7}]",
        ),
        ("two-problems", _fields(id="", created_at="today"), "id is ''; created_at is 'today'"),
    ],
    "responses.usage": [
        ("bool", _usage(input_tokens=True), '"input_tokens": true'),
        ("string", _usage(output_tokens="8"), '"output_tokens": "8"'),
        (
            "cached-negative",
            _response(lambda b, r: r["usage"]["input_tokens_details"].update(cached_tokens=-1)),
            '"cached_tokens": -1',
        ),
        (
            "reasoning-bool",
            _response(lambda b, r: r["usage"]["output_tokens_details"].update(reasoning_tokens=True)),
            '"reasoning_tokens": true',
        ),
        # every input token cached is within input_tokens: only the reasoning count is wrong
        ("all-cached", _response(_all_cached_reasoning_over), '"reasoning_tokens": 99'),
        ("details-null", _usage(input_tokens_details=None), '"input_tokens_details": null'),
        ("details-not-object", _usage(input_tokens_details=[0]), '"input_tokens_details": [0]'),  # crashed the check
        ("not-object", _fields(usage="many"), "got:      many"),
    ],
    "responses.stream-events": [
        ("terminal-without-response", _last_event(_without_response), '"response.incomplete"]'),
        ("item-not-object", on_events(_item_named_only, path=RESPONSES), '["msg-'),  # crashed the check
        ("delta-missing", on_events(_first_delta_textless, path=RESPONSES), "got:      xqrnx"),
    ],
    "responses.stream-terminal": [
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
        ),  # crashed the check
    ],
    "responses.structured": [
        ("two-errors", _part(text='{"extra": 1}'), '{"extra": 1}'),
    ],
    "responses.retrieve": [
        ("status", _fields(status="completed", incomplete_details=None), '"status": ["completed", "incomplete"]'),
        ("text-parts", _response(_split_exclaiming), "'mxqrnx u!'"),
    ],
    "responses.chain": [
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
        ),  # crashed the check
    ],
    "responses.cancel": [
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
                response=_response(lambda b, r: r.update(status="completed"), lambda b: b.get("background")).response,
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
                response=_response(lambda b, r: r.update(status="completed"), lambda b: b.get("background")).response,
            ),
            "expected: HTTP 400/404/422 for cancelling a finished response",
        ),
    ],
    "responses.errors": [
        ("unknown-envelope", answer_when(_unknown, 404, NOT_FOUND), '{"detail": "Not Found"}'),
    ],
}

"""Further failure branches of the checks in `pytest_infer/conformance/checks/reasoning.py`, each its own deviation."""

from __future__ import annotations

from pytest_infer.testing.fakeserver import Deviation

from ..deviations import CHAT, reasoning


def _answer_reasoning(value: object) -> Deviation:
    """The answer's reasoning set to ``value``; the stream's left as a reasoning parser sends it."""
    parsed = reasoning()

    def response(p: str, body: dict, resp: dict) -> dict:
        resp = parsed.response(p, body, resp)
        if p == "/v1/chat/completions" and not body.get("tools"):
            for choice in resp["choices"]:
                choice["message"]["reasoning"] = value
        return resp

    return Deviation(response=response, events=parsed.events)


def _no_streamed_reasoning() -> Deviation:
    """Reasoning in the answer, none in its stream."""
    return Deviation(response=reasoning().response)


def _streamed_in_pieces(*pieces: str) -> Deviation:
    """The stream's reasoning sent in ``pieces``, one chunk each, after the one ``reasoning()`` sends."""
    parsed = reasoning(streamed=pieces[0])

    def events(p: str, body: dict, evs: list) -> list:
        evs = parsed.events(p, body, evs)
        if p != CHAT or body.get("tools"):
            return evs
        at = next(
            i
            for i, e in enumerate(evs)
            if isinstance(e, dict) and (e.get("choices") or [{}])[0].get("delta", {}).get("reasoning")
        )
        more = [
            {**evs[at], "choices": [{**evs[at]["choices"][0], "delta": {"reasoning": piece}}]} for piece in pieces[1:]
        ]
        return evs[: at + 1] + more + evs[at + 1 :]

    return Deviation(response=parsed.response, events=events)


BRANCHES: dict[str, list[tuple[str, Deviation, str]]] = {
    "chat.reasoning": [
        ("not-string", _answer_reasoning(["let me think"]), '"reasoning": ["let me think"]'),
        ("stream-only", _answer_reasoning(None), "got:      {}"),
        ("stream-text-pieces", _streamed_in_pieces("let me", " ponder"), '"reasoning": "let me ponder"'),
        ("answer-only", _no_streamed_reasoning(), "got:      []"),
        ("close-tag-only", reasoning(content_prefix="let me think</think>"), "let me think</think>"),
        ("open-tag-only", reasoning(content_prefix="<think>let me think"), "<think>let me think"),
    ],
}

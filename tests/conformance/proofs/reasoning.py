"""How each check in `pytest_infer/conformance/checks/reasoning.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

import copy

from pytest_infer.testing.fakeserver import Deviation

from ..deviations import CHAT
from . import Proof


def reasoning(
    answer_names: tuple[str, ...] = ("reasoning",),
    stream_name: str = "reasoning",
    streamed: str = "let me think",
    content_prefix: str = "",
) -> Deviation:
    """A reasoning model behind a reasoning parser: the thought beside the content, in the answer
    and before it in the stream."""

    def response(p: str, body: dict, resp: dict) -> dict:
        if p == CHAT and not body.get("tools"):
            for choice in resp["choices"]:
                choice["message"].update(dict.fromkeys(answer_names, "let me think"))
                choice["message"]["content"] = content_prefix + (choice["message"]["content"] or "")
        return resp

    def events(p: str, body: dict, evs: list) -> list:
        if p != CHAT or body.get("tools"):
            return evs
        first = next(i for i, e in enumerate(evs) if isinstance(e, dict) and e.get("choices"))
        head = copy.deepcopy(evs[first])
        head["choices"][0]["delta"] = {stream_name: streamed}
        return evs[: first + 1] + [head] + evs[first + 1 :]

    return Deviation(response=response, events=events)


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
    """The stream's reasoning sent in ``pieces``, one chunk each, after the one ``reasoning()``
    sends."""
    parsed = reasoning(streamed=pieces[0])

    def events(p: str, body: dict, evs: list) -> list:
        evs = parsed.events(p, body, evs)
        if p != CHAT or body.get("tools"):
            return evs
        at = next(
            i
            for i, e in enumerate(evs)
            if isinstance(e, dict)
            and (e.get("choices") or [{}])[0].get("delta", {}).get("reasoning")
        )
        more = [
            {**evs[at], "choices": [{**evs[at]["choices"][0], "delta": {"reasoning": piece}}]}
            for piece in pieces[1:]
        ]
        return evs[: at + 1] + more + evs[at + 1 :]

    return Deviation(response=parsed.response, events=events)


PROOFS: dict[str, Proof] = {
    "chat.reasoning": Proof(
        mutation=reasoning(stream_name="reasoning_content"),
        says='["reasoning_content"]',
        sends={"POST /v1/chat/completions": "max_tokens messages model stream temperature"},
        branches=[
            (
                "think-tags",
                reasoning(content_prefix="<think>let me think</think>"),
                "<think>let me think</think>",
            ),
            (
                "two-names",
                reasoning(answer_names=("reasoning", "reasoning_content")),
                '"reasoning_content": "let me think"',
            ),
            ("stream-text", reasoning(streamed="hmm"), '"reasoning": "hmm"'),
            ("not-string", _answer_reasoning(["let me think"]), '"reasoning": ["let me think"]'),
            ("stream-only", _answer_reasoning(None), "got:      {}"),
            (
                "stream-text-pieces",
                _streamed_in_pieces("let me", " ponder"),
                '"reasoning": "let me ponder"',
            ),
            ("answer-only", _no_streamed_reasoning(), "got:      []"),
            (
                "close-tag-only",
                reasoning(content_prefix="let me think</think>"),
                "let me think</think>",
            ),
            (
                "open-tag-only",
                reasoning(content_prefix="<think>let me think"),
                "<think>let me think",
            ),
        ],
        exercised_by=reasoning(),
    ),
}

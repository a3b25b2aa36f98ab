"""How each check in `pytest_infer/conformance/checks/completions.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.testing.fakeserver import Deviation

from ..deviations import COMPLETIONS, _set, on_events, on_response
from . import Proof, model_proof


def _completion_cumulative(body: dict, events: list) -> list:
    text = ""
    for i, e in enumerate(events):
        if isinstance(e, dict) and e.get("choices") and e["choices"][0].get("text"):
            text += e["choices"][0]["text"]
            events[i] = copy.deepcopy(e)
            events[i]["choices"][0]["text"] = text
    return events


def _prompt_list_first_only(p: str, body: dict, resp: dict) -> None:
    if isinstance(body.get("prompt"), list):
        resp["choices"] = resp["choices"][: body.get("n") or 1]


def _echo_ignored(p: str, body: dict, resp: dict) -> None:
    if body.get("echo"):
        for c in resp["choices"]:
            c["text"] = c["text"][len(body["prompt"]) :]


def _drop_text_offset(p: str, body: dict, resp: dict) -> None:
    for c in resp["choices"]:
        if c.get("logprobs"):
            del c["logprobs"]["text_offset"]


def _completion(**changes: Any) -> Deviation:
    return on_response(lambda p, b, r: r.update(changes), COMPLETIONS)


def _first_choice(change: Callable[[dict, dict], None], when: str) -> Deviation:
    """``change(body, choice)`` on the first choice of the answers to a request that sets
    ``when``."""
    return on_response(
        lambda p, b, r: change(b, r["choices"][0]) if b.get(when) else None, COMPLETIONS
    )


def _logprobs(change: Callable[[dict], None]) -> Deviation:
    return _first_choice(lambda b, c: change(c["logprobs"]), "logprobs")


def _set_item(key: str, i: int, value: Any) -> Callable[[dict], None]:
    return lambda lp: lp[key].__setitem__(i, value)


def _each_chunk(change: Callable[[dict], None]) -> Deviation:
    def events_(body: dict, events: list) -> list:
        out = copy.deepcopy(events)
        for e in out:
            if isinstance(e, dict):
                change(e)
        return out

    return on_events(events_, COMPLETIONS)


PROOFS: dict[str, Proof] = {
    "completions.echo": Proof(
        mutation=on_response(_echo_ignored, COMPLETIONS),
        says="starting with the prompt",
        sends={"POST /v1/completions": "echo max_tokens model prompt temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "prompt-only",
                _first_choice(lambda b, c: c.update(text=b["prompt"]), "echo"),
                "got:      Once upon a time\n",
            ),
            (
                "text-not-str",
                _first_choice(lambda b, c: c.update(text=None), "echo"),
                "got:      null",
            ),
            (
                "choice-not-object",
                on_response(
                    lambda p, b, r: (
                        r.update(choices=[b["prompt"] + "!"]) if b.get("echo") else None
                    ),
                    COMPLETIONS,
                ),
                "got:      null",
            ),  # crashed,
        ],
    ),
    "completions.fields": Proof(
        mutation=on_response(lambda p, b, r: _set(r, object="completion"), COMPLETIONS),
        says="object is 'completion'",
        sends={"POST /v1/completions": "max_tokens model prompt temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            ("id", _completion(id=""), "id is ''"),
            ("id-not-str", _completion(id=7), "id is 7"),
            ("created", _completion(created="now"), "created is 'now'"),
            ("choices-empty", _completion(choices=[]), '"choices": []'),
            ("choices-not-list", _completion(choices={"text": "x"}), '"choices": {"text": "x"}'),
            (
                "text-not-str",
                on_response(lambda p, b, r: r["choices"][0].update(text=None), COMPLETIONS),
                '"text": null',
            ),
            ("usage-missing", _completion(usage=None), '"usage": null'),
            (
                "usage-not-int",
                _completion(
                    usage={"prompt_tokens": "4", "completion_tokens": 8, "total_tokens": 12}
                ),
                "'prompt_tokens': '4'",
            ),
            (
                "usage-sum",
                _completion(usage={"prompt_tokens": 4, "completion_tokens": 8, "total_tokens": 13}),
                "'total_tokens': 13",
            ),
            ("two-at-once", _completion(id="", created="now"), "id is ''; created is 'now'"),
            # these crashed the check (AttributeError) before it named them
            ("choice-not-object", _completion(choices=["x"]), '"choices": ["x"]'),
            ("usage-not-object", _completion(usage="x"), '"usage": "x"'),
        ],
    ),
    "completions.logprobs": Proof(
        mutation=on_response(_drop_text_offset, COMPLETIONS),
        says="list fields",
        sends={"POST /v1/completions": "logprobs max_tokens model prompt temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            ("lengths", _logprobs(lambda lp: lp["token_logprobs"].pop()), '"token_logprobs": 5'),
            (
                "empty",
                _logprobs(
                    lambda lp: lp.update(
                        tokens=[], token_logprobs=[], top_logprobs=[], text_offset=[]
                    )
                ),
                '"tokens": 0',
            ),
            ("positive", _logprobs(_set_item("token_logprobs", 1, 0.25)), "[0.25]"),
            ("not-a-number", _logprobs(_set_item("token_logprobs", 1, "-0.05")), '["-0.05"]'),
            (
                "top-too-many",
                _logprobs(
                    _set_item("top_logprobs", 1, {"a": -1.0, "b": -2.0, "c": -3.0, "d": -4.0})
                ),
                '"d": -4.0',
            ),
            (
                "top-not-dict",
                _logprobs(_set_item("top_logprobs", 1, [["a", -1.0]])),
                '[[["a", -1.0]]]',
            ),
            (
                "offset-order",
                _logprobs(lambda lp: lp["text_offset"].reverse()),
                "[5, 4, 3, 2, 1, 0]",
            ),
            ("tokens-text", _logprobs(_set_item("tokens", 0, "XYZ")), '"XYZ"'),
            # these crashed the check (AttributeError, TypeError) before it named them
            (
                "not-an-object",
                _first_choice(lambda b, c: c.update(logprobs="x"), "logprobs"),
                "got:      x\n",
            ),
            (
                "choice-not-object",
                on_response(
                    lambda p, b, r: r.update(choices=["x"]) if b.get("logprobs") else None,
                    COMPLETIONS,
                ),
                "got:      {}",
            ),
            ("offset-null", _logprobs(_set_item("text_offset", 0, None)), "got:      [null, 1, 2"),
            ("token-not-str", _logprobs(_set_item("tokens", 0, 7)), "got:      [7, "),
        ],
    ),
    "completions.model": model_proof(
        "/v1/completions", "max_tokens model prompt stream temperature"
    ),
    "completions.prompt-list-n": Proof(
        mutation=on_response(_prompt_list_first_only, COMPLETIONS),
        says="index 0, 1, 2, 3",
        sends={"POST /v1/completions": "max_tokens model n prompt seed temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            # crashed the check (TypeError: sorting None among ints)
            (
                "index-missing",
                on_response(
                    lambda p, b, r: r["choices"][0].pop("index") if b.get("n") == 2 else None,
                    COMPLETIONS,
                ),
                "got:      [1, 2, 3, null]",
            ),
            (
                "choice-not-object",
                on_response(
                    lambda p, b, r: r["choices"].__setitem__(3, "3") if b.get("n") == 2 else None,
                    COMPLETIONS,
                ),
                'got:      [0, 1, 2, "3"]',
            ),
        ],
    ),
    "completions.stream": Proof(
        mutation=on_events(_completion_cumulative, COMPLETIONS),
        says="non-streamed text",
        sends={"POST /v1/completions": "max_tokens model prompt stream temperature"},
        gives_up={"empty-object": Inconclusive, "no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "object",
                _each_chunk(lambda c: c.update(object="text_completion.chunk")),
                '"text_completion.chunk"',
            ),
            (
                "framing",
                on_events(lambda body, events: events[:-1], COMPLETIONS),
                '"finish_reason": "length"}]}',
            ),
            (
                "choice-not-object",
                on_events(
                    lambda body, events: [{**events[0], "choices": ["WRONG"]}, *events[1:]],
                    COMPLETIONS,
                ),
                "got:      WRONG",
            ),  # crashed,
        ],
    ),
}

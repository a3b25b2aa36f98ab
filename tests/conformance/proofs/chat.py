"""How each check in `pytest_infer/conformance/checks/chat.py` is proven: the deviation it
fails on and what its failure says, what it sends, how it ends on a broken server, its further
failure branches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_infer.outcomes import Inconclusive, NotExercised, Unsupported
from pytest_infer.testing.fakeserver import Deviation, error_body, wrong_model

from ..deviations import (
    CHAT,
    SAMPLES_NOTHING,
    _choice,
    _set,
    answer_when,
    bad_temperature,
    canned_chat,
    on_events,
    on_response,
)
from . import Proof


def _positive_logprob(p: str, body: dict, resp: dict) -> None:
    lp = _choice(resp).get("logprobs")
    if lp and lp.get("content"):
        lp["content"][0]["logprob"] = 0.5


def _no_logprobs_without_top(p: str, body: dict, resp: dict) -> None:
    if body.get("logprobs") and body.get("top_logprobs") is None:
        _choice(resp)["logprobs"] = {"content": None}


def _entry_per_character(p: str, body: dict, resp: dict) -> None:
    """llama.cpp b11312: a character of several byte tokens is one logprobs entry, while usage bills
    every token."""
    if body.get("logprobs"):
        extra = sum(len(ch.encode()) - 1 for ch in _choice(resp)["message"]["content"])
        resp["usage"].update(
            completion_tokens=resp["usage"]["completion_tokens"] + extra,
            total_tokens=resp["usage"]["total_tokens"] + extra,
        )


def _logprobs_when_off(p: str, body: dict, resp: dict) -> None:
    if not body.get("logprobs"):
        _choice(resp)["logprobs"] = {"content": []}


def _json_broken(kind: str) -> Callable[[str, dict, dict], None]:
    def change(p: str, body: dict, resp: dict) -> None:
        if (body.get("response_format") or {}).get("type") == kind:
            _choice(resp)["message"]["content"] = (
                "{not json" if kind == "json_object" else '{"wrong": 1}'
            )

    return change


def _ignore_max_completion_tokens(p: str, body: dict, resp: dict) -> None:
    if body.get("max_completion_tokens") is not None:
        _choice(resp)["message"]["content"] += "xyz"
        resp["usage"]["completion_tokens"] += 3
        resp["usage"]["total_tokens"] += 3


def _stop_in_text(p: str, body: dict, resp: dict) -> None:
    if body.get("stop"):
        _choice(resp)["message"]["content"] += body["stop"][0]


def _seed_ignored(p: str, body: dict, resp: dict) -> None:
    """Each seeded answer differs (by its id), as if the seed were not passed to the sampler."""
    if body.get("seed") is not None and body.get("temperature"):
        _choice(resp)["message"]["content"] += f"#{resp['id']}"


def _limit_says_stop(p: str, body: dict, resp: dict) -> None:
    for c in resp["choices"]:
        if c["finish_reason"] == "length":
            c["finish_reason"] = "stop"


def ignoring(name: str) -> Deviation:
    """Takes the request with ``name`` and drops it before answering: accepted with 200, never
    applied."""
    return Deviation(request=lambda p, body: None if p != CHAT else body.pop(name, None) and None)


def _accept_chat(predicate: Callable[[dict], bool]) -> Deviation:
    return answer_when(lambda p, b: p == CHAT and predicate(b), 200, canned_chat())


def _without_model(event: Any) -> Any:
    """A streamed chunk less its ``model`` key."""
    return {k: v for k, v in event.items() if k != "model"} if isinstance(event, dict) else event


def _message(change: Callable[[dict], None]) -> Deviation:
    return on_response(lambda p, b, r: change(_choice(r)["message"]))


def _usage(**changes: object) -> Deviation:
    return on_response(lambda p, b, r: r["usage"].update(changes))


def _limited(predicate: Callable[[dict], bool], change: Callable[[dict], None]) -> Deviation:
    """``change`` applied to the answer of each request ``predicate`` picks (the probe that hits the
    limit)."""
    return on_response(lambda p, b, r: change(r) if predicate(b) else None)


def _at_5(b: dict) -> bool:
    return b.get("max_tokens") == 5


def _entries(change: Callable[[list], None], *, top: int | None = 3) -> Deviation:
    """``change`` applied to ``logprobs.content`` of each answer that asked for logprobs (with
    ``top`` top_logprobs)."""

    def apply(p: str, b: dict, r: dict) -> None:
        if b.get("logprobs") and b.get("top_logprobs") == top and _choice(r).get("logprobs"):
            change(_choice(r)["logprobs"]["content"])

    return on_response(apply)


def _first_top(change: Callable[[list], None]) -> Deviation:
    return _entries(lambda entries: change(entries[0]["top_logprobs"]))


def _logprobs_are(value: object, *, top: int | None) -> Deviation:
    return on_response(
        lambda p, b, r: (
            _choice(r).update(logprobs=value)
            if b.get("logprobs") and b.get("top_logprobs") == top
            else None
        )
    )


def _content_with_logprobs(content: str | None) -> Deviation:
    """The text of each answer that asked for logprobs is ``content``, its logprobs still the tokens
    of the real text."""
    return on_response(
        lambda p, b, r: _choice(r)["message"].update(content=content) if b.get("logprobs") else None
    )


def _message_is(value: object) -> Deviation:
    return on_response(lambda p, b, r: _choice(r).update(message=value))


def _json_content(
    kind: str, content: str, reason: str = "stop", seed: int | None = None
) -> Deviation:
    """The answer to each response_format ``kind`` request (with ``seed``, where given) is
    ``content``, ending with ``reason``."""

    def change(p: str, b: dict, r: dict) -> None:
        if (b.get("response_format") or {}).get("type") == kind and seed in (None, b.get("seed")):
            _choice(r)["message"]["content"] = content
            _choice(r)["finish_reason"] = reason

    return on_response(change)


def _stop_leaking_with_malformed_logprobs() -> Deviation:
    def change(p: str, b: dict, r: dict) -> None:
        if b.get("logprobs") and _choice(r).get("logprobs"):
            _choice(r)["logprobs"]["content"][0]["token"] = 5
        if b.get("stop"):
            _choice(r)["message"]["content"] += b["stop"][0]

    return on_response(change)


def _greedy_at_2(path: str, body: dict) -> None:
    """temperature 2.0 sampled greedily (as if temperature were dropped to 0): the same text as the
    control."""
    if path == CHAT and body.get("temperature") == 2.0 and "top_p" not in body:
        body["temperature"] = 0


def _ignoring_both(first: str, second: str) -> Deviation:
    one, two = ignoring(first), ignoring(second)
    return Deviation(request=lambda p, body: one.request(p, body) or two.request(p, body))


def _refusing_n_ignoring_frequency_penalty(p: str, body: dict):
    if p == CHAT and body.get("n") == 2:
        return 400, {
            "error": {
                "message": "n > 1 is not supported",
                "type": "invalid_request_error",
                "param": "n",
                "code": None,
            }
        }
    if p == CHAT:
        body.pop("frequency_penalty", None)
    return None


def _details(**changes: object) -> Deviation:
    return _usage(**changes)


def _only_reasoning_details(p: str, b: dict, r: dict) -> None:
    r["usage"].pop("prompt_tokens_details")
    r["usage"]["completion_tokens_details"] = {"reasoning_tokens": 99}


PROOFS: dict[str, Proof] = {
    "chat.fields": Proof(
        mutation=on_response(lambda p, b, r: _set(r, id="")),
        says="id is ''",
        sends={"POST /v1/chat/completions": "max_tokens messages model temperature"},
        branches=[
            (
                "object",
                on_response(lambda p, b, r: _set(r, object="chat.completions")),
                "object is 'chat.completions'",
            ),
            (
                "created",
                on_response(lambda p, b, r: _set(r, created="1700000000")),
                "created is '1700000000'",
            ),
            ("model", on_response(lambda p, b, r: _set(r, model="")), "model is ''"),
            (
                "choices",
                on_response(lambda p, b, r: _set(r, choices=[])),
                "choices is not a non-empty list",
            ),
            ("content", _message(lambda m: m.update(content=7)), "content is not a string"),
            ("role", _message(lambda m: m.update(role="user")), "role is not 'assistant'"),
            ("usage", on_response(lambda p, b, r: r.pop("usage")), "usage is missing"),
            ("id-not-string", on_response(lambda p, b, r: _set(r, id=12345)), "id is 12345"),
            ("created-bool", on_response(lambda p, b, r: _set(r, created=True)), "created is True"),
            ("model-not-string", on_response(lambda p, b, r: _set(r, model=7)), "model is 7"),
            (
                "choices-not-list",
                on_response(lambda p, b, r: _set(r, choices={"0": _choice(r)})),
                '"choices": {"0": {',
            ),
            ("no-message", _message(lambda m: m.clear()), '"message": {}'),
            (
                "two-at-once",
                on_response(
                    lambda p, b, r: _set(r, object="chat.completions", created="1700000000")
                ),
                "object is 'chat.completions'; created is '1700000000'",
            ),
            # these crashed the check before (AttributeError on a str): each judged now
            ("message-not-object", _message_is("hi"), '"message": "hi"'),
            (
                "choice-not-object",
                on_response(lambda p, b, r: _set(r, choices=["x"])),
                '"choices": ["x"]',
            ),
        ],
    ),
    "chat.finish-reason": Proof(
        mutation=on_response(lambda p, b, r: _choice(r).update(finish_reason="eos_token")),
        says="eos_token",
        sends={"POST /v1/chat/completions": "max_tokens messages model temperature"},
        branches=[
            ("no-choices", on_response(lambda p, b, r: _set(r, choices=[])), "got:      []"),
            (
                "null",
                on_response(lambda p, b, r: _choice(r).update(finish_reason=None)),
                "got:      [null]",
            ),
            (
                "choices-not-list",
                on_response(lambda p, b, r: _set(r, choices={"0": _choice(r)})),
                "got:      []",
            ),  # crashed before,
        ],
    ),
    "chat.json-object": Proof(
        mutation=on_response(_json_broken("json_object")),
        says="json.loads",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model response_format seed "
            "temperature"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        # cut-prose: prose cut at max_tokens for the first seed only; a check that retried past it
        # would pass on the next seed's JSON
        branches=[
            ("array", _json_content("json_object", "[1, 2]"), "got:      [1, 2]"),
            (
                "cut-prose",
                _json_content("json_object", "Here is a cat", reason="length", seed=1234),
                "'Here is a cat'",
            ),
            (
                "server-error",
                answer_when(
                    lambda p, b: (
                        p == CHAT and (b.get("response_format") or {}).get("type") == "json_object"
                    ),
                    500,
                    {"detail": "boom"},
                ),
                '{"detail": "boom"}',
            ),
        ],
    ),
    "chat.json-schema": Proof(
        mutation=on_response(_json_broken("json_schema")),
        says="'answer' is a required property",
        sends={
            "POST /v1/chat/completions": "max_tokens messages model response_format seed "
            "temperature"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            ("not-json", _json_content("json_schema", "{not json"), "'{not json'"),
            (
                "cut-prose",
                _json_content("json_schema", "Here is a person", reason="length", seed=1234),
                "'Here is a person'",
            ),
            (
                "too-long",
                _json_content("json_schema", '{"answer": "a very long answer"}'),
                "'a very long answer' is too long",
            ),
        ],
    ),
    "chat.json-schema-missing": Proof(
        mutation=answer_when(
            lambda p, b: (b.get("response_format") or {}) == {"type": "json_schema"},
            500,
            {"detail": "Internal Server Error"},
        ),
        says="HTTP 500",
        sends={"POST /v1/chat/completions": "max_tokens messages model response_format"},
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Unsupported,
            "not-an-object": Inconclusive,
            "refuses": Unsupported,
        },
    ),
    "chat.logprobs": Proof(
        mutation=on_response(_positive_logprob),
        says="logprob 0.5 > 0",
        sends={
            "POST /v1/chat/completions": "logprobs max_tokens messages model temperature "
            "top_logprobs"
        },
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            ("content-empty", _entries(lambda e: e.clear()), "logprobs.content is []"),
            ("token-not-string", _entries(lambda e: e[0].update(token=5)), "'token': 5"),
            (
                "logprob-not-number",
                _entries(lambda e: e[0].update(logprob="-0.05")),
                "'logprob': '-0.05'",
            ),
            (
                "entry-not-object",
                _entries(lambda e: e.insert(0, "a")),
                "entry 0 lacks token/logprob: 'a'",
            ),
            ("nan", _entries(lambda e: e[0].update(logprob=float("nan"))), "logprob nan"),
            ("bytes-missing", _entries(lambda e: e[1].pop("bytes")), "entry 1 bytes is 'missing'"),
            ("bytes-string", _entries(lambda e: e[0].update(bytes="ab")), "bytes is 'ab'"),
            (
                "top-missing",
                _entries(lambda e: e[0].pop("top_logprobs")),
                "entry 0 has None top_logprobs",
            ),
            ("top-count", _first_top(lambda t: t.pop()), "entry 0 has 2 top_logprobs"),
            (
                "top-not-object",
                _first_top(lambda t: t.__setitem__(0, "e")),
                "top_logprobs malformed: ['e'",
            ),
            (
                "top-logprob-not-number",
                _first_top(lambda t: t[1].update(logprob="x")),
                "'logprob': 'x'",
            ),
            (
                "top-logprob-positive",
                _first_top(lambda t: t[2].update(logprob=0.5)),
                "'logprob': 0.5",
            ),
            (
                "tokens-join",
                _entries(lambda e: e[0].update(token="#", bytes=[35])),
                "tokens join to '#",
            ),
            (
                "bytes-not-the-token",
                _entries(lambda e: e[0].update(bytes=[0])),
                "bytes [0] are not the UTF-8 of its token",
            ),
            (
                "top-not-ranked",
                _first_top(lambda t: t.reverse()),
                "top_logprobs are not the most likely first",
            ),
            (
                "greedy-token-not-top",
                _entries(lambda e: e[0].update(logprob=-0.5)),
                "(logprob -0.5) is not the most likely",
            ),
            # entry 1 broken too: the failure names the first bad entry only (the case's quoted text
            # says which)
            (
                "two-at-once",
                _entries(
                    lambda e: (e[0].update(logprob=0.5, bytes="ab"), e[1].update(logprob=0.75))
                ),
                "entry 0 logprob 0.5 > 0; entry 0 bytes is 'ab'",
            ),
            (
                "logprobs-not-object",
                _logprobs_are("none", top=3),
                "logprobs.content is 'none'",
            ),  # crashed before
            ("text-empty", _content_with_logprobs(""), "not the content ''"),
        ],
    ),
    "chat.logprobs-multibyte": Proof(
        mutation=on_response(_entry_per_character),
        says="one logprobs entry per generated token",
        sends={"POST /v1/chat/completions": "logprobs max_tokens messages model temperature"},
        gives_up={"empty-object": Inconclusive, "no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "bytes-replaced",
                _entries(
                    lambda e: [
                        x.update(bytes=list("\ufffd".encode())) for x in e if len(x["bytes"]) > 1
                    ],
                    top=None,
                ),
                "the entries' bytes joining to the UTF-8 of the content",
            ),
            ("not-a-list", _logprobs_are({"content": "none"}, top=None), "a list of token entries"),
            (  # one null entry leaves the others judged: their bytes still have to join to the
                # content around it
                "one-null-others-replaced",
                _entries(
                    lambda e: (
                        [e[0].update(bytes=None)]
                        + [
                            x.update(bytes=list("\ufffd".encode()))
                            for x in e[1:]
                            if len(x["bytes"]) > 1
                        ]
                    ),
                    top=None,
                ),
                "the entries' bytes joining to the UTF-8 of the content",
            ),
        ],
    ),
    "chat.logprobs-off": Proof(
        mutation=on_response(_logprobs_when_off),
        says="logprobs null",
        sends={"POST /v1/chat/completions": "logprobs max_tokens messages model temperature"},
        gives_up={"empty-object": Inconclusive},
    ),
    "chat.logprobs-without-top": Proof(
        mutation=on_response(_no_logprobs_without_top),
        says="logprobs.content is None",
        sends={"POST /v1/chat/completions": "logprobs max_tokens messages model temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "top-not-empty",
                _entries(
                    lambda e: e[0].update(
                        top_logprobs=[{"token": "q", "logprob": -1.0, "bytes": [113]}]
                    ),
                    top=None,
                ),
                "entry 0 has 1 top_logprobs, not 0",
            ),
            (
                "positive",
                _entries(lambda e: e[0].update(logprob=0.25), top=None),
                "logprob 0.25 > 0",
            ),
            (
                "logprobs-not-object",
                _logprobs_are("none", top=None),
                "logprobs.content is 'none'",
            ),  # crashed before
            ("content-null", _content_with_logprobs(None), "not the content ''"),
            (
                "two-at-once",
                _entries(
                    lambda e: e[0].update(
                        logprob=0.25, top_logprobs=[{"token": "q", "logprob": -1.0, "bytes": [113]}]
                    ),
                    top=None,
                ),
                "entry 0 logprob 0.25 > 0; entry 0 has 1 top_logprobs, not 0",
            ),
        ],
    ),
    "chat.max-completion-tokens": Proof(
        mutation=on_response(_ignore_max_completion_tokens),
        says="completion_tokens",
        sends={
            "POST /v1/chat/completions": "max_completion_tokens max_tokens messages model "
            "temperature"
        },
        branches=[
            (
                "says-stop",
                _limited(
                    lambda b: b.get("max_completion_tokens") == 5,
                    lambda r: _choice(r).update(finish_reason="stop"),
                ),
                "finish_reason is 'stop'",
            ),
            (
                "other-text",
                _limited(
                    lambda b: b.get("max_completion_tokens") == 5,
                    lambda r: _choice(r)["message"].update(content="ZYXWV"),
                ),
                "got:      ZYXWV",
            ),
            # the failure names the request that failed, not the max_tokens one before it
            (
                "refused",
                answer_when(
                    lambda p, b: p == CHAT and b.get("max_completion_tokens") == 5,
                    400,
                    error_body(
                        "unknown field max_completion_tokens", param="max_completion_tokens"
                    ),
                ),
                "HTTP 200 for max_completion_tokens=5",
            ),
        ],
    ),
    "chat.max-tokens": Proof(
        mutation=on_response(_limit_says_stop),
        says="finish_reason is 'stop'",
        sends={"POST /v1/chat/completions": "max_tokens messages model temperature"},
        branches=[
            (
                "completion-tokens-not-int",
                _limited(_at_5, lambda r: r["usage"].update(completion_tokens="5")),
                "usage.completion_tokens is '5'",
            ),
            (
                "over-limit",
                _limited(_at_5, lambda r: r["usage"].update(completion_tokens=6)),
                "completion_tokens 6 > the limit 5",
            ),
            (
                "length-early",
                _limited(_at_5, lambda r: r["usage"].update(completion_tokens=4)),
                "after 4 of 5 tokens",
            ),
            (
                "usage-not-object",
                _limited(_at_5, lambda r: _set(r, usage="n/a")),
                '"usage": "n/a"',
            ),  # crashed before,
        ],
    ),
    "chat.model": Proof(
        mutation=wrong_model(),
        says="got:      another-model",
        sends={
            "GET /v1/models": "",
            "POST /v1/chat/completions": "max_tokens messages model stream temperature",
        },
        branches=[
            (
                "stream-only",
                Deviation(events=wrong_model().events),
                "'another-model' in 10 of 10 event(s)",
            ),
            ("answer-only", Deviation(response=wrong_model().response), "got:      another-model"),
            # model is required in the answer and in every chunk (CreateChatCompletionResponse,
            # ...StreamResponse)
            (
                "answer-without-model",
                on_response(lambda p, b, r: r.pop("model")),
                "got:      no model key",
            ),
            (
                "chunk-without-model",
                on_events(
                    lambda b, events: [
                        _without_model(e) if i == 2 else e for i, e in enumerate(events)
                    ]
                ),
                "no model key (or null) in 1 of 10 event(s)",
            ),
        ],
    ),
    "chat.n": Proof(
        mutation=on_response(lambda p, b, r: _set(r, choices=r["choices"][:1])),
        says="1 choice(s)",
        sends={"POST /v1/chat/completions": "max_tokens messages model n seed temperature"},
        gives_up={"no-route": Unsupported, "refuses": Unsupported},
        branches=[
            (
                "index-repeated",
                on_response(lambda p, b, r: [c.update(index=0) for c in r["choices"]]),
                "index [0, 0]",
            ),
            (
                "choices-not-objects",
                on_response(lambda p, b, r: _set(r, choices=["a", "b"])),
                "2 choice(s) with index [None, None]",
            ),  # crashed before,
        ],
    ),
    "chat.parameter-ranges": Proof(
        mutation=answer_when(bad_temperature, 200, canned_chat()),
        says="temperature=2.5 -> HTTP 200",
        sends={
            "POST /v1/chat/completions": "logprobs max_tokens messages model n seed temperature "
            "top_logprobs top_p"
        },
        gives_up={
            "empty-object": Inconclusive,
            "no-route": Inconclusive,
            "not-an-object": Inconclusive,
            "refuses": Inconclusive,
        },
        branches=[
            (name, _accept_chat(predicate), f"{name} -> HTTP 200")
            for name, predicate in {
                "temperature=-1": lambda b: b.get("temperature") == -1,
                "top_p=1.5": lambda b: b.get("top_p") == 1.5,
                "n=0": lambda b: b.get("n") == 0,
                "top_logprobs=21": lambda b: b.get("top_logprobs") == 21,
                "seed=2**64": lambda b: b.get("seed") == 2**64,
            }.items()
        ]
        + [
            (
                "two-and-a-422",
                Deviation(
                    request=lambda p, b: (
                        (200, canned_chat())
                        if p == CHAT and (b.get("temperature") == 2.5 or b.get("top_p") == 1.5)
                        else (
                            (422, {"detail": "temperature must be >= 0"})
                            if p == CHAT and b.get("temperature") == -1
                            else None
                        )
                    )
                ),
                '[{"index; top_p=1.5 -> HTTP 200',
            ),
        ],
    ),
    "chat.request-fields": Proof(
        mutation=ignoring("frequency_penalty"),
        says='{"frequency_penalty": 2.0} -> HTTP 200, ignored',
        sends={
            "POST /v1/chat/completions": "frequency_penalty logprobs max_completion_tokens "
            "max_tokens messages model n "
            "presence_penalty response_format temperature top_p"
        },
        branches=[
            (name, ignoring(name), "-> HTTP 200, ignored")
            for name in (
                "max_completion_tokens",
                "n",
                "logprobs",
                "response_format",
                "top_p",
                "presence_penalty",
            )
        ]
        + [
            ("temperature-greedy", SAMPLES_NOTHING, '{"temperature": 2.0} -> HTTP 200, ignored'),
            (
                "error",
                answer_when(
                    lambda p, b: p == CHAT and b.get("presence_penalty") == 2.0,
                    500,
                    {"detail": "boom"},
                ),
                '{"presence_penalty": 2.0} -> HTTP 500, error',
            ),
            (
                "temperature",
                Deviation(request=lambda p, b: _greedy_at_2(p, b)),
                '{"temperature": 2.0} -> HTTP 200, ignored',
            ),
            (
                "two-at-once",
                _ignoring_both("top_p", "presence_penalty"),
                '; {"presence_penalty": 2.0} -> HTTP 200, ignored',
            ),
            (
                "refused-is-no-failure",
                Deviation(request=_refusing_n_ignoring_frequency_penalty),
                'got:      {"frequency_penalty": 2.0} -> HTTP 200, ignored',
            ),
            (
                "completion-tokens-not-int",  # crashed before (TypeError: '<=' between str and int)
                _limited(
                    lambda b: b.get("max_completion_tokens") == 2,
                    lambda r: r["usage"].update(completion_tokens="2"),
                ),
                '{"max_completion_tokens": 2} -> HTTP 200, ignored',
            ),
        ],
    ),
    "chat.seed": Proof(
        mutation=on_response(_seed_ignored),
        says="seed 4242",
        sends={"POST /v1/chat/completions": "max_tokens messages model seed temperature"},
        gives_up={"empty-object": Inconclusive, "no-route": Unsupported, "refuses": Unsupported},
    ),
    "chat.stop": Proof(
        mutation=on_response(_stop_in_text),
        says="finish_reason 'stop'",
        sends={"POST /v1/chat/completions": "logprobs max_tokens messages model stop temperature"},
        gives_up={"empty-object": Inconclusive},
        branches=[
            (
                "finish_reason",
                on_response(
                    lambda p, b, r: (
                        _choice(r).update(finish_reason="length") if b.get("stop") else None
                    )
                ),
                '"finish_reason": "length"',
            ),
            # a token that is not a string crashed placing the stop (TypeError in str.join): the
            # stop is placed by the text
            (
                "logprobs-malformed",
                _stop_leaking_with_malformed_logprobs(),
                '"content": "mxqrnx uop"',
            ),
            (
                "server-error",
                answer_when(lambda p, b: p == CHAT and "stop" in b, 500, {"detail": "boom"}),
                "HTTP 200 for stop='rn'",
            ),
        ],
    ),
    "chat.usage": Proof(
        mutation=on_response(
            lambda p, b, r: r["usage"].update(total_tokens=r["usage"]["total_tokens"] + 1)
        ),
        says="total_tokens",
        sends={"POST /v1/chat/completions": "max_tokens messages model temperature"},
        branches=[
            (
                "float",
                on_response(
                    lambda p, b, r: r["usage"].update(
                        prompt_tokens=float(r["usage"]["prompt_tokens"])
                    )
                ),
                '"prompt_tokens": 51.0',
            ),
            (
                "negative",
                on_response(
                    lambda p, b, r: r["usage"].update(
                        completion_tokens=-1, total_tokens=r["usage"]["prompt_tokens"] - 1
                    )
                ),
                '"completion_tokens": -1',
            ),
            (
                "bool",
                on_response(
                    lambda p, b, r: r["usage"].update(
                        completion_tokens=True, total_tokens=r["usage"]["prompt_tokens"] + 1
                    )
                ),
                '"completion_tokens": true',
            ),
            (
                "zero-prompt",
                on_response(
                    lambda p, b, r: r["usage"].update(
                        prompt_tokens=0, total_tokens=r["usage"]["completion_tokens"]
                    )
                ),
                '"prompt_tokens": 0',
            ),
            (
                "missing",
                on_response(lambda p, b, r: r["usage"].pop("total_tokens")),
                '"completion_tokens": 8, "prompt_tokens_details"',
            ),
            (
                "not-object",
                on_response(lambda p, b, r: _set(r, usage=[3, 8, 11])),
                "got:      [3, 8, 11]",
            ),  # crashed before,
        ],
    ),
    "chat.usage-details": Proof(
        mutation=on_response(
            lambda p, b, r: r["usage"]["prompt_tokens_details"].update(
                cached_tokens=r["usage"]["prompt_tokens"] + 5
            )
        ),
        says="cached_tokens: a count within prompt_tokens",
        sends={"POST /v1/chat/completions": "max_tokens messages model temperature"},
        gives_up={"empty-object": NotExercised},
        branches=[
            (
                "no-cache-hit",
                on_response(
                    lambda p, b, r: r["usage"]["prompt_tokens_details"].update(cached_tokens=0)
                ),
                "cached_tokens > 0",
            ),
            (
                "not-a-count",
                on_response(
                    lambda p, b, r: r["usage"]["prompt_tokens_details"].update(cached_tokens="12")
                ),
                '"cached_tokens": "12"',
            ),
            (
                "reasoning",
                on_response(
                    lambda p, b, r: r["usage"].update(
                        completion_tokens_details={"reasoning_tokens": 9}
                    )
                ),
                '"reasoning_tokens": 9',
            ),
            (
                "details-not-object",
                _details(prompt_tokens_details="cached"),
                '"prompt_tokens_details": "cached"',
            ),
            (
                "no-prompt-tokens",
                on_response(lambda p, b, r: r["usage"].pop("prompt_tokens")),
                '"cached_tokens": 0',
            ),
            (
                "reasoning-not-a-count",
                _details(completion_tokens_details={"reasoning_tokens": -1}),
                '"reasoning_tokens": -1',
            ),
            (
                "completion-details-not-object",
                _details(completion_tokens_details=[]),
                '"completion_tokens_details": []',
            ),
            ("reasoning-only", on_response(_only_reasoning_details), '"reasoning_tokens": 99'),
            # these crashed the check before (TypeError: '<=' between int and str)
            (
                "prompt-tokens-not-int",
                on_response(
                    lambda p, b, r: r["usage"].update(
                        prompt_tokens=str(r["usage"]["prompt_tokens"])
                    )
                ),
                '"prompt_tokens": "540"',
            ),
            (
                "completion-tokens-not-int",
                on_response(
                    lambda p, b, r: r["usage"].update(
                        completion_tokens="4", completion_tokens_details={"reasoning_tokens": 0}
                    )
                ),
                '"completion_tokens": "4"',
            ),
        ],
    ),
}

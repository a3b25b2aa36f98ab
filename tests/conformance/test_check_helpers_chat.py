"""The helpers behind the chat and stream checks, pinned at their edges.

The check tests run whole checks against the fake server, which only ever
exercises each helper's happy path; these tests give each helper the inputs
where its constants and conditions decide the answer.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pytest_infer import conformance
from pytest_infer.conformance.checks.chat import (
    _json_object,
    _limit_problems,
    greedy,
    logprob_problems,
    not_json_start,
    stop_across_tokens,
    stop_case,
    token_texts,
)
from pytest_infer.conformance.checks.stream import chat_stream
from pytest_infer.conformance.context import USER
from pytest_infer.outcomes import Inconclusive
from pytest_infer.testing.fakeserver import MODEL, Deviation, FakeServer, error_body

from .deviations import BASE, CHAT, answer_when, compose, on_response


def sent(fake: FakeServer, since: int) -> list[dict[str, Any]]:
    """The chat bodies the server received after request number ``since``."""
    return [body for _, path, body in fake.requests[since:] if path == CHAT]


def refuse_logprobs() -> Deviation:
    return compose(
        answer_when(
            lambda p, b: p == CHAT and "logprobs" in b,
            400,
            error_body("logprobs are not supported", param="logprobs"),
        )
    )


SERVER_ERROR = compose(
    answer_when(lambda p, b: p == CHAT, 500, error_body("boom", "internal_server_error"))
)


# --- what a failed request says it was for ---------------------------------------------
@pytest.mark.parametrize(
    ("call", "what"),
    [
        pytest.param(lambda c: greedy(c), "a chat completion", id="greedy"),
        pytest.param(lambda c: chat_stream(c), "a streamed chat completion", id="chat_stream"),
        pytest.param(lambda c: token_texts(c, {}), "a greedy completion", id="token_texts"),
    ],
)
def test_a_failed_request_names_what_it_was(
    call: Any, what: str, ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """The failure's 'expected' line is all a reader has to tell which request of a check broke."""
    fake.set_deviation(SERVER_ERROR)
    with pytest.raises(conformance.CheckFailure) as info:
        call(ctx)
    assert info.value.expected == f"HTTP 200 for {what}"


# --- token_texts ------------------------------------------------------------------------
def test_token_texts_asks_once_for_greedy_logprobs(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """One greedy request with logprobs gives the text and its tokens (one per character on the fake server)."""
    before = len(fake.requests)
    text, tokens = token_texts(ctx, {})
    [body] = sent(fake, before)
    assert {k: v for k, v in body.items() if k != "max_tokens"} == {
        "model": MODEL,
        "messages": USER,
        "temperature": 0,
        "logprobs": True,
    }
    assert isinstance(body["max_tokens"], int) and body["max_tokens"] > 0
    assert text and tokens == list(text)


def test_token_texts_lets_the_caller_override_the_request(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """``text_params`` come last, so a caller can change any default."""
    before = len(fake.requests)
    token_texts(ctx, {"max_tokens": 3, "logprobs": False})
    [body] = sent(fake, before)
    assert body["max_tokens"] == 3 and body["logprobs"] is False


def test_token_texts_retries_without_logprobs_when_they_are_refused(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A server without logprobs still gives the greedy text; only the token boundaries are unknown."""
    fake.set_deviation(refuse_logprobs())
    before = len(fake.requests)
    text, tokens = token_texts(ctx, {})
    first, retry = sent(fake, before)
    assert first["logprobs"] is True
    assert retry == {
        k: v for k, v in first.items() if k != "logprobs"
    }  # the same request, logprobs left out
    fake.set_deviation(BASE)
    assert (text, tokens) == (token_texts(ctx, {})[0], None)


def test_token_texts_without_logprobs_in_the_answer(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A server that accepts logprobs=true and answers logprobs null (or empty content) gives no tokens."""
    fake.set_deviation(compose(on_response(lambda p, b, r: r["choices"][0].update(logprobs=None))))
    assert token_texts(ctx, {})[1] is None
    fake.set_deviation(
        compose(on_response(lambda p, b, r: r["choices"][0].update(logprobs={"content": []})))
    )
    assert token_texts(ctx, {})[1] is None


def test_token_texts_reads_an_entry_without_a_token_as_empty(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A token-less entry counts as '', so the tokens no longer join to the text and are not trusted."""
    fake.set_deviation(
        compose(on_response(lambda p, b, r: r["choices"][0]["logprobs"]["content"][1].pop("token")))
    )
    text, tokens = token_texts(ctx, {})
    assert tokens == [text[0], "", *text[2:]]


def test_token_texts_null_content_is_empty_text(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A null content is no text, not the text 'None' or anything else a stop could be placed in."""
    fake.set_deviation(
        compose(
            on_response(
                lambda p, b, r: r["choices"][0].update(
                    message={"role": "assistant", "content": None}, logprobs=None
                )
            )
        )
    )
    assert token_texts(ctx, {}) == ("", None)


# --- stop_across_tokens -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tokens", "expected"),
    [
        # the first boundary at or after character 4: the last 2 characters of one token + the first 2 of the next
        pytest.param("abcdefgh", ["ab", "cd", "ef", "gh"], ("cdef", 2), id="boundary-at-4"),
        pytest.param("abcdefghi", ["abc", "def", "ghi"], ("efgh", 4), id="boundary-after-4"),
        pytest.param("abcdef", ["abcd", "ef"], ("cdef", 2), id="last-boundary"),
        pytest.param(
            "abcdefgh", ["ab", "cd", "", "ef", "gh"], ("efgh", 4), id="empty-token-skipped"
        ),
        pytest.param("abcdefg", ["abc", "d", "e", "fg"], ("de", 3), id="two-one-character-tokens"),
        pytest.param(
            "ab    cdef", ["ab", "  ", "  ", "cd", "ef"], ("  cd", 4), id="blank-stop-skipped"
        ),
        pytest.param("ababab", ["ab", "ab", "ab"], ("abab", 0), id="first-occurrence"),
        # without usable tokens: characters 6..10 of a text of at least 12
        pytest.param("0123456789ab", None, ("6789", 6), id="no-tokens-12-chars"),
        pytest.param("0123456789a", None, None, id="no-tokens-11-chars"),
        pytest.param("0123456789ab6789", None, ("6789", 6), id="no-tokens-first-occurrence"),
        pytest.param("abcdef    ghij", None, None, id="no-tokens-blank-stop"),
        pytest.param("0123456789ab", ["x", "y", "z"], ("6789", 6), id="tokens-not-joining-to-text"),
        pytest.param("abcdefgh", ["abcdefgh"], None, id="one-token-short-text"),
    ],
)
def test_stop_across_tokens(
    text: str, tokens: list[str] | None, expected: tuple[str, int] | None
) -> None:
    """The stop string must straddle a real token boundary (where servers miss it), or be None when none fits."""
    assert stop_across_tokens(text, tokens) == expected


# --- stop_case --------------------------------------------------------------------------
def test_stop_case_places_the_stop_across_the_fifth_token(ctx: conformance.CheckContext) -> None:
    """With logprobs (one character per token on the fake server) the stop spans tokens 4 and 5, not the fallback."""
    text, tokens = token_texts(ctx, {})
    assert tokens == list(text) and len(text) >= 12
    stop = text[3:5]
    try:
        case = stop_case(ctx)
    except (
        Inconclusive
    ) as exc:  # a pytest skip: uncaught, it would pass for a helper that gives up on every answer
        pytest.fail(f"inconclusive on a {len(text)}-character answer with tokens: {exc}")
    assert case == (text, stop, text[: text.find(stop)])


def test_stop_case_on_a_short_answer_is_inconclusive(
    ctx: conformance.CheckContext, fake: FakeServer
) -> None:
    """A greedy answer too short for a stop is no verdict on the server, and the skip says why."""
    fake.set_deviation(
        compose(
            on_response(
                lambda p, b, r: r["choices"][0].update(
                    message={"role": "assistant", "content": "hi"}, logprobs=None
                )
            )
        )
    )
    with pytest.raises(
        Inconclusive, match="the greedy answer 'hi' is too short to place a stop string in"
    ):
        stop_case(ctx)


# --- _limit_problems --------------------------------------------------------------------
def _limited(used: Any, reason: str | None) -> dict[str, Any]:
    return {"choices": [{"finish_reason": reason}], "usage": {"completion_tokens": used}}


@pytest.mark.parametrize(
    ("used", "reason", "expected"),
    [
        (3, "length", ["finish_reason 'length' after 3 of 5 tokens"]),
        (3, "stop", []),
        (5, "length", []),
        (5, "stop", ["the limit was reached but finish_reason is 'stop'"]),
        (6, "length", ["completion_tokens 6 > the limit 5"]),
        (None, "stop", ["usage.completion_tokens is None"]),
    ],
)
def test_limit_problems(used: Any, reason: str, expected: list[str]) -> None:
    """'length' means exactly the limit was used: earlier is a lie, and so is 'stop' at the limit."""
    assert _limit_problems(_limited(used, reason), 5) == expected


# --- logprob_problems -------------------------------------------------------------------
def entry(token: Any = "a", logprob: Any = -0.1, top: Any = (), **extra: Any) -> dict[str, Any]:
    e = {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode()) if isinstance(token, str) else [97],
        "top_logprobs": list(top),
    }
    e.update(extra)
    return e


def without(e: dict[str, Any], key: str) -> dict[str, Any]:
    e = copy.deepcopy(e)
    del e[key]
    return e


@pytest.mark.parametrize(
    ("entries", "content", "k", "expected"),
    [
        pytest.param([entry(), entry("b", top=())], "ab", 0, [], id="well-formed"),
        pytest.param([entry(logprob=0)], "a", 0, [], id="logprob-0-is-certainty"),
        pytest.param([entry(bytes=None)], "a", 0, [], id="bytes-null"),
        pytest.param(
            [entry(logprob=0, top=[{"token": "a", "logprob": 0}])], "a", 1, [], id="top-logprob-0"
        ),
        pytest.param(
            [
                entry(
                    logprob=-0.5,
                    top=[{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -0.5}],
                )
            ],
            "a",
            2,
            [],
            id="tie-with-the-top",
        ),
        pytest.param([entry("é", bytes=[195, 169])], "é", 0, [], id="bytes-of-a-two-byte-token"),
        pytest.param(
            [entry("\ufffd", bytes=[240, 160])], "\ufffd", 0, [], id="bytes-of-part-of-a-character"
        ),
        pytest.param(
            [entry("\u2581cat", bytes=[32, 99, 97, 116])],
            "\u2581cat",
            0,
            ["entry 0 bytes [32, 99, 97, 116] are not the UTF-8 of its token '\u2581cat'"],
            id="bytes-not-the-token",
        ),
        pytest.param(
            [
                entry(
                    logprob=-0.1,
                    top=[{"token": "b", "logprob": -2.0}, {"token": "a", "logprob": -0.1}],
                )
            ],
            "a",
            2,
            ["entry 0 top_logprobs are not the most likely first: [-2.0, -0.1]"],
            id="top-not-ranked",
        ),
        pytest.param(
            [
                entry(
                    logprob=-2.0,
                    top=[{"token": "b", "logprob": -0.1}, {"token": "a", "logprob": -2.0}],
                )
            ],
            "a",
            2,
            [
                "entry 0 token 'a' (logprob -2.0) is not the most likely at temperature 0:"
                " {'token': 'b', 'logprob': -0.1}"
            ],
            id="greedy-token-not-the-top",
        ),
        pytest.param(
            [], "", 0, ["logprobs.content is [], not a list of token entries"], id="empty-list"
        ),
        pytest.param(
            None, "", 0, ["logprobs.content is None, not a list of token entries"], id="null"
        ),
        pytest.param(
            [without(entry(), "logprob")],
            "a",
            0,
            ["entry 0 lacks token/logprob: {'token': 'a', 'bytes': [97], 'top_logprobs': []}"],
            id="no-logprob",
        ),
        pytest.param(
            [without(entry(), "token")],
            "a",
            0,
            ["entry 0 lacks token/logprob: {'logprob': -0.1, 'bytes': [97], 'top_logprobs': []}"],
            id="no-token",
        ),
        pytest.param(["a"], "a", 0, ["entry 0 lacks token/logprob: 'a'"], id="entry-not-an-object"),
        pytest.param(
            [entry(logprob=0.5)], "a", 0, ["entry 0 logprob 0.5 > 0"], id="positive-logprob"
        ),
        pytest.param(
            [entry(logprob=float("nan"))], "a", 0, ["entry 0 logprob nan > 0"], id="nan-logprob"
        ),
        pytest.param(
            [without(entry(), "bytes")], "a", 0, ["entry 0 bytes is 'missing'"], id="no-bytes"
        ),
        pytest.param([entry(bytes="a")], "a", 0, ["entry 0 bytes is 'a'"], id="bytes-a-string"),
        pytest.param(
            [entry(top_logprobs=None)],
            "a",
            3,
            ["entry 0 has None top_logprobs, not 3"],
            id="top-null",
        ),
        pytest.param(
            [entry(top=[{"token": "a", "logprob": -1}] * 2)],
            "a",
            3,
            ["entry 0 has 2 top_logprobs, not 3"],
            id="top-too-few",
        ),
        pytest.param(
            [entry(top=[{"token": "a", "logprob": 0.5}])],
            "a",
            1,
            ["entry 0 top_logprobs malformed: [{'token': 'a', 'logprob': 0.5}]"],
            id="top-positive",
        ),
        pytest.param(
            [entry(top=[{"token": "a"}])],
            "a",
            1,
            ["entry 0 top_logprobs malformed: [{'token': 'a'}]"],
            id="top-no-logprob",
        ),
        pytest.param(
            [entry(top=["a"])],
            "a",
            1,
            ["entry 0 top_logprobs malformed: ['a']"],
            id="top-not-an-object",
        ),
        pytest.param(
            [entry(), entry(logprob=1.0), entry(logprob=2.0)],
            "aaa",
            0,
            ["entry 1 logprob 1.0 > 0"],
            id="first-bad-entry-only",
        ),
        pytest.param(
            [entry(), entry("b")],
            "abc",
            0,
            ["tokens join to 'ab', not the content 'abc'"],
            id="tokens-not-joining",
        ),
        pytest.param(
            [entry(None), entry(None)],
            "",
            0,
            [
                "entry 0 lacks token/logprob: {'token': None, 'logprob': -0.1, 'bytes': [97], 'top_logprobs': []}"
            ],
            id="null-tokens-named-not-joined",
        ),
        pytest.param(
            [entry(5)],
            "5",
            0,
            [
                "entry 0 lacks token/logprob: {'token': 5, 'logprob': -0.1, 'bytes': [97], 'top_logprobs': []}"
            ],
            id="token-a-number",
        ),
    ],
)
def test_logprob_problems(entries: Any, content: str, k: int, expected: list[str]) -> None:
    """Each malformation is named exactly, with the offending value, and a valid edge (0, null bytes) is not one."""
    assert logprob_problems(entries, content, k) == expected


# --- not_json_start and _json_object ------------------------------------------------------
def answer(content: Any, reason: str = "stop") -> dict[str, Any]:
    return {
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": reason}]
    }


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (answer('{"a": 1}'), False),
        (answer("{"), False),
        (answer(' \n {"a"'), False),
        (answer('Sure: {"a": 1}'), True),
        (answer(None), True),
        (answer(""), True),
        ({}, True),
    ],
)
def test_not_json_start(data: dict[str, Any], expected: bool) -> None:
    """Only output that (after leading blanks) begins with '{' may be a constrained answer cut at max_tokens."""
    assert not_json_start(data) is expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (answer('{"a": 1}'), True),
        (answer('  {"a": 1}'), True),
        (answer("[1]"), False),
        (answer('{"a": 1} trailing'), False),
        (answer('{"a": ', "length"), True),
        (answer('{"a": ', "stop"), False),
        (answer('Sure: {"a": 1}'), False),
        (answer(None), False),
        ({"choices": [], "x": 1}, False),
    ],
)
def test_json_object(data: dict[str, Any], expected: bool) -> None:
    """JSON mode counts as applied for an object, or an object's start cut off by the token limit, never otherwise."""
    assert _json_object(data) is expected

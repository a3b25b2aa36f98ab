"""Answer classification: strict RFC 8259 parsing, schema validation, truncation, HTTP status."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_infer.structured import (
    AnswerClass,
    Attempt,
    Classified,
    classify_output,
    is_json_prefix,
)
from pytest_infer.structured.classify import classify_status
from pytest_infer.structured.judge import judge_support

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "string", "maxLength": 3}},
    "required": ["a"],
}
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@pytest.mark.parametrize(
    ("text", "finish", "outcome", "keyword"),
    [
        ('{"a": "xy"}', "stop", AnswerClass.VALID, None),
        ('  {"a": "xy"}\n', "stop", AnswerClass.VALID, None),
        (
            '{"a": "x\ty"}',
            "stop",
            AnswerClass.INVALID_JSON,
            "json",
        ),  # a raw control character inside a string
        ('{"a": NaN}', "stop", AnswerClass.INVALID_JSON, "json"),
        ('{"a": 1e999}', "stop", AnswerClass.INVALID_JSON, "number-range"),
        ("{'a': 'xy'}", "stop", AnswerClass.INVALID_JSON, "json"),
        ('{"a": "toolong"}', "stop", AnswerClass.VIOLATION, "maxLength"),
        ("{}", "stop", AnswerClass.VIOLATION, "required"),
        ('{"a": "xy"', "length", AnswerClass.TRUNCATED, None),
        ('{"a": "x', "length", AnswerClass.TRUNCATED, None),
        ('{"a": "xy"', "stop", AnswerClass.INVALID_JSON, "json"),  # stopped, yet unclosed
        (
            '{"a": "xy"} trailing',
            "length",
            AnswerClass.INVALID_JSON,
            "json",
        ),  # not a prefix of any document
        (
            "8ajBTX5c[/oFTX5c",
            "length",
            AnswerClass.INVALID_JSON,
            "json",
        ),  # unconstrained text cut at the limit
        (
            '{"a": "xy"}',
            "length",
            AnswerClass.TRUNCATED,
            None,
        ),  # whole but cut: the model had not finished
        ('{"a": "toolong"}', "length", AnswerClass.VIOLATION, "maxLength"),
        (
            '{"a": "toolo',
            "length",
            AnswerClass.VIOLATION,
            "maxLength",
        ),  # cut, but already past maxLength (test_prefix.py)
        ('{"a', "length", AnswerClass.TRUNCATED, None),
        ("{t", "length", AnswerClass.INVALID_JSON, "json"),  # no document starts so
        (
            "[" * 3000 + "]" * 3000,
            "stop",
            AnswerClass.INVALID_JSON,
            "json",
        ),  # deeper than the parser goes: refused, not a crash
    ],
)
def test_classify_output(text, finish, outcome, keyword):
    verdict = classify_output(SCHEMA, text, finish)
    assert (verdict.outcome, verdict.keyword) == (outcome, keyword), verdict.message


@pytest.mark.parametrize(
    ("schema", "text", "outcome"),
    [
        (
            {"type": "string"},
            "845e3855419557194546",
            AnswerClass.VIOLATION,
        ),  # a number growing where a string belongs
        (
            {"allOf": [{"type": "string"}, {"maxLength": 3}]},
            "845e3855419557194546",
            AnswerClass.VIOLATION,
        ),
        ({"type": "object"}, '["a", "b', AnswerClass.VIOLATION),
        ({"type": ["string", "null"]}, '"abc', AnswerClass.TRUNCATED),
        ({"type": "number"}, "845e3855419557194546", AnswerClass.TRUNCATED),
        ({"type": "integer"}, "12", AnswerClass.TRUNCATED),
        (
            {"anyOf": [{"type": "string"}, {"type": "integer", "multipleOf": 2}]},
            "1438943870245579455",
            AnswerClass.TRUNCATED,
        ),  # parity unknown yet
        (
            {"type": "integer", "maximum": 5},
            "1438",
            AnswerClass.TRUNCATED,
        ),  # could still become 1438e-9
        (
            {"type": "array", "maxItems": 1},
            "[1, 2]",
            AnswerClass.VIOLATION,
        ),  # closed: judged in full
        ({}, "845e3855419557194546", AnswerClass.TRUNCATED),
    ],
)
def test_a_cut_answer_of_a_forbidden_type_is_a_violation(schema, text, outcome):
    assert classify_output(schema, text, "length").outcome is outcome


def test_format_is_checked():
    verdict = classify_output({"type": "string", "format": "ipv4"}, '"078.079.66.071"', "stop")
    assert verdict.signature == "violation:format"


def test_missing_content_is_a_server_error():
    assert classify_output(SCHEMA, None, "stop").outcome is AnswerClass.SERVER_ERROR


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, None),
        (400, AnswerClass.REJECTED),
        (422, AnswerClass.REJECTED),
        (500, AnswerClass.SERVER_ERROR),
        (503, AnswerClass.SERVER_ERROR),
    ],
)
def test_classify_status(status, outcome):
    verdict = classify_status(status, "{}")
    assert (verdict.outcome if verdict else None) is outcome


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.data())
def test_every_prefix_of_a_document_is_a_prefix(value, data):
    text = json.dumps(
        value, indent=data.draw(st.sampled_from([None, 1])), ensure_ascii=data.draw(st.booleans())
    )
    cut = data.draw(st.integers(0, len(text)))
    assert is_json_prefix(text[:cut]), repr(text[:cut])


@pytest.mark.parametrize(
    "text",
    [
        "abc",
        '{"a": 1}}',
        '{"a": tx',
        '["a\x01',
        "[1, NaN",
        '"\\q',
        '{"a" 1',
        "[1.2.3",
        "{t",
        "{}t",
        "0nu",
        "[1e999",
    ],
)
def test_non_prefixes_are_detected(text):
    assert not is_json_prefix(text)


def _attempt(outcome: AnswerClass, status: int = 200) -> Attempt:
    return Attempt(
        {"type": "boolean"},
        "response_format",
        {"max_tokens": 8},
        Classified(outcome),
        "curl",
        status=status,
    )


@pytest.mark.parametrize(
    ("outcomes", "word"),
    [
        ([AnswerClass.VALID, AnswerClass.VALID, AnswerClass.TRUNCATED], "honoured"),
        ([AnswerClass.INVALID_JSON, AnswerClass.INVALID_JSON, AnswerClass.TRUNCATED], "ignored"),
        ([AnswerClass.REJECTED, AnswerClass.REJECTED], "rejected"),
        ([AnswerClass.VALID, AnswerClass.VIOLATION], "partly"),
        ([AnswerClass.INVALID_JSON, AnswerClass.VIOLATION], "partly"),
        ([AnswerClass.TRUNCATED, AnswerClass.TRUNCATED], "inconclusive"),
        ([AnswerClass.VALID, AnswerClass.TIMEOUT], "error"),
    ],
)
def test_judge_support(outcomes, word):
    assert judge_support([_attempt(o) for o in outcomes]).word == word


@pytest.mark.parametrize(
    ("schema", "text", "finish", "outcome", "keyword", "detail"),
    [
        (
            SCHEMA,
            7,
            "stop",
            AnswerClass.SERVER_ERROR,
            None,
            "the answer has no text content (got int)",
        ),
        (
            {"type": "number"},
            "1" * 45 + "e999",
            "stop",
            AnswerClass.INVALID_JSON,
            "number-range",
            (
                f"the number {'1' * 40} is outside the IEEE 754 double range (RFC 8259 section 6: not interoperable;"
                " strict parsers reject it)"
            ),
        ),
        (
            {"type": "number"},
            "1e999",
            "length",
            AnswerClass.TRUNCATED,
            None,
            "cut at the token limit inside a number: the number 1e999 is outside the IEEE 754 double range",
        ),
        (
            {"type": "number"},
            "1e999",
            "stop",
            AnswerClass.INVALID_JSON,
            "number-range",
            (
                "the number 1e999 is outside the IEEE 754 double range (RFC 8259 section 6: not interoperable; strict"
                " parsers reject it)"
            ),
        ),
        (
            SCHEMA,
            '{"a": "x',
            "length",
            AnswerClass.TRUNCATED,
            None,
            "cut at the token limit after 8 characters",
        ),
        (
            SCHEMA,
            '{"a": NaN}',
            "stop",
            AnswerClass.INVALID_JSON,
            "json",
            "not strict JSON: NaN is not JSON (RFC 8259 has no NaN or Infinity)",
        ),
        (
            {"type": "integer"},
            "12",
            "length",
            AnswerClass.TRUNCATED,
            None,
            "a number still growing at the token limit",
        ),
        (
            {"type": "string"},
            "12",
            "length",
            AnswerClass.VIOLATION,
            "type",
            None,
        ),  # a number where a string must be, cut or not
        (
            {"type": "integer", "maximum": 5},
            "12",
            "stop",
            AnswerClass.VIOLATION,
            "maximum",
            "12 is greater than the maximum of 5 (at /, schema path /maximum)",
        ),
        (
            SCHEMA,
            '{"a": "xy"}',
            "length",
            AnswerClass.TRUNCATED,
            None,
            "the token limit was hit: the value parses but the model had not finished",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": {"maxLength": 1}}}},
            '{"a": ["x", "yy"]}',
            "stop",
            AnswerClass.VIOLATION,
            "maxLength",
            "'yy' is too long (at /a/1, schema path /properties/a/items/maxLength)",
        ),
    ],
)
def test_each_verdict_says_why_in_the_words_the_report_shows(
    schema, text, finish, outcome, keyword, detail
):
    verdict = classify_output(schema, text, finish)
    assert (verdict.outcome, verdict.keyword) == (outcome, keyword)
    if detail is not None:
        assert verdict.message == detail
    else:
        assert verdict.message


def test_a_refused_or_failed_request_quotes_the_status_and_the_first_300_characters():
    body = "e" * 299 + "XY"
    assert classify_status(422, body) == Classified(AnswerClass.REJECTED, f"HTTP 422: {'e' * 299}X")
    assert classify_status(503, body) == Classified(
        AnswerClass.SERVER_ERROR, f"HTTP 503: {'e' * 299}X"
    )
    assert classify_status(200, body) is None


def test_a_prefix_that_already_breaks_the_schema_says_how():
    verdict = classify_output(
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}},
        '{"a": "toolong',
        "length",
    )
    assert verdict == Classified(
        AnswerClass.VIOLATION,
        "truncated output already violates the schema at /a: string of 7+ characters exceeds maxLength 3",
        "maxLength",
    )


def test_a_validator_that_breaks_on_a_value_is_reported_not_raised():
    from pytest_infer.structured.classify import validate

    keyword, detail = validate(
        {"type": "string", "pattern": "(?<=a"}, "x"
    )  # a pattern jsonschema cannot compile
    assert keyword == "validator-error" and detail.startswith(
        "jsonschema could not check the value: error: "
    )  # re.error


def test_every_request_counts_once_in_the_all_row_and_once_per_keyword_sorted():
    from pytest_infer.structured.classify import matrix_cells

    assert matrix_cells({"pattern", "maxLength"}, AnswerClass.VIOLATION) == [
        ("all", "invalid"),
        ("maxLength", "invalid"),
        ("pattern", "invalid"),
    ]


def test_json_nested_past_the_parsers_depth_is_invalid_and_says_so():
    verdict = classify_output({}, "[" * 100_000 + "]" * 100_000, "stop")
    assert verdict.outcome == AnswerClass.INVALID_JSON and verdict.message.startswith(
        "not strict JSON: nested too deeply to parse ("
    )


@pytest.mark.parametrize(("old", "new"), [("Verdict", Classified), ("Outcome", AnswerClass)])
def test_an_old_name_still_imports_with_a_deprecation_warning(old: str, new: type) -> None:
    import pytest_infer.structured as structured

    with pytest.warns(DeprecationWarning, match=f"use {new.__name__}"):
        assert getattr(structured, old) is new
    assert old not in structured.__all__

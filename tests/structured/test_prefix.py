"""Prefix-aware classification: a cut-off answer that already breaks the schema is invalid, not truncated.

Each rule has a row: a truncated answer turned ``invalid`` and a clean prefix of the same schema
that stays ``truncated``. Soundness is a property: no prefix of a valid document is ever invalid.
The last test runs the bundled suite against a fake server that ignores ``maxLength``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_infer.structured import (
    AnswerClass,
    classify_output,
    is_json_prefix,
    schemas_with_instances,
    validate,
)
from pytest_infer.structured.prefix import Node, parse_prefix, pointer, prefix_violation

# pytester's in-process runs drop the modules they imported (see test_suite_outcomes.py): load these first.
pytest.importorskip("matplotlib.figure")
httpx.HTTPTransport()

from pytest_infer.testing.fakeserver import FakeServer  # noqa: E402

from . import deviations  # noqa: E402

FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


def cut(schema: dict, text: str):
    return classify_output(schema, text, "length")


def obj(**properties) -> dict:
    return {"type": "object", "properties": properties}


CLOSED = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}},
    "additionalProperties": False,
}
POSITIVES = {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}}
NUMBERS = obj(
    n={"type": "number", "minimum": 1, "maximum": 10, "exclusiveMinimum": 0, "exclusiveMaximum": 11}
)
LINKED = {
    "$defs": {
        "n": {
            "type": "object",
            "properties": {
                "value": {"type": "string", "maxLength": 1},
                "next": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]},
            },
            "required": ["value", "next"],
        }
    },
    "$ref": "#/$defs/n",
}
LINKED_CUT = '{"value": "a", "next": {"value": '

# (schema, an answer cut at the limit that already breaks it, the keyword, what the message says, a clean cut that stays
# truncated)
RULES = {
    "maxLength-open-string": (
        obj(a={"type": "string", "maxLength": 3}),
        '{"a": "toolongtool',
        "maxLength",
        "at /a: string of 11+ characters exceeds maxLength 3",
        '{"a": "too',
    ),
    "maxLength-complete-string": (
        obj(a={"type": "string", "maxLength": 3}),
        '{"a": "toolong", ',
        "maxLength",
        "at /a: 'toolong' is too long",
        '{"a": "abc", ',
    ),
    "maxLength-counts-code-points": (
        {"type": "string", "maxLength": 3},
        '"\\u00e9\\u00e9\\u00e9\\u00e9',
        "maxLength",
        "string of 4+ characters",
        '"\\u00e9\\u00e9\\u00e9\\u00',
    ),
    "maxLength-surrogate-pair-is-one": (
        {"type": "string", "maxLength": 2},
        '"\\ud83d\\ude00ab',
        "maxLength",
        "string of 3+ characters",
        '"\\ud83d\\ude00\\ud83d\\ude',
    ),
    "maxItems-open-array": (
        {"type": "array", "maxItems": 2},
        "[1, 2, 3",
        "maxItems",
        "at /: array of 3+ items exceeds maxItems 2",
        "[1, 2",
    ),
    "maxItems-item-after-comma": (
        {"type": "array", "maxItems": 2},
        "[1, 2, ",
        "maxItems",
        "array of 3+ items",
        "[1, 2 ",
    ),
    "maxItems-complete-array": (
        obj(a={"type": "array", "maxItems": 2}),
        '{"a": [1, 2, 3], ',
        "maxItems",
        "at /a:",
        '{"a": [1, 2], ',
    ),
    "minItems-closed-array": (
        obj(a={"type": "array", "minItems": 2}),
        '{"a": [1], ',
        "minItems",
        "at /a: [1] is too short",
        '{"a": [1, ',
    ),
    "additionalProperties-complete-key": (
        CLOSED,
        '{"a": 1, "b": ',
        "additionalProperties",
        "at /: property 'b' is not allowed",
        '{"a": 1, "a',
    ),
    "additionalProperties-key-without-colon": (
        CLOSED,
        '{"b"',
        "additionalProperties",
        "property 'b' is not allowed",
        '{"ab"',
    ),
    "additionalProperties-open-key": (
        CLOSED,
        '{"x',
        "additionalProperties",
        "a property name starting 'x' is not allowed",
        '{"a',
    ),
    "additionalProperties-schema": (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        '{"z": "',
        "type",
        "at /z: a string has begun here",
        '{"z": -',
    ),
    "required-closed-object": (
        obj(o={"type": "object", "required": ["x"]}),
        '{"o": {"y": 1}, ',
        "required",
        "at /o: 'x' is a required property",
        '{"o": {"y": 1, ',
    ),
    "enum-complete": (
        obj(a={"enum": ["x", "y"]}),
        '{"a": "z", ',
        "enum",
        "at /a: 'z' is not one of",
        '{"a": "x", ',
    ),
    "const-complete": (
        obj(a={"const": 2}),
        '{"a": 3, ',
        "const",
        "at /a: 2 was expected",
        '{"a": 2, ',
    ),
    "enum-open-string": (
        obj(a={"enum": ["xy", "q"]}),
        '{"a": "xz',
        "enum",
        "at /a: a string starting 'xz' can no longer become any of",
        '{"a": "x',
    ),
    "const-open-string": (
        {"const": "hello"},
        '"hellx',
        "const",
        "a string starting 'hellx'",
        '"hell',
    ),
    "enum-open-value-of-another-type": (
        obj(a={"enum": ["x", "y"]}),
        '{"a": [',
        "enum",
        "at /a: an array has begun here",
        '{"a": "',
    ),
    "enum-cut-literal": (
        obj(a={"enum": [True, None]}),
        '{"a": f',
        "enum",
        "at /a: False is not one of",
        '{"a": tr',
    ),
    "maximum-complete": (
        NUMBERS,
        '{"n": 10.5, ',
        "maximum",
        "at /n: 10.5 is greater than the maximum of 10",
        '{"n": 10, ',
    ),
    "minimum-complete": (
        NUMBERS,
        '{"n": 0.5, ',
        "minimum",
        "at /n: 0.5 is less than the minimum of 1",
        '{"n": 1, ',
    ),
    "exclusiveMaximum-complete": (
        {"exclusiveMaximum": 11},
        "11 ",
        "exclusiveMaximum",
        "at /: 11 is greater than or equal",
        "10 ",
    ),
    "exclusiveMinimum-complete": (
        obj(n={"exclusiveMinimum": 0}),
        '{"n": 0, ',
        "exclusiveMinimum",
        "at /n: 0 is less than or equal",
        '{"n": 0',
    ),
    "integer-complete": (
        obj(n={"type": "integer"}),
        '{"n": 1.5, ',
        "type",
        "at /n: 1.5 is not of type 'integer'",
        '{"n": 2.0, ',
    ),
    "maximum-open-number-with-exponent": (
        obj(n={"type": "number", "maximum": 100}),
        '{"n": 5e3',
        "maximum",
        "at /n: a number starting '5e3' can only end at least 5000",
        '{"n": 5e',
    ),
    "maximum-open-number-plus-exponent": (
        {"type": "number", "maximum": 100},
        "200e+",
        "maximum",
        "can only end at least 200,",
        "200e",
    ),
    "minimum-open-negative-number": (
        {"type": "number", "minimum": 1},
        "-3",
        "minimum",
        "a number starting '-3' can only end at most 0, beyond minimum 1",
        "3",
    ),
    "exclusiveMinimum-open-negative-number": (
        POSITIVES,
        "[1, -0.2",
        "exclusiveMinimum",
        "at /1: a number starting '-0.2' can only end at most 0",
        "[1, 0.2",
    ),
    "minimum-open-number-negative-exponent": (
        {"type": "number", "minimum": 1},
        "9e-5",
        "minimum",
        "can only end at most 0.00009",
        "9e-",
    ),
    "exclusiveMaximum-open-positive-number": (
        {"type": "number", "exclusiveMaximum": 0},
        "0.5",
        "exclusiveMaximum",
        "can only end at least 0",
        "-0.5",
    ),
    "type-complete": (
        obj(a={"type": "string"}),
        '{"a": true, ',
        "type",
        "at /a: True is not of type 'string'",
        '{"a": "t',
    ),
    "type-open-string-where-number": (
        obj(a={"type": "number"}),
        '{"a": "',
        "type",
        "at /a: a string has begun here, the schema allows only number",
        '{"a": -',
    ),
    "type-open-array": (
        {"type": ["object", "null"]},
        "[",
        "type",
        "an array has begun here, the schema allows only null, object",
        "{",
    ),
    "type-open-number-where-string": (
        {"type": "string"},
        "12",
        "type",
        "a number has begun here",
        '"12',
    ),
    "type-cut-literal": ({"type": "object"}, "nu", "type", "None is not of type 'object'", "{"),
    "pattern-complete": (
        obj(a={"type": "string", "pattern": "^[a-z]+$"}),
        '{"a": "AB", ',
        "pattern",
        "at /a: 'AB' does not match",
        '{"a": "AB',
    ),
    "format-complete": (
        obj(d={"type": "string", "format": "date"}),
        '{"d": "soon"',
        "format",
        "at /d: 'soon' is not a 'date'",
        '{"d": "2024-13',
    ),
    "uniqueItems-complete-items": (
        {"type": "array", "uniqueItems": True},
        "[1, 1, ",
        "uniqueItems",
        "the complete items so far repeat a value",
        "[1, 2, ",
    ),
    "items-false-after-prefixItems": (
        {"type": "array", "prefixItems": [{"type": "integer"}], "items": False},
        "[1, ",
        "items",
        "item 1 has begun, but items is false after 1 prefixItems",
        "[1",
    ),
    "false-subschema": (
        obj(a=False),
        '{"a": ',
        "false",
        "at /a: a value must follow where the schema allows none",
        '{"b": ',
    ),
    "maxProperties-open-object": (
        {"type": "object", "maxProperties": 1},
        '{"a": 1, "b": ',
        "maxProperties",
        "object of 2+ properties exceeds maxProperties 1",
        '{"a": 1, "',
    ),
    "propertyNames-complete-key": (
        {"type": "object", "propertyNames": {"maxLength": 2}},
        '{"abc": ',
        "propertyNames",
        "property name 'abc'",
        '{"ab',
    ),
    "ref-to-defs": (
        {"$defs": {"s": {"type": "string", "maxLength": 2}}, **obj(a={"$ref": "#/$defs/s"})},
        '{"a": "abc',
        "maxLength",
        "at /a: string of 3+",
        '{"a": "ab',
    ),
    "recursive-ref": (
        LINKED,
        LINKED_CUT + '"bb',
        "anyOf",
        "at /next: no anyOf branch can still match (2 branches; the first: at /next/value: string of 2+",
        LINKED_CUT + '"b',
    ),
    "anyOf-every-branch": (
        {"anyOf": [{"type": "string", "maxLength": 2}, {"enum": ["abcdef", 1]}]},
        '"abcx',
        "anyOf",
        "no anyOf branch can still match",
        '"abc',
    ),
    "anyOf-same-keyword": (
        {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "string", "maxLength": 3}]},
        '"abcd',
        "maxLength",
        "no anyOf branch",
        '"abc',
    ),
    "oneOf-every-branch": (
        {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]},
        '"ab',
        "oneOf",
        "no oneOf branch can still match",
        '"a',
    ),
    "allOf-any-branch": (
        {"allOf": [{"type": "string"}, {"maxLength": 2}]},
        '"abc',
        "maxLength",
        "string of 3+",
        '"ab',
    ),
}


@pytest.mark.parametrize(
    ("schema", "broken", "keyword", "message", "clean"), list(RULES.values()), ids=list(RULES)
)
def test_a_prefix_that_already_breaks_the_schema_is_invalid(
    schema, broken, keyword, message, clean
):
    verdict = cut(schema, broken)
    assert verdict.signature == f"violation:{keyword}", verdict.message
    assert verdict.outcome.matrix_class == "invalid" and verdict.outcome.failed
    assert verdict.message.startswith("truncated output already violates the schema at "), (
        verdict.message
    )
    assert message in verdict.message, verdict.message
    clean_verdict = cut(schema, clean)
    assert clean_verdict.outcome is AnswerClass.TRUNCATED, clean_verdict.message


def test_the_message_names_the_path_and_the_rule():
    verdict = cut(obj(a={"type": "string", "maxLength": 3}), '{"a": "toolongtool')
    assert (
        verdict.message
        == "truncated output already violates the schema at /a: string of 11+ characters exceeds maxLength 3"
    )


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        pytest.param(
            {"type": "string", "pattern": "^[a-z]+$"}, '"AB', id="pattern-on-an-open-string"
        ),
        pytest.param({"type": "string", "format": "date"}, '"soon', id="format-on-an-open-string"),
        pytest.param({"type": "string", "minLength": 5}, '"ab', id="minLength-on-an-open-string"),
        pytest.param({"type": "array", "minItems": 3}, "[1", id="minItems-on-an-open-array"),
        pytest.param(
            {"type": "object", "required": ["x"]}, '{"y": 1', id="required-on-an-open-object"
        ),
        pytest.param({"type": "integer", "maximum": 5}, "1438", id="no-exponent-yet: 1438e-3"),
        pytest.param(
            {"type": "number", "maximum": 0}, "5", id="may-underflow: 5e-400 reads as 0.0"
        ),
        pytest.param(
            {"type": "number", "minimum": 0}, "-3", id="may-underflow: -3e-400 reads as -0.0"
        ),
        pytest.param({"type": "integer"}, "1.5", id="integer-ness-of-an-open-number: 1.5e1"),
        pytest.param({"type": "integer", "multipleOf": 2}, "3", id="multipleOf-on-an-open-number"),
        pytest.param({"type": "number", "maximum": 5}, "9e-", id="negative-exponent-may-shrink"),
        pytest.param({"not": {"type": "string"}}, '"a', id="not"),
        pytest.param({"$ref": "#"}, '"a', id="a-reference-cycle-reading-no-input"),
        pytest.param({"$ref": "https://example.com/s.json"}, '"a', id="a-remote-reference"),
        pytest.param(
            {"$defs": {"s": {"$id": "s.json", "maxLength": 0}}, "$ref": "#/$defs/s"},
            '"a',
            id="under-a-nested-$id",
        ),
        pytest.param(
            {"anyOf": [{"maxLength": 1}, {"$ref": "#/nowhere"}]},
            '"abc',
            id="an-undecided-anyOf-branch",
        ),
        pytest.param(
            {"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": False},
            '{"y',
            id="open-key-with-patternProperties",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"maxLength": 1}}},
            '{"a": "toolong", "a": "',
            id="a-repeated-key-replaces-the-value",
        ),
        pytest.param({"type": "string"}, "   ", id="blank"),
    ],
)
def test_what_cannot_be_decided_stays_truncated(schema, text):
    verdict = cut(schema, text)
    assert verdict.outcome is AnswerClass.TRUNCATED, verdict.message


def test_a_number_outside_the_double_range_is_judged_by_its_bounds_only():
    assert cut({"type": "string"}, "845e3855419557194546").signature == "violation:type"
    assert (
        cut({"type": "array", "items": {"type": "string"}}, '[1e999, "x').signature
        == "violation:type"
    )  # the closed number's type still counts
    assert (
        cut({"type": "array", "maxItems": 3}, "[1e999, 2]").outcome is AnswerClass.TRUNCATED
    )  # closed, value unknown: as before


def test_a_whole_document_cut_at_the_limit_is_still_judged_in_full():
    assert (
        cut({"type": "integer", "maximum": 5}, "1438 ").signature == "violation:maximum"
    )  # the space ended the number
    assert cut({"type": "boolean"}, "tru").outcome is AnswerClass.TRUNCATED


def test_deep_nesting_and_huge_numbers_do_not_break_the_judge():
    assert cut({"type": "array", "maxItems": 0}, "[" * 5000).signature == "violation:maxItems"
    assert (
        cut({"type": "number", "maximum": 10}, "1e+" + "9" * 5000).signature == "violation:maximum"
    )
    assert cut({"type": "number", "maximum": 10}, "9" * 5000).outcome is AnswerClass.TRUNCATED

    def nested(depth: int) -> dict:
        schema: dict = {"type": "string", "maxLength": 0}
        for _ in range(depth):
            schema = {
                "anyOf": [{"type": "array", "items": schema}, {"type": "array", "items": schema}]
            }
        return schema

    six = cut(nested(6), "[" * 6 + '"x')  # every one of 2^6 ways is broken; the message stays short
    assert six.signature == "violation:maxLength" and len(six.message) < 600, six.message
    assert (
        cut(nested(13), "[" * 13 + '"x').outcome is AnswerClass.TRUNCATED
    )  # 2^13 ways: over the budget, left undecided


# --- the parser ---------------------------------------------------------------------------------


def test_the_parse_holds_complete_values_and_the_open_spine():
    root = parse_prefix('{"a": [1, {"b": "x\\n')
    assert root is not None
    assert (root.kind, root.complete, list(root.members)) == ("object", False, ["a"])
    array = root.members["a"]
    assert array.path == ("a",) and [i.complete for i in array.items] == [True, False]
    inner = array.items[1]
    string = inner.members["b"]
    assert (string.kind, string.path, string.text, string.complete) == (
        "string",
        ("a", 1, "b"),
        "x\n",
        False,
    )
    assert pointer(string.path) == "/a/1/b" and pointer(("a/b", "c~d")) == "/a~1b/c~0d"


@pytest.mark.parametrize(
    ("text", "last"),
    [
        ("[1, ", Node("pending", (1,))),
        ('{"k"', Node("pending", ("k",))),
        ('{"k": ', Node("pending", ("k",))),
        ("[tr", Node("boolean", (0,), complete=True, value=True)),
        ("[-1.5e", Node("number", (0,), text="-1.5e")),
        ("[12 ", Node("number", (0,), complete=True, value=12)),
        ('["a\\u00', Node("string", (0,), text="a")),
    ],
)
def test_the_last_value_of_a_prefix(text, last):
    root = parse_prefix(text)
    assert root is not None
    got = root.items[-1] if root.kind == "array" else list(root.members.values())[-1]
    assert (got.kind, got.path, got.complete, got.value, got.text) == (
        last.kind,
        last.path,
        last.complete,
        last.value,
        last.text,
    )


def test_an_open_key_is_kept():
    root = parse_prefix('{"a": 1, "xy')
    assert root is not None and root.open_key == "xy" and list(root.members) == ["a"]


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
        "[[]t",
        "0nu",
        "[1,]",
        "[01",
        '{"a": 1,}',
        "-Infinity",
        "-.5",
        "-e5",
        "-.",
        "-E",
        "0.e5",
        "1.e",
        "[1.E+",
    ],
)  # digits before . or e, and after . before e
def test_non_prefixes_are_refused(text):
    with pytest.raises(ValueError):
        parse_prefix(text)
    assert not is_json_prefix(text)
    assert cut({}, text).outcome is AnswerClass.INVALID_JSON


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


@FAST
@given(JSON_VALUES, st.data())
def test_every_prefix_of_a_document_parses(value, data):
    text = json.dumps(
        value, indent=data.draw(st.sampled_from([None, 1])), ensure_ascii=data.draw(st.booleans())
    )
    for end in range(len(text) + 1):
        root = parse_prefix(text[:end])
        assert (root is None) == (not text[:end].strip())
    whole = parse_prefix(text + " ")  # the space ends a number at the top too
    assert whole is not None and whole.complete and whole.value == value


# --- soundness: a prefix of a valid document is never a violation ---------------------------------


@FAST
@given(schemas_with_instances(), st.booleans(), st.sampled_from([None, 1]))
def test_no_prefix_of_a_valid_instance_is_invalid(pair, ascii_only, indent):
    schema, instance = pair
    text = json.dumps(instance, ensure_ascii=ascii_only, indent=indent)
    for end in range(len(text) + 1):
        verdict = cut(schema, text[:end])
        assert verdict.outcome is AnswerClass.TRUNCATED, (
            f"{json.dumps(schema)}\n{text[:end]!r}\n{verdict.message}"
        )
        assert prefix_violation(schema, text[:end]) is None


def _tight(value):
    """The narrowest schema ``value`` meets: every length, count and bound exactly at the value's own."""
    if value is None or isinstance(value, bool):
        return {"const": value}
    if isinstance(value, (int, float)):
        return {
            "type": "integer" if isinstance(value, int) else "number",
            "minimum": value,
            "maximum": value,
        }
    if isinstance(value, str):
        return {
            "type": "string",
            "minLength": len(value),
            "maxLength": len(value),
            "enum": [value],
            "pattern": "^" + re.escape(value) + "$",
        }
    if isinstance(value, list):
        return {
            "type": "array",
            "prefixItems": [_tight(v) for v in value],
            "items": False,
            "minItems": len(value),
            "maxItems": len(value),
        }
    return {
        "type": "object",
        "properties": {k: _tight(v) for k, v in value.items()},
        "required": list(value),
        "additionalProperties": False,
        "maxProperties": len(value),
        "propertyNames": {"enum": list(value)},
    }


@FAST
@given(JSON_VALUES, st.data())
def test_no_prefix_of_a_document_breaks_the_tightest_schema_it_meets(value, data):
    """Other instances than the strategy's witnesses (long strings, escapes, big numbers), each bound met exactly."""
    schema = data.draw(
        st.sampled_from(
            [
                _tight(value),
                {"anyOf": [{"type": "null"}, _tight(value)]},
                {"$defs": {"t": _tight(value)}, "$ref": "#/$defs/t"},
            ]
        )
    )
    assume(validate(schema, value) is None)
    text = json.dumps(
        value, ensure_ascii=data.draw(st.booleans()), indent=data.draw(st.sampled_from([None, 1]))
    )
    for end in range(len(text) + 1):
        verdict = cut(schema, text[:end])
        assert verdict.outcome is AnswerClass.TRUNCATED, (
            f"{json.dumps(schema)}\n{text[:end]!r}\n{verdict.message}"
        )


# --- end to end: the bundled suite against a server that ignores maxLength -------------------------

SUITE = Path(__file__).resolve().parents[2] / "suites" / "structured"


def _over_long(schema):
    """A string past maxLength, cut at the limit; any other schema gets a blank answer cut at once (truncated)."""
    if isinstance(schema, dict) and isinstance(schema.get("maxLength"), int):
        return '"' + "x" * (schema["maxLength"] + 5), "length"
    return " ", "length"


def test_a_cut_answer_past_maxLength_is_invalid_end_to_end(pytester):
    shutil.copytree(
        SUITE, pytester.path / "structured", ignore=shutil.ignore_patterns("__pycache__")
    )
    with FakeServer(deviations.answering(_over_long)) as server:
        result = pytester.runpytest(
            "structured/test_generated.py",
            f"--infer-endpoint={server.base_url}",
            "--infer-report-dir=report",
            "--structured-examples=20",
            "--structured-keywords=const,maxLength",
            "--structured-shrink-seconds=20",
            "-p", "no:cacheprovider",
            "-k", "response_format and not stream",
        )  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*violation:maxLength: shrunk case*",
            "*truncated output already violates the schema at /: string of *+ characters exceeds maxLength *",
        ]
    )
    (table,) = json.loads((pytester.path / "report" / "results.json").read_text())[
        "structured"
    ].values()
    assert set(table["maxLength"]) == {"invalid"}, table
    assert (
        table["all"]["invalid"] == table["maxLength"]["invalid"]
        and table["all"].get("truncated", 0) > 0
    ), table

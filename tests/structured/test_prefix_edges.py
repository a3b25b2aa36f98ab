"""Exact edge cases of the prefix judge, as examples: what the properties in test_prefix.py cannot pin.

test_prefix.py states the rules and checks soundness on generated documents; it checks messages only
in part. Here every verdict is compared whole (pointer, keyword, reason): the pointer of a violation
inside a nested value, where a quoted text or a list is cut, how a bound is written, the names
listed for additionalProperties, references, the judgement budget at its limit, and how the parser
records repeated keys, closed containers and numbers Python cannot convert.
"""

from __future__ import annotations

import pytest

from pytest_infer.structured.prefix import PrefixViolation, parse_prefix, prefix_violation


def obj(**properties) -> dict:
    return {"type": "object", "properties": properties}


def at(path: str, keyword: str, reason: str) -> PrefixViolation:
    return PrefixViolation(path, keyword, reason)


CLOSED_O = obj(
    o={"type": "object", "properties": {"a": {}, "ab": {}}, "additionalProperties": False}
)
EMPTY_O = obj(o={"type": "object", "additionalProperties": False})
ONLY_A = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
PATTERNS = {
    "type": "object",
    "patternProperties": {"^x": {}, "^y": {}},
    "additionalProperties": False,
}
P220 = (
    "p" * 220
)  # with it the first branch's "at /: ..." is 301 characters, one past the cut at 300
X77 = "x" * 77  # json.dumps([X77]) is 81 characters, one past the cut at 80
K40 = "k" * 40  # a name of 40 characters is shown whole, one of 41 is cut

# (schema, the cut answer, the whole verdict)
VIOLATIONS = {
    # an open number's bound, as _show writes it: plain from 1e-11 to 1e19, with an exponent outside
    "bound-1e20-with-exponent": (
        {"maximum": 1},
        "1e20",
        at(
            "",
            "maximum",
            "a number starting '1e20' can only end at least 1.0e+20, beyond maximum 1",
        ),
    ),
    "bound-1e19-plain": (
        {"maximum": 1},
        "1e19",
        at(
            "",
            "maximum",
            "a number starting '1e19' can only end at least 10000000000000000000, beyond maximum 1",
        ),
    ),
    "bound-1e-12-with-exponent": (
        {"minimum": 1},
        "1e-12",
        at(
            "",
            "minimum",
            "a number starting '1e-12' can only end at most 1.0e-12, beyond minimum 1",
        ),
    ),
    "bound-1e-11-plain": (
        {"minimum": 1},
        "1e-11",
        at(
            "",
            "minimum",
            "a number starting '1e-11' can only end at most 0.00000000001, beyond minimum 1",
        ),
    ),
    "zero-mantissa-stays-zero": (
        {"minimum": 1},
        "0e5",
        at("", "minimum", "a number starting '0e5' can only end at most 0, beyond minimum 1"),
    ),
    "negative-after-e-minus-has-a-floor": (
        {"maximum": -1},
        "-5e-1",
        at(
            "", "maximum", "a number starting '-5e-1' can only end at least -0.5, beyond maximum -1"
        ),
    ),
    "negative-after-e-has-a-ceiling": (
        {"minimum": 0},
        "-5e1",
        at("", "minimum", "a number starting '-5e1' can only end at most -50, beyond minimum 0"),
    ),
    "float-bound": (
        {"maximum": 10.5},
        "5e3",
        at(
            "", "maximum", "a number starting '5e3' can only end at least 5000, beyond maximum 10.5"
        ),
    ),
    "closed-number-past-the-double-range": (
        {"items": {"maximum": 10}},
        "[1e999 ",
        at(
            "/0",
            "maximum",
            "a number starting '1e999' can only end at least 1.0e+999, beyond maximum 10",
        ),
    ),
    # enum / const: the allowed values in JSON, non-ASCII as written, cut after 80 characters
    "enum-other-type-non-ascii": (
        {"enum": ["café", "thé"]},
        "[",
        at("", "enum", 'an array has begun here, the schema allows only ["café", "thé"]'),
    ),
    "enum-other-type-81-chars": (
        {"enum": [X77]},
        "1",
        at("", "enum", f'a number has begun here, the schema allows only ["{X77}"...'),
    ),
    "enum-string-non-ascii": (
        {"enum": ["café", "thé"]},
        '"x',
        at("", "enum", 'a string starting \'x\' can no longer become any of ["café", "thé"]'),
    ),
    "enum-string-81-chars": (
        {"enum": [1, X77]},
        '"y',
        at("", "enum", f"a string starting 'y' can no longer become any of [\"{X77}\"..."),
    ),
    "enum-trailing-high-surrogate-not-final": (
        {"enum": ["xy"]},
        '"ab\\ud83d',
        at("", "enum", "a string starting 'ab' can no longer become any of [\"xy\"]"),
    ),
    # a quoted name is cut after 40 characters
    "name-of-40-shown-whole": (
        ONLY_A,
        f'{{"{K40}": ',
        at(
            "",
            "additionalProperties",
            f"property '{K40}' is not allowed (additionalProperties is false; properties: 'a')",
        ),
    ),
    "name-of-41-cut": (
        ONLY_A,
        f'{{"{K40}k": ',
        at(
            "",
            "additionalProperties",
            f"property '{K40}...' is not allowed (additionalProperties is false; properties: 'a')",
        ),
    ),
    # objects below the top: the pointer names the object; the allowed names are listed, or "none"
    "extra-key-lists-names": (
        CLOSED_O,
        '{"o": {"b": ',
        at(
            "/o",
            "additionalProperties",
            "property 'b' is not allowed (additionalProperties is false; properties: 'a', 'ab')",
        ),
    ),
    "extra-key-no-names": (
        EMPTY_O,
        '{"o": {"b": ',
        at(
            "/o",
            "additionalProperties",
            "property 'b' is not allowed (additionalProperties is false; properties: none)",
        ),
    ),
    "open-key-lists-names": (
        CLOSED_O,
        '{"o": {"x',
        at(
            "/o",
            "additionalProperties",
            "a property name starting 'x' is not allowed (additionalProperties is false; properties: 'a', 'ab')",
        ),
    ),
    "open-key-no-names": (
        EMPTY_O,
        '{"o": {"x',
        at(
            "/o",
            "additionalProperties",
            "a property name starting 'x' is not allowed (additionalProperties is false; properties: none)",
        ),
    ),
    "maxProperties-nested": (
        obj(o={"type": "object", "maxProperties": 1}),
        '{"o": {"a": 1, "b": ',
        at("/o", "maxProperties", "object of 2+ properties exceeds maxProperties 1"),
    ),
    "propertyNames-nested": (
        obj(o={"type": "object", "propertyNames": {"maxLength": 2}}),
        '{"o": {"abc": ',
        at("/o", "propertyNames", "property name 'abc': 'abc' is too long"),
    ),
    "propertyNames-false": (
        {"type": "object", "propertyNames": False},
        '{"a": 1, ',
        at("", "propertyNames", "property name 'a': False schema does not allow 'a'"),
    ),
    "patternProperties-value": (
        {"type": "object", "patternProperties": {"^x": {"maxLength": 1}}},
        '{"xa": "abc',
        at("/xa", "maxLength", "string of 3+ characters exceeds maxLength 1"),
    ),
    "key-matching-no-pattern-is-extra": (
        PATTERNS,
        '{"xa": 1, "zz": ',
        at(
            "",
            "additionalProperties",
            "property 'zz' is not allowed (additionalProperties is false; properties: none)",
        ),
    ),
    "false-under-a-begun-value": (
        obj(a=False),
        '{"a": "x',
        at("/a", "false", "a value has begun where the schema allows none (false)"),
    ),
    # arrays below the top; a closed array (its count is final) has no "+"
    "maxItems-nested": (
        obj(a={"type": "array", "maxItems": 1}),
        '{"a": [1, 2',
        at("/a", "maxItems", "array of 2+ items exceeds maxItems 1"),
    ),
    "items-false-nested": (
        obj(a={"type": "array", "prefixItems": [{}], "items": False}),
        '{"a": [1, 2',
        at("/a", "items", "item 1 has begun, but items is false after 1 prefixItems"),
    ),
    "uniqueItems-nested": (
        obj(a={"type": "array", "uniqueItems": True}),
        '{"a": [1, 1, ',
        at(
            "/a",
            "uniqueItems",
            "the complete items so far repeat a value: [1, 1] has non-unique elements",
        ),
    ),
    "closed-array-past-the-double-range": (
        {"type": "array", "maxItems": 0},
        "[1e999]",
        at("", "maxItems", "array of 1 items exceeds maxItems 0"),
    ),
    "closed-array-past-python-int-digits": (
        {"type": "array", "maxItems": 0},
        "[" + "9" * 5000 + "]",
        at("", "maxItems", "array of 1 items exceeds maxItems 0"),
    ),
    # $id: the root's own is judged
    "root-with-id": (
        {"$id": "https://example.com/root", "maxLength": 1},
        '"abc',
        at("", "maxLength", "string of 3+ characters exceeds maxLength 1"),
    ),
    # local references
    "ref-to-root": (
        {"type": "array", "maxItems": 1, "items": {"$ref": "#"}},
        "[[1, 2",
        at("/0", "maxItems", "array of 2+ items exceeds maxItems 1"),
    ),
    "ref-escaped-slash": (
        {"$defs": {"a/b": {"maxLength": 0}}, "$ref": "#/$defs/a~1b"},
        '"x',
        at("", "maxLength", "string of 1+ characters exceeds maxLength 0"),
    ),
    "ref-escaped-tilde": (
        {"$defs": {"c~d": {"maxLength": 0}}, "$ref": "#/$defs/c~0d"},
        '"x',
        at("", "maxLength", "string of 1+ characters exceeds maxLength 0"),
    ),
    "ref-list-index": (
        {"prefixItems": [{"maxLength": 0}], "items": {"$ref": "#/prefixItems/0"}},
        '["", "x',
        at("/1", "maxLength", "string of 1+ characters exceeds maxLength 0"),
    ),
    "ref-chain": (
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"maxLength": 0}}, "$ref": "#/$defs/a"},
        '"x',
        at("", "maxLength", "string of 1+ characters exceeds maxLength 0"),
    ),
    "ref-cycle-beside-a-rule": (
        {"allOf": [{"$ref": "#"}, {"maxLength": 1}]},
        '"abc',
        at("", "maxLength", "string of 3+ characters exceeds maxLength 1"),
    ),
    "same-ref-in-two-branches": (
        {"$defs": {"s": {"maxLength": 1}}, "anyOf": [{"$ref": "#/$defs/s"}, {"$ref": "#/$defs/s"}]},
        '"abc',
        at(
            "",
            "maxLength",
            "no anyOf branch can still match (2 branches; the first: at /: string of 3+ characters exceeds"
            " maxLength 1)",
        ),
    ),
    # anyOf / oneOf
    "oneOf-after-a-passing-anyOf": (
        {"anyOf": [{"type": "string"}], "oneOf": [{"type": "integer"}, {"type": "null"}]},
        '"a',
        at(
            "",
            "type",
            "no oneOf branch can still match (2 branches; the first: at /: a string has begun here, the schema allows"
            " only integer)",
        ),
    ),
    "anyOf-first-reason-cut-at-300": (
        {
            "anyOf": [
                {"type": "object", "properties": {P220: {}}, "additionalProperties": False},
                {"type": "array"},
            ]
        },
        '{"q": ',
        at(
            "",
            "anyOf",
            "no anyOf branch can still match (2 branches; the first: at /: property 'q' is not allowed"
            f" (additionalProperties is false; properties: '{P220}'...)",
        ),
    ),
}


@pytest.mark.parametrize(
    ("schema", "text", "expected"), list(VIOLATIONS.values()), ids=list(VIOLATIONS)
)
def test_the_exact_violation(schema, text, expected):
    """The whole verdict: a wrong pointer, keyword or shown value misleads whoever reads the report."""
    assert prefix_violation(schema, text) == expected


# (schema, a cut answer that every rule leaves undecided)
UNDECIDED = {
    "infinite-bound-not-judged": ({"minimum": float("inf")}, "-3"),
    "nan-bound-not-judged": ({"maximum": float("nan")}, "5e3"),
    "high-surrogate-d800-may-pair": ({"enum": ["a\U00010000"]}, '"a\\ud800'),
    "high-surrogate-dbff-may-pair": ({"enum": ["a\U0010fc00"]}, '"a\\udbff'),
    "enum-not-a-list": ({"enum": "abc"}, "["),
    "subschema-not-a-schema": ({"properties": {"a": 1}}, '{"a": "x'),
    "nested-id": (obj(a={"$id": "https://example.com/a", "maxLength": 0}), '{"a": "x'),
    "ref-through-a-nested-id": (
        {
            "$defs": {"s": {"$id": "https://example.com/s", "properties": {"a": {"maxLength": 0}}}},
            "$ref": "#/$defs/s/properties/a",
        },
        '"x',
    ),
    "ref-not-a-string": ({"$ref": 5}, '"a'),
    "ref-index-past-the-list": (
        {"prefixItems": [{"maxLength": 0}], "items": {"$ref": "#/prefixItems/1"}},
        '["", "x',
    ),
    "ref-index-not-a-number": (
        {"prefixItems": [{"maxLength": 0}], "items": {"$ref": "#/prefixItems/first"}},
        '["", "x',
    ),
    "empty-anyOf": ({"anyOf": []}, '"a'),
    "keys-matching-patterns": (PATTERNS, '{"xa": 1, "yb": 2, '),
    "closed-array-item-of-unknown-value": (
        {"type": "array", "items": {"type": "number"}},
        "[1e999]",
    ),
}


@pytest.mark.parametrize(("schema", "text"), list(UNDECIDED.values()), ids=list(UNDECIDED))
def test_undecided_without_error(schema, text):
    """Odd schemas (non-finite bounds, malformed keywords, foreign resources) are left alone, never a crash."""
    assert prefix_violation(schema, text) is None


def test_the_budget_allows_exactly_5000_schema_value_pairs():
    """One check for the top plus one per branch: 4999 branches fit the budget, 5000 are undecided."""
    branch = {"type": "integer"}
    expected = at(
        "",
        "type",
        "no anyOf branch can still match (4999 branches; the first: at /: a string has begun here, the schema allows"
        " only integer)",
    )
    assert prefix_violation({"anyOf": [branch] * 4999}, '"a') == expected
    assert prefix_violation({"anyOf": [branch] * 5000}, '"a') is None


@pytest.mark.parametrize("text", ["10e999999", "[10e999999", "-99.5e+999999"])
def test_an_exponent_past_the_decimal_default_is_judged_not_raised(text):
    """The default decimal context overflows past 1e999999; a bound that large is still a bound."""
    assert prefix_violation({"type": ["number", "array"]}, text) is None
    assert prefix_violation({"maximum": 5, "minimum": 0}, text.lstrip("[")) is not None


def test_a_parse_or_nothing_can_be_judged():
    """prefix_violation takes a parse as well as text, and None as no answer."""
    schema = obj(a={"type": "string", "maxLength": 1})
    assert prefix_violation(schema, parse_prefix('{"a": "abc')) == at(
        "/a", "maxLength", "string of 3+ characters exceeds maxLength 1"
    )
    assert prefix_violation(schema, None) is None


# --- the parser ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("X", "no JSON value starts at 0"),
        ('"\\q', "not a JSON string at 0"),
        ("[1-", "not the start of a JSON number at 1"),
        ("[01,", "not a JSON number at 1"),
    ],
)
def test_a_refusal_says_what_and_where(text, message):
    """A text that starts no JSON document is refused with the reason and the offset."""
    with pytest.raises(ValueError) as refused:
        parse_prefix(text)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    "number", ["1e999", "9" * 5000], ids=["past-the-double-range", "past-python-int-digits"]
)
def test_a_number_of_unknown_value_keeps_its_text_and_closes_its_array(number):
    """Such a number is kept as text (judged by its bounds); the array it is in closed, its value unknown."""
    root = parse_prefix(f"[{number}]")
    assert root is not None
    assert (root.kind, root.complete, root.closed, root.value) == ("array", False, True, None)
    (item,) = root.items
    assert (item.kind, item.path, item.complete, item.closed, item.text, item.value) == (
        "number",
        (0,),
        False,
        True,
        number,
        None,
    )


@pytest.mark.parametrize("text", ["1e2 ", "1E2 "])
def test_an_exponent_of_either_case_makes_a_float(text):
    """`e` and `E` both mark a float; read as an int the number would be lost as unknown."""
    root = parse_prefix(text)
    assert (
        root is not None and root.complete and root.value == 100.0 and isinstance(root.value, float)
    )


@pytest.mark.parametrize(
    ("text", "kind", "value"), [('"ab"', "string", "ab"), ("[]", "array", []), ("{}", "object", {})]
)
def test_a_complete_value_keeps_its_kind(text, kind, value):
    """A finished string or closed container is still a node of its JSON type."""
    root = parse_prefix(text)
    assert root is not None and (root.kind, root.complete, root.value) == (kind, True, value)


@pytest.mark.parametrize(
    ("text", "complete", "value", "written"),
    [('{"a": 1, "b": 2, "a": 3, ', True, 3, ""), ('{"a": 1, "b": 2, "a": "x', False, None, "x")],
)
def test_a_repeated_key_moves_to_the_end(text, complete, value, written):
    """The members keep the order the values were written in: the last one is the latest (maybe open) value."""
    root = parse_prefix(text)
    assert root is not None and list(root.members) == ["b", "a"]
    last = root.members["a"]
    assert (last.complete, last.value, last.text) == (complete, value, written)

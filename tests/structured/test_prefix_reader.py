"""What mutation testing of the prefix reader found untested: the survivors that some input tells apart.

Each test holds a behaviour a surviving mutant of ``pytest_infer/structured/prefix.py`` changed
without a test noticing (docs/mutation-survivors.md, "The prefix reader"): the parser's refusals
past the first value, a value written right after the ``:``, the kind of a complete literal, and
the bound shown for an exponent of more than six digits.
"""

from __future__ import annotations

import pytest

from pytest_infer.structured.prefix import PrefixViolation, parse_prefix, prefix_violation


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 2", "extra data at 2"),
        ("[1 2", "expected ',' or ']' at 3"),
        ('{"a": 1 2', "expected ',' or '}' at 8"),
        ("{1", "expected a key at 1"),
        ('{"a" 1', "expected ':' at 5"),
    ],
    ids=["after-the-document", "between-items", "between-members", "not-a-key", "no-colon"],
)
def test_a_refusal_inside_a_document_says_what_and_where(text, message):
    """Past the first value too, a text that is no JSON prefix is refused with the reason and the offset."""
    with pytest.raises(ValueError) as refused:
        parse_prefix(text)
    assert str(refused.value) == message


def test_a_value_right_after_the_colon_is_read_whole():
    """``"a":1`` without a space: the value's first character is not skipped with the colon."""
    root = parse_prefix('{"a":1}')
    assert root is not None and root.complete and root.value == {"a": 1}
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1}}}
    assert prefix_violation(schema, '{"a":"xyz') == PrefixViolation(
        "/a", "maxLength", "string of 3+ characters exceeds maxLength 1"
    )


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("null", "null", None),
        ("nu", "null", None),
        ("true", "boolean", True),
        ("f", "boolean", False),
    ],
)
def test_a_complete_literal_keeps_its_kind(text, kind, value):
    """``null`` is of kind null and ``true``/``false`` of kind boolean, also with their letters cut."""
    root = parse_prefix(text)
    assert root is not None and (root.kind, root.complete, root.value) == (kind, True, value)


@pytest.mark.parametrize(
    ("schema", "text", "reason"),
    [
        (
            {"maximum": 1},
            "1e1000000",
            "a number starting '1e1000000' can only end at least 1.0e+100000, beyond maximum 1",
        ),
        (
            {"minimum": 1},
            "1e-1000000",
            "a number starting '1e-1000000' can only end at most 1.0e-100000, beyond minimum 1",
        ),
    ],
    ids=["maximum", "minimum"],
)
def test_an_exponent_past_six_digits_is_shown_by_its_first_six(schema, text, reason):
    """Only six exponent digits are read: the bound shown is weaker than the number but still true."""
    keyword = next(iter(schema))
    assert prefix_violation(schema, text) == PrefixViolation("", keyword, reason)

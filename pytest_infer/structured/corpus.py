"""Fixed schemas: one named case per known bug class, and schemas a server must survive.

Kept as data so the suite, the plugin's own tests and a person with curl all
use the very same schemas. Bug references are in docs/structured-output.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SchemaCase:
    """A hand-written schema for one bug class; ``instance`` is a short value it accepts (the
    budget).
    """

    schema: Any
    instance: Any
    bug: str


CORPUS: dict[str, SchemaCase] = {
    "length-with-pattern": SchemaCase(
        {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "ab",
        "length bounds dropped next to pattern (xgrammar#749, #895; sglang#37707; vllm#45592)",
    ),
    "length-with-format": SchemaCase(
        {"type": "string", "format": "date-time", "maxLength": 20},
        "2024-01-01T00:00:00Z",
        "length bounds dropped next to format (xgrammar#749 class)",
    ),
    "multi-branch-allOf": SchemaCase(
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
            ]
        },
        {"a": 0, "b": True},
        "all but one allOf branch silently ignored (vllm#56556)",
    ),
    "type-list": SchemaCase(
        {"type": ["string", "integer"], "maxLength": 3, "maximum": 9},
        0,
        "a list of types bypassed the backend's keyword check (vllm PR #48416)",
    ),
    "absent-type": SchemaCase(
        {"properties": {"a": {"const": 1}}, "required": ["a"], "additionalProperties": False},
        {"a": 1},
        "a schema without type bypassed the backend's keyword check (vllm#57550)",
    ),
    "escapes-under-pattern": SchemaCase(
        {"type": "string", "pattern": '^"[a-z]"$', "maxLength": 3},
        '"a"',
        'quotes must be escaped (\\") to match; escapes were impossible under string constraints '
        "(xgrammar#800)",
    ),
    "newline-under-pattern": SchemaCase(
        {"type": "string", "pattern": "^[a-z]\\n[a-z]$", "maxLength": 3},
        "a\nb",
        "a newline (\\n escape) required by a pattern under a length bound (xgrammar#800)",
    ),
    "unicode-escape-const": SchemaCase(
        {"const": "caf\u00e9 \u2603"},
        "caf\u00e9 \u2603",
        "non-ASCII text must come out exactly (xgrammar#800 class)",
    ),
    "empty-schema": SchemaCase(
        {}, 0, "the empty schema looped on one unbounded number until max_tokens (vllm#52011)"
    ),
    "enum-behind-ref": SchemaCase(
        {
            "$defs": {"colour": {"enum": ["red", "green"]}},
            "type": "object",
            "properties": {"colour": {"$ref": "#/$defs/colour"}},
            "required": ["colour"],
            "additionalProperties": False,
        },
        {"colour": "red"},
        "enum behind $ref produced unconstrained objects (llama.cpp#8073)",
    ),
    "schema-not-the-wrapper": SchemaCase(
        {"type": "integer", "minimum": 0, "maximum": 9},
        0,
        "trtllm-serve 1.2.1 used the {name, schema} wrapper as the schema: the answer must be the "
        "integer itself",
    ),
    "nullable-union": SchemaCase(
        {"anyOf": [{"type": "string", "maxLength": 4}, {"type": "null"}]},
        None,
        "nullable written as anyOf with null",
    ),
    "recursive-linked-list": SchemaCase(
        {
            "$defs": {
                "n": {
                    "type": "object",
                    "properties": {
                        "v": {"type": "integer"},
                        "next": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]},
                    },
                    "required": ["v", "next"],
                    "additionalProperties": False,
                }
            },
            "$ref": "#/$defs/n",
        },
        {"v": 0, "next": None},
        "recursion through $ref with a null base case",
    ),
}

# An invalid schema must be refused (4xx): crashing (vllm#17248; sglang#4574, #7639; TGI#2280)
# or answering 200 with unconstrained text (llama.cpp#19051) are both failures.
INVALID_SCHEMA = {"type": "object", "properties": {"a": {"type": "strnig"}}, "required": ["a"]}


def _nested(depth: int, leaf: Any, wrap) -> Any:
    node = leaf
    for _ in range(depth):
        node = wrap(node)
    return node


BAD_SCHEMAS: dict[str, tuple[str, Any]] = {
    # malformed: not a valid JSON Schema (or one no validator can finish); the answer should be a
    # clean 4xx
    "type-typo": ("malformed", {"type": "strnig"}),
    "properties-not-an-object": ("malformed", {"type": "object", "properties": 5}),
    "negative-minLength": ("malformed", {"type": "string", "minLength": -1}),
    "dangling-ref": ("malformed", {"$ref": "#/$defs/missing"}),
    "broken-pattern": ("malformed", {"type": "string", "pattern": "([a-z"}),
    "schema-is-a-string": ("malformed", "just a string"),
    "self-reference-without-base": (
        "malformed",
        {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    ),
    # unsatisfiable: valid, but no value matches; HTTP 200 can only mean unconstrained (failed open)
    # output
    "minLength-above-maxLength": (
        "unsatisfiable",
        {"type": "string", "minLength": 5, "maxLength": 2},
    ),
    "minimum-above-maximum": ("unsatisfiable", {"type": "integer", "minimum": 5, "maximum": 1}),
    "contradicting-allOf": ("unsatisfiable", {"allOf": [{"type": "string"}, {"type": "integer"}]}),
    "empty-enum": ("unsatisfiable", {"enum": []}),
    "not-anything": ("unsatisfiable", {"not": {}}),
    "endless-required-recursion": (
        "unsatisfiable",
        {
            "$defs": {
                "a": {
                    "type": "object",
                    "properties": {"b": {"$ref": "#/$defs/a"}},
                    "required": ["b"],
                }
            },
            "$ref": "#/$defs/a",
        },
    ),
    # huge: valid and satisfiable, but large to compile
    "300-required-properties": (
        "huge",
        {
            "type": "object",
            "properties": {f"p{i}": {"type": "integer"} for i in range(300)},
            "required": [f"p{i}" for i in range(300)],
        },
    ),
    "2000-value-enum": ("huge", {"enum": [f"value-{i}" for i in range(2000)]}),
    # deeply nested / recursive
    "arrays-nested-64-deep": (
        "deep",
        _nested(64, {"type": "integer"}, lambda n: {"type": "array", "items": n, "maxItems": 1}),
    ),
    "objects-nested-32-deep": (
        "deep",
        _nested(
            32,
            {"type": "integer"},
            lambda n: {
                "type": "object",
                "properties": {"a": n},
                "required": ["a"],
                "additionalProperties": False,
            },
        ),
    ),
    "recursive-tree": (
        "deep",
        {
            "$defs": {
                "t": {
                    "type": "object",
                    "properties": {
                        "v": {"type": "integer"},
                        "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}},
                    },
                    "required": ["v"],
                }
            },
            "$ref": "#/$defs/t",
        },
    ),
}

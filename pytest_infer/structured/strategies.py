"""Hypothesis strategies for JSON Schemas (Draft 2020-12) that are valid and satisfiable by
construction.

Every schema is drawn together with an instance of it (its *witness*): each
keyword is drawn around a witness value it must accept (``minLength`` at most
the witness's length, ``maximum`` at least its value, ...). That keeps every
schema satisfiable without ``.filter`` (which would stop Hypothesis from
shrinking well), and the witness gives the token budget the answer must fit.
Optional keywords are drawn with ``st.booleans()`` and kinds are ordered
simplest first, so a failing schema shrinks towards one keyword on one type.

    from pytest_infer.structured import schemas

    @given(schemas(keywords={"type", "properties", "required", "maxLength"}))
    def test_my_server(schema): ...
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
    }
)
# The shortest value of each format (what the witness uses).
FORMATS = {
    "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z",
    "email": "a@b.io",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "ipv4": "0.0.0.0",
    "uri": "http://a.io",
}
CHAR_CLASSES = (("[a-z]", "a"), ("[0-9]", "7"), ("[A-Z]", "Q"), ("[a-f0-9]", "c"))
PROPERTY_NAMES = ("a", "b", "id", "name", "value", "tags")
# Scalars for enum/const; some need escaping in JSON (quote, backslash, newline, non-ASCII).
SCALARS = (
    "a",
    0,
    True,
    None,
    "b c",
    1,
    -1,
    2.5,
    False,
    'say "hi"',
    "back\\slash",
    "two\nlines",
    "ü",
    "",
)
SIMPLE_TYPES = ("string", "integer", "boolean", "null", "number")
DEFAULT_MAX_DEPTH = 2


def _kinds(allowed: frozenset[str]) -> dict[str, tuple[frozenset[str], bool]]:
    """kind -> (keywords it needs, whether it nests). Ordered simplest first: shrinking goes
    left.
    """
    return {
        "string": (frozenset(), False),
        "integer": (frozenset(), False),
        "boolean": (frozenset({"type"}), False),
        "null": (frozenset({"type"}), False),
        "number": (frozenset(), False),
        "enum": (frozenset({"enum"}), False),
        "const": (frozenset({"const"}), False),
        "type-list": (frozenset({"type"}), False),
        # string or number keywords without "type": bypassed checks
        "untyped": (frozenset({"type"}), False),
        "object": (frozenset(), True),
        "array": (frozenset(), True),
        "nullable": (frozenset({"anyOf", "type"}), True),
        "anyOf": (frozenset({"anyOf"}), True),
        "oneOf": (frozenset({"oneOf", "type"}), True),
        "allOf": (frozenset({"allOf"}), True),
        "ref": (frozenset({"$ref"}), True),
        "recursive": (frozenset({"$ref", "properties", "required", "anyOf", "type"}), True),
    }


@dataclass(slots=True)
class _Context:
    draw: Callable[[st.SearchStrategy[Any]], Any]
    allowed: frozenset[str]
    defs: dict[str, dict] = field(default_factory=dict)

    def maybe(self, keyword: str) -> bool:
        """Use an optional keyword? Shrinks to "no"."""
        return keyword in self.allowed and self.draw(st.booleans())

    def typed(self, schema: dict, type_: str) -> dict:
        """Add ``type`` unless forbidden (the ``untyped`` kind covers schemas without it)."""
        return {"type": type_, **schema} if "type" in self.allowed else schema


def _string(c: _Context) -> tuple[dict, Any]:
    schema: dict[str, Any] = {}
    if "format" in c.allowed and c.draw(st.booleans()):
        fmt = c.draw(st.sampled_from(sorted(FORMATS)))
        witness = FORMATS[fmt]
        schema["format"] = fmt
    else:
        length = c.draw(st.integers(0, 6))
        regex, char = c.draw(st.sampled_from(CHAR_CLASSES))
        witness = char * length
        if c.maybe("pattern"):
            low = c.draw(st.integers(0, length))
            high = length + c.draw(st.integers(0, 3))
            schema["pattern"] = c.draw(
                st.sampled_from(
                    [
                        f"^{regex}*$",
                        f"^{regex}{{{low},{high}}}$",
                        f"^{regex}+$" if length else f"^{regex}*$",
                    ]
                )
            )
    if c.maybe("minLength"):
        schema["minLength"] = c.draw(st.integers(0, len(witness)))
    if c.maybe("maxLength"):
        schema["maxLength"] = len(witness) + c.draw(st.integers(0, 4))
    return c.typed(schema, "string"), witness


def _numeric(c: _Context, type_: str) -> tuple[dict, Any]:
    schema: dict[str, Any] = {}
    witness: int | float = c.draw(st.integers(-20, 20))
    if type_ == "number":
        # binary fractions: exact in JSON and float
        witness = witness / c.draw(st.sampled_from([1, 2, 4]))
    if c.maybe("multipleOf"):
        step = c.draw(st.sampled_from([2, 3, 5, 10] if type_ == "integer" else [0.5, 2, 0.25]))
        witness = round(witness) * step
        schema["multipleOf"] = step
    if (kind := c.draw(st.sampled_from(["", "minimum", "exclusiveMinimum"]))) and kind in c.allowed:
        schema[kind] = witness - c.draw(st.integers(0 if kind == "minimum" else 1, 10))
    if (kind := c.draw(st.sampled_from(["", "maximum", "exclusiveMaximum"]))) and kind in c.allowed:
        schema[kind] = witness + c.draw(st.integers(0 if kind == "maximum" else 1, 10))
    return c.typed(schema, type_), witness


def _scalar(c: _Context, kind: str) -> tuple[dict, Any]:
    if kind == "string":
        return _string(c)
    if kind in ("integer", "number"):
        return _numeric(c, kind)
    if kind == "boolean":
        return {"type": "boolean"}, False
    if kind == "null":
        return {"type": "null"}, None
    if kind == "enum":
        values = c.draw(
            st.lists(st.sampled_from(SCALARS), min_size=1, max_size=4, unique_by=json.dumps)
        )
        return {"enum": values}, values[0]
    value = c.draw(st.sampled_from(SCALARS))
    return {"const": value}, value


def _type_list(c: _Context) -> tuple[dict, Any]:
    """One schema over two types (``"type": [a, b]``) with keywords of both: the pair bypassed
    keyword checks.
    """
    first = c.draw(st.sampled_from(SIMPLE_TYPES))
    others = [t for t in SIMPLE_TYPES if t != first and {t, first} != {"integer", "number"}]
    second = c.draw(st.sampled_from(others))
    merged: dict[str, Any] = {}
    witness = None
    for i, type_ in enumerate((first, second)):
        part, w = _scalar(c, type_)
        part.pop("type", None)
        merged.update(part)
        witness = w if i == 0 else witness
    return {"type": [first, second], **merged}, witness


def _object(c: _Context, depth: int) -> tuple[dict, Any]:
    schema: dict[str, Any] = {}
    witness: dict[str, Any] = {}
    if "properties" in c.allowed:
        names = c.draw(st.lists(st.sampled_from(PROPERTY_NAMES), max_size=3, unique=True))
        properties = {}
        required = []
        for name in names:
            properties[name], value = _node(c, depth - 1)
            if "required" in c.allowed and c.draw(st.booleans()):
                required.append(name)
                witness[name] = value
        if properties:
            schema["properties"] = properties
        if required:
            schema["required"] = required
    if "additionalProperties" in c.allowed:
        extra = c.draw(st.sampled_from(["absent", "false", "schema"]))
        if extra == "false":
            schema["additionalProperties"] = False
        elif extra == "schema":
            schema["additionalProperties"] = _node(c, depth - 1)[0]
    return c.typed(schema, "object"), witness


def _array(c: _Context, depth: int) -> tuple[dict, Any]:
    schema: dict[str, Any] = {}
    if "prefixItems" in c.allowed and c.draw(st.booleans()):
        drawn = [_node(c, depth - 1) for _ in range(c.draw(st.integers(1, 2)))]
        schema["prefixItems"] = [s for s, _ in drawn]
        witness = [w for _, w in drawn][: c.draw(st.integers(0, len(drawn)))]
        if c.maybe("items"):
            schema["items"] = False  # a closed tuple
        unique_ok = len(witness) <= 1
    else:
        witness = []
        if "items" in c.allowed and c.draw(st.booleans()):
            schema["items"], item = _node(c, depth - 1)
            witness = [item] * c.draw(st.integers(0, 2))
        unique_ok = True
    if unique_ok and c.maybe("uniqueItems"):
        schema["uniqueItems"] = True
        witness = witness[:1]
    if c.maybe("minItems"):
        schema["minItems"] = c.draw(st.integers(0, len(witness)))
    if c.maybe("maxItems"):
        schema["maxItems"] = len(witness) + c.draw(st.integers(0, 2))
    return c.typed(schema, "array"), witness


def _all_of(c: _Context, depth: int) -> tuple[dict, Any]:
    """Split one schema's keywords over 2-3 branches: each branch accepts the witness, so all do."""
    base, witness = c.draw(
        st.sampled_from([_string, lambda c: _numeric(c, "integer"), lambda c: _object(c, depth)])
    )(c)
    units: list[dict] = []
    # additionalProperties only sees its own branch's properties
    together = {"properties", "additionalProperties"}
    if together & base.keys():
        units.append({k: base[k] for k in together if k in base})
    units += [{k: v} for k, v in base.items() if k not in together]
    branches: list[dict] = [{} for _ in range(c.draw(st.integers(2, 3)))]
    for unit in units:
        branches[c.draw(st.integers(0, len(branches) - 1))].update(unit)
    return {"allOf": branches}, witness


def _one_of(c: _Context, depth: int) -> tuple[dict, Any]:
    """Branches of pairwise different JSON types, so the witness matches exactly one."""
    types = c.draw(
        st.lists(
            st.sampled_from(("string", "boolean", "null", "integer", "object", "array")),
            min_size=2,
            max_size=3,
            unique=True,
        )
    )
    branches, witness = [], None
    for i, type_ in enumerate(types):
        if type_ == "object":
            schema, w = _object(c, depth - 1)
        elif type_ == "array":
            schema, w = _array(c, depth - 1)
        else:
            schema, w = _scalar(c, type_)
        schema = {**schema, "type": type_}  # the type keeps the branches disjoint
        branches.append(schema)
        witness = w if i == 0 else witness
    return {"oneOf": branches}, witness


def _recursive(c: _Context, depth: int) -> tuple[dict, Any]:
    name = f"node{len(c.defs)}"
    ref = {"$ref": f"#/$defs/{name}"}
    c.defs[name] = {}  # reserve the name before drawing the value schema, which may add defs
    value, value_witness = _node(c, depth - 1)
    # a tree or nested list needs them; a linked list does not
    arrays = {"items", "maxItems"} <= c.allowed
    shape = c.draw(
        st.sampled_from(["linked-list", "tree", "nested"] if arrays else ["linked-list"])
    )
    if shape == "linked-list":
        c.defs[name] = {
            "type": "object",
            "properties": {"value": value, "next": {"anyOf": [ref, {"type": "null"}]}},
            "required": ["value", "next"],
        }
        witness: Any = {"value": value_witness, "next": None}
    elif shape == "tree":
        c.defs[name] = {
            "type": "object",
            "properties": {
                "value": value,
                "children": {"type": "array", "items": ref, "maxItems": 2},
            },
            "required": ["value"],
        }
        witness = {"value": value_witness}
    else:
        c.defs[name] = {"anyOf": [value, {"type": "array", "items": ref, "maxItems": 2}]}
        witness = value_witness
    return dict(ref), witness


def _node(c: _Context, depth: int) -> tuple[dict, Any]:
    kinds = [
        k
        for k, (needs, nests) in _kinds(c.allowed).items()
        if needs <= c.allowed and (depth > 0 or not nests)
    ]
    kind = c.draw(st.sampled_from(kinds))
    if kind in ("string", "integer", "number", "boolean", "null", "enum", "const"):
        return _scalar(c, kind)
    if kind == "type-list":
        return _type_list(c)
    if kind == "untyped":
        schema, witness = _scalar(c, c.draw(st.sampled_from(["string", "integer", "number"])))
        return {k: v for k, v in schema.items() if k != "type"}, witness
    if kind == "object":
        return _object(c, depth)
    if kind == "array":
        return _array(c, depth)
    if kind == "nullable":
        schema, _ = _node(c, depth - 1)
        return {"anyOf": [schema, {"type": "null"}]}, None
    if kind == "anyOf":
        first, witness = _node(c, depth - 1)
        rest = [_node(c, depth - 1)[0] for _ in range(c.draw(st.integers(1, 2)))]
        return {"anyOf": [first, *rest]}, witness
    if kind == "oneOf":
        return _one_of(c, depth)
    if kind == "allOf":
        return _all_of(c, depth)
    if kind == "ref":
        name = f"def{len(c.defs)}"
        c.defs[name] = {}
        c.defs[name], witness = _node(c, depth - 1)
        return {"$ref": f"#/$defs/{name}"}, witness
    return _recursive(c, depth)


def _allowed(keywords: Iterable[str] | None) -> frozenset[str]:
    if keywords is None:
        return KEYWORDS
    allowed = frozenset(keywords)
    if unknown := allowed - KEYWORDS:
        raise ValueError(
            f"unknown JSON-Schema keyword(s) {', '.join(sorted(unknown))}; known: "
            f"{', '.join(sorted(KEYWORDS))}"
        )
    if not allowed & {"type", "enum", "const"}:
        raise ValueError("keywords must include at least one of type, enum, const")
    if "$ref" in allowed:
        allowed |= {"$defs"}
    return allowed


def schemas_with_instances(
    *, keywords: Iterable[str] | None = None, max_depth: int = DEFAULT_MAX_DEPTH
) -> st.SearchStrategy[tuple[dict, Any]]:
    """Pairs (schema, an instance of it). ``keywords`` restricts the schema to those keywords."""
    allowed = _allowed(keywords)
    if max_depth < 0:
        raise ValueError("max_depth must be >= 0")

    @st.composite
    def drawn(draw: Callable[[st.SearchStrategy[Any]], Any]) -> tuple[dict, Any]:
        c = _Context(draw, allowed)
        schema, witness = _node(c, max_depth)
        if c.defs:
            schema = {"$defs": c.defs, **schema}
        return schema, witness

    return drawn()


def schemas(
    *, keywords: Iterable[str] | None = None, max_depth: int = DEFAULT_MAX_DEPTH
) -> st.SearchStrategy[dict]:
    """Valid, satisfiable JSON Schemas (Draft 2020-12) that shrink to one keyword on one type.

    ``keywords``: only these keywords (e.g. the ones a framework claims to support);
    ``max_depth``: how deep objects, arrays and combinators nest.
    """
    return schemas_with_instances(keywords=keywords, max_depth=max_depth).map(lambda pair: pair[0])


def token_budget(instance: Any, *, floor: int = 48, cap: int = 512) -> int:
    """``max_tokens`` for an answer: room for the instance twice over (whitespace, longer values),
    bounded.
    """
    return max(floor, min(cap, 2 * len(json.dumps(instance, ensure_ascii=False)) + 32))


def keywords_of(schema: Any) -> set[str]:
    """The rows of the keyword matrix a schema counts in: its keywords, ``format:NAME``,
    ``type-list`` for a list of types and ``recursive-$ref`` for a self-referencing definition."""
    found: set[str] = set()
    defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key not in KEYWORDS:
                continue
            if key == "format":
                found.add(f"format:{value}")
            else:
                found.add(key)
            if key == "type" and isinstance(value, list):
                found.add("type-list")
            if key in ("properties", "$defs"):
                for sub in value.values() if isinstance(value, dict) else ():
                    walk(sub)
            elif key not in ("enum", "const", "required"):
                walk(value)

    walk(schema)
    if any(_refers_to(defs, name, {name}) for name in defs):
        found.add("recursive-$ref")
    return found


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        out = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        return out.union(*(_refs(v) for k, v in node.items() if k not in ("enum", "const")))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def _refers_to(defs: dict, start: str, target: set[str], seen: set[str] | None = None) -> bool:
    seen = seen if seen is not None else set()
    for name in _refs(defs.get(start)):
        if name in target:
            return True
        if name not in seen:
            seen.add(name)
            if _refers_to(defs, name, target, seen):
                return True
    return False

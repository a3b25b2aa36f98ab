"""Prefix-aware judging of a cut-off answer: has what was written already broken the schema?

An answer cut at the token limit (``finish_reason: "length"``) is the start of some JSON document.
``parse_prefix`` reads such a start into a tree of :class:`Node`: the values already complete, and
the spine of values still open (arrays, objects, a key, a string, a number), each with its path.
``prefix_violation`` then asks whether *every* way of finishing the text breaks the schema; only
then is the cut answer a violation (``AnswerClass.VIOLATION``) rather than a truncation.

Soundness comes first: whatever cannot be decided for every continuation is left alone (no
violation), because a false ``invalid`` would blame a backend for a budget that was too small.
What is decided:

- a complete value (a closed container, a finished string, number, key, ``true``/``false``/``null``
  even with its letters cut): the whole schema at its path, through ``jsonschema``;
- an open value: ``type`` (its first character fixes it), ``enum``/``const`` (an open string that
  is no longer the start of any allowed string, or a value of a type no allowed value has),
  ``maxLength`` (characters already written), ``maxItems`` (items begun), ``maxProperties``,
  ``uniqueItems`` (two complete items equal), keys not allowed by ``additionalProperties: false``
  (a complete key, or an open key that no allowed name starts with), ``propertyNames`` on complete
  keys, ``items: false`` past ``prefixItems``, and bounds an open number can no longer meet;
- ``$ref`` (local ``#/...`` pointers), ``allOf`` (any branch broken), ``anyOf``/``oneOf`` (every
  branch broken).

Left undecided: ``pattern``, ``format`` and ``minLength`` on an open string; ``minItems``,
``required``, ``minProperties`` on an open container; ``multipleOf`` and integer-ness of an open
number (``1.5`` may become ``1.5e1``); ``not``, ``if``/``then``/``else``, ``contains``,
``dependent*``, ``unevaluated*`` on an open value; references other than local JSON pointers, and
any subschema under a nested ``$id``.

One convention: a member's value is judged as written. JSON text may repeat a key and Python's
parser keeps the last one, so ``{"a": "too long", "a": "ok"}`` would pass; RFC 8259 leaves repeated
names undefined, and a cut answer is not given credit for a repeat that has not been written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import MAX_EMAX, MIN_EMIN, Decimal, localcontext
from typing import Any
from urllib.parse import unquote

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

__all__ = ["Node", "PrefixViolation", "parse_prefix", "pointer", "prefix_violation"]

Path = tuple[str | int, ...]

_WS = re.compile(r"[ \t\n\r]*")
_STRING_BODY = re.compile(r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')
_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")
_NUMBER_CHARS = re.compile(r"[-+0-9.eE]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_OPEN_NUMBER = re.compile(r"(-?)((?:0|[1-9]\d*)?)(?:\.(\d*))?(?:([eE])([+-]?)(\d*))?")
_LITERALS: dict[str, tuple[str, Any]] = {
    "t": ("true", True),
    "f": ("false", False),
    "n": ("null", None),
}
_CLOSERS = {"array": "]", "object": "}"}
_BUDGET = 5000  # schema/value pairs one judgement may visit (nested anyOf multiplies them)


@dataclass(slots=True, eq=False)
class Node:
    """One value of a JSON prefix, at ``path`` (keys and indexes from the top).

    ``kind`` is its JSON type (``object``, ``array``, ``string``, ``number``, ``boolean``, ``null``)
    or ``pending``: a value the text has made necessary (after ``,`` in an array, after a key) but
    not begun. ``complete`` means ``value`` is final: a closed container, a finished string or
    number, or a literal (``tr`` can only become ``true``). Otherwise the node is open: ``text``
    holds an open string's characters so far (decoded) or an open number as written; ``items`` an
    array's items (every one complete but perhaps the last), ``members`` an object's complete keys
    with their values (the last occurrence of a repeated key), ``open_key`` a key still being
    written. ``closed``: a container that did close but whose value is not known (it holds a number
    outside the double range); it is judged like an open one, which is sound.
    """

    kind: str
    path: Path
    complete: bool = False
    value: Any = None
    text: str = ""
    items: list[Node] = field(default_factory=list)
    members: dict[str, Node] = field(default_factory=dict)
    open_key: str | None = None
    closed: bool = False


@dataclass(frozen=True, slots=True)
class PrefixViolation:
    """What the prefix already breaks: the keyword, where (a JSON pointer), and why."""

    path: str
    keyword: str
    reason: str

    @property
    def message(self) -> str:
        return f"truncated output already violates the schema at {self.path or '/'}: {self.reason}"


def pointer(path: Path) -> str:
    """The JSON pointer (RFC 6901) of a path: ``("a", 0)`` -> ``/a/0``; the top is ``""``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


# ---------------------------------------------------------------------------------------------
# The prefix parser


@dataclass(slots=True, eq=False)
class _Frame:
    node: Node
    # array: first, next (after ","), after (after an item); object: also colon, value
    state: str = "first"
    key: str = ""
    values: Any = None  # the Python value built so far (list or dict)
    known: bool = True  # every child's value is known


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.stack: list[_Frame] = []

    def parse(self) -> Node | None:
        text = self.text
        self._ws()
        if self.pos == len(text):
            return None
        node, is_open = self._value(())
        while True:
            if node is not None:
                if is_open:  # the text ended inside a string or number
                    return self._finish(node)
                if not self.stack:  # the whole document is here
                    self._ws()
                    if self.pos != len(text):
                        raise ValueError(f"extra data at {self.pos}")
                    return node
                self._attach(node)
            frame = self.stack[-1]
            self._ws()
            if self.pos == len(text):
                return self._finish(self._pending(frame))
            char = text[self.pos]
            kind = frame.node.kind
            if frame.state in ("first", "after") and char == _CLOSERS[kind]:
                self.pos += 1
                node, is_open = self._close(), False
                continue
            if frame.state == "after":
                if char != ",":
                    raise ValueError(f"expected ',' or {_CLOSERS[kind]!r} at {self.pos}")
                self.pos += 1
                frame.state = "next"
                node = None
                continue
            if kind == "array":
                node, is_open = self._value((*frame.node.path, len(frame.node.items)))
                continue
            if frame.state in ("first", "next"):  # an object wants a key
                if char != '"':
                    raise ValueError(f"expected a key at {self.pos}")
                key, done = self._string()
                if not done:
                    frame.node.open_key = key
                    return self._finish(None)
                frame.key, frame.state, node = key, "colon", None
                continue
            if frame.state == "colon":
                if char != ":":
                    raise ValueError(f"expected ':' at {self.pos}")
                self.pos += 1
                frame.state, node = "value", None
                continue
            node, is_open = self._value((*frame.node.path, frame.key))

    def _ws(self) -> None:
        match = _WS.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def _value(self, path: Path) -> tuple[Node | None, bool]:
        """Read one value at ``pos``: (a node, whether it is open at the end); (None, False) if a
        container opened.
        """
        text, char = self.text, self.text[self.pos]
        if char in "[{":
            self.pos += 1
            kind = "array" if char == "[" else "object"
            self.stack.append(_Frame(Node(kind, path), values=[] if kind == "array" else {}))
            return None, False
        if char == '"':
            value, done = self._string()
            return (
                (Node("string", path, complete=True, value=value), False)
                if done
                else (Node("string", path, text=value), True)
            )
        if char in "-0123456789":
            return self._number(path)
        if char in _LITERALS:
            word, value = _LITERALS[char]
            kind = "boolean" if isinstance(value, bool) else "null"
            written = text[self.pos : self.pos + len(word)]
            if written == word or (
                self.pos + len(written) == len(text) and word.startswith(written)
            ):
                self.pos += len(written)  # a literal cut inside its letters is already decided
                return Node(kind, path, complete=True, value=value), False
        raise ValueError(f"no JSON value starts at {self.pos}")

    def _string(self) -> tuple[str, bool]:
        """Read a string at ``pos`` (its opening quote): (its characters, whether it closed)."""
        text, start = self.text, self.pos
        body = _STRING_BODY.match(text, start + 1)
        assert body is not None
        end = body.end()
        if end < len(text) and text[end] == '"':
            self.pos = end + 1
            return json.loads(text[start : end + 1]), True
        # cut inside the string, perhaps inside an escape
        if end == len(text) or _PARTIAL_ESCAPE.fullmatch(text, end):
            self.pos = len(text)
            return json.loads(text[start:end] + '"'), False
        raise ValueError(f"not a JSON string at {start}")

    def _number(self, path: Path) -> tuple[Node, bool]:
        text, start = self.text, self.pos
        match = _NUMBER_CHARS.match(text, start)
        assert match is not None
        written = match.group()
        self.pos = match.end()
        if self.pos == len(text):  # still growing
            if _open_number(written) is None:
                raise ValueError(f"not the start of a JSON number at {start}")
            return Node("number", path, text=written), True
        if not _NUMBER.fullmatch(written):
            raise ValueError(f"not a JSON number at {start}")
        try:
            value = float(written) if any(c in written for c in ".eE") else int(written)
        except ValueError:  # more digits than Python converts: judged like an open number
            return Node("number", path, text=written, closed=True), False
        # outside the double range: only its bounds are known
        if value in (float("inf"), float("-inf")):
            return Node("number", path, text=written, closed=True), False
        return Node("number", path, complete=True, value=value), False

    def _attach(self, node: Node) -> None:
        frame = self.stack[-1]
        if frame.node.kind == "array":
            frame.node.items.append(node)
            frame.values.append(node.value)
        else:
            frame.node.members.pop(frame.key, None)
            frame.node.members[frame.key] = node
            frame.values[frame.key] = node.value
        frame.known = frame.known and node.complete
        frame.state = "after"

    def _close(self) -> Node:
        frame = self.stack.pop()
        node = frame.node
        if frame.known:
            return Node(node.kind, node.path, complete=True, value=frame.values)
        node.closed = True
        return node

    def _pending(self, frame: _Frame) -> Node | None:
        """The value the text has made necessary but not begun, if any."""
        if frame.node.kind == "array" and frame.state == "next":
            return Node("pending", (*frame.node.path, len(frame.node.items)))
        if frame.node.kind == "object" and frame.state in ("colon", "value"):
            return Node("pending", (*frame.node.path, frame.key))
        return None

    def _finish(self, last: Node | None) -> Node:
        """The text ended: hang the open leaf and every open container on its parent."""
        for frame in reversed(self.stack):
            if last is not None:
                if frame.node.kind == "array":
                    frame.node.items.append(last)
                else:
                    frame.node.members.pop(frame.key, None)
                    frame.node.members[frame.key] = last
            last = frame.node
        assert last is not None
        return last


def parse_prefix(text: str) -> Node | None:
    """Read a prefix of a strict JSON document (a whole one too); None for blank text.

    Raises ``ValueError`` if ``text`` is not the start of any JSON document.
    """
    return _Parser(text).parse()


# ---------------------------------------------------------------------------------------------
# Judging a prefix against a schema


class _Undecidable(Exception):
    """The judgement ran over its budget: leave the answer truncated."""


_UNKNOWN = object()
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "object": (dict,),
    "array": (list,),
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for name, types in _PY_TYPES.items():
        if isinstance(value, types):
            return name
    return "?"


def _finite_number(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    return Decimal(value)


def _cut_text(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _open_number(text: str) -> re.Match[str] | None:
    """``text`` as the start of a JSON number: digits before any ``.`` or exponent, one after a
    ``.`` before an exponent."""
    match = _OPEN_NUMBER.fullmatch(text)
    if match is None:
        return None
    _, whole, fraction, e, _, _ = match.groups()
    if (not whole and (fraction is not None or e)) or (e and fraction == ""):
        return None
    return match


def _number_range(text: str) -> tuple[Decimal | None, Decimal | None]:
    """Bounds (closed, None for none) every finished number starting with ``text`` lies within.

    Without an exponent yet, one may still come and shrink the number towards 0 (``1438`` can become
    ``1438e-9``, and ``5e-400`` even reads as 0.0), so only the sign is known. Once ``e+`` or
    ``e<digits>`` is written the mantissa is fixed and the exponent can only grow; after ``e-`` it
    can only fall.
    """
    match = _open_number(text)
    if match is None:
        return None, None
    with localcontext() as context:  # 10e999999 is past the default context's largest exponent
        context.Emax, context.Emin = MAX_EMAX, MIN_EMIN
        return _bounds(*match.groups())


def _bounds(
    sign: str, whole: str, fraction: str | None, e: str | None, exp_sign: str, exp_digits: str
) -> tuple[Decimal | None, Decimal | None]:
    mantissa = Decimal(f"{whole or 0}.{fraction or 0}")
    low: Decimal
    high: Decimal | None
    if not e:
        low, high = Decimal(0), None
    elif mantissa == 0:
        low = high = Decimal(0)
    else:
        exponent = int(exp_digits[:6] or 0)  # fewer digits: a smaller exponent, a bound still true
        if exp_sign == "-":
            low, high = Decimal(0), mantissa.scaleb(-exponent)
        elif exp_sign == "+" or exp_digits:
            low, high = mantissa.scaleb(exponent), None
        else:
            low, high = Decimal(0), None
    if sign:
        return (-high if high is not None else None), -low
    return low, high


def _beyond(bound_kind: str, low: Decimal | None, high: Decimal | None, bound: Decimal) -> bool:
    """Is every number in [low, high] outside ``bound_kind: bound``, also once read as a double?"""

    # exact and after rounding to a double (rounding is monotone)
    def both(value: Decimal, test: Any) -> bool:
        return bool(test(value) and test(Decimal(float(value))))

    if bound_kind == "maximum":
        return low is not None and both(low, lambda v: v > bound)
    if bound_kind == "exclusiveMaximum":
        return low is not None and both(low, lambda v: v >= bound)
    if bound_kind == "minimum":
        return high is not None and both(high, lambda v: v < bound)
    return high is not None and both(high, lambda v: v <= bound)  # exclusiveMinimum


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _show(number: Decimal) -> str:
    return format(number.normalize(), "f") if -12 < number.adjusted() < 20 else format(number, "g")


def _maybe_string_start(text: str) -> str:
    """An open string's characters that are final: a trailing high surrogate may still pair up."""
    return text[:-1] if text and "\ud800" <= text[-1] <= "\udbff" else text


class _Judge:
    def __init__(self, schema: Any) -> None:
        self.root = schema
        self.validator = Draft202012Validator(
            schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        self.budget = _BUDGET
        self.resolving: set[tuple[int, int]] = set()

    def check(self, schema: Any, node: Node) -> PrefixViolation | None:
        """A violation every continuation of ``node`` has under ``schema``, or None."""
        self.budget -= 1
        if self.budget < 0:
            raise _Undecidable
        if schema is True:
            return None
        if schema is False:
            what = "a value has begun" if node.kind != "pending" else "a value must follow"
            return PrefixViolation(
                pointer(node.path), "false", f"{what} where the schema allows none (false)"
            )
        if not isinstance(schema, dict) or ("$id" in schema and schema is not self.root):
            return None  # not a schema, or a new base URI for references: not judged
        if node.complete:
            return self._complete(schema, node)
        for check in (self._ref, self._all_of, self._any_of, self._type, self._enum, self._kind):
            if (found := check(schema, node)) is not None:
                return found
        return None

    def _complete(self, schema: dict, node: Node) -> PrefixViolation | None:
        try:
            error = best_match(self.validator.evolve(schema=schema).iter_errors(node.value))
        except Exception:  # the validator itself failed here: nothing decided
            return None
        if error is None:
            return None
        return PrefixViolation(
            pointer((*node.path, *error.absolute_path)), str(error.validator), error.message
        )

    def _resolve(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            return _UNKNOWN
        target = self.root
        for token in ref[2:].split("/") if ref != "#" else []:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                return _UNKNOWN
            if isinstance(target, dict) and "$id" in target:
                return _UNKNOWN  # inside another resource: its own references resolve elsewhere
        return target

    def _ref(self, schema: dict, node: Node) -> PrefixViolation | None:
        if "$ref" not in schema:
            return None
        target = self._resolve(schema["$ref"])
        key = (id(target), id(node))
        if target is _UNKNOWN or key in self.resolving:  # unknown, or a cycle that reads no input
            return None
        self.resolving.add(key)
        try:
            return self.check(target, node)
        finally:
            self.resolving.discard(key)

    def _all_of(self, schema: dict, node: Node) -> PrefixViolation | None:
        branches = schema.get("allOf")
        for branch in branches if isinstance(branches, list) else []:
            if (found := self.check(branch, node)) is not None:
                return found
        return None

    def _any_of(self, schema: dict, node: Node) -> PrefixViolation | None:
        # oneOf needs at least one branch too: that much is judged
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if not isinstance(branches, list) or not branches:
                continue
            found: list[PrefixViolation] = []
            for branch in branches:
                if (one := self.check(branch, node)) is None:
                    break
                found.append(one)
            else:
                keywords = {f.keyword for f in found}
                first = _cut_text(f"at {found[0].path or '/'}: {found[0].reason}", 300)
                why = (
                    f"no {keyword} branch can still match ({len(found)} branches; the first: "
                    f"{first})"
                )
                return PrefixViolation(
                    pointer(node.path), keywords.pop() if len(keywords) == 1 else keyword, why
                )
        return None

    def _type(self, schema: dict, node: Node) -> PrefixViolation | None:
        declared = schema.get("type")
        if node.kind == "pending" or not isinstance(declared, (str, list)):
            return None
        types = {declared} if isinstance(declared, str) else set(declared)
        if not all(isinstance(t, str) for t in types):
            return None
        allowed = types | ({"integer"} if "number" in types else set())
        if node.kind in allowed or (node.kind == "number" and "integer" in allowed):
            return None
        return PrefixViolation(
            pointer(node.path),
            "type",
            f"{_a(node.kind)} has begun here, the schema allows only {', '.join(sorted(types))}",
        )

    def _enum(self, schema: dict, node: Node) -> PrefixViolation | None:
        if node.kind == "pending":
            return None
        for keyword in ("enum", "const"):
            if keyword not in schema or (
                keyword == "enum" and not isinstance(schema["enum"], list)
            ):
                continue
            allowed = schema["enum"] if keyword == "enum" else [schema["const"]]
            same_type = [v for v in allowed if _json_type(v) == node.kind]
            if not same_type:
                return PrefixViolation(
                    pointer(node.path),
                    keyword,
                    f"{_a(node.kind)} has begun here, the schema allows only"
                    f" {_cut_text(json.dumps(allowed, ensure_ascii=False), 80)}",
                )
            if node.kind == "string":
                start = _maybe_string_start(node.text)
                if not any(v.startswith(start) for v in same_type):
                    return PrefixViolation(
                        pointer(node.path),
                        keyword,
                        f"a string starting {_cut_text(start)!r} can no longer become any of"
                        f" {_cut_text(json.dumps(same_type, ensure_ascii=False), 80)}",
                    )
        return None

    def _kind(self, schema: dict, node: Node) -> PrefixViolation | None:
        if node.kind == "string":
            limit = schema.get("maxLength")
            if isinstance(limit, int) and not isinstance(limit, bool) and len(node.text) > limit:
                return PrefixViolation(
                    pointer(node.path),
                    "maxLength",
                    f"string of {len(node.text)}+ characters exceeds maxLength {limit}",
                )
        elif node.kind == "number":
            low, high = _number_range(node.text)
            for keyword in ("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"):
                bound = _finite_number(schema.get(keyword))
                if bound is not None and _beyond(keyword, low, high, bound):
                    side = (
                        f"at least {_show(low)}"
                        if low is not None and keyword.lower().endswith("maximum")
                        else f"at most {_show(high or Decimal(0))}"
                    )
                    return PrefixViolation(
                        pointer(node.path),
                        keyword,
                        f"a number starting {_cut_text(node.text)!r} can only end {side}, beyond "
                        f"{keyword}"
                        f" {schema[keyword]}",
                    )
        elif node.kind == "array":
            return self._array(schema, node)
        elif node.kind == "object":
            return self._object(schema, node)
        return None

    def _array(self, schema: dict, node: Node) -> PrefixViolation | None:
        where = pointer(node.path)
        limit = schema.get("maxItems")
        if isinstance(limit, int) and not isinstance(limit, bool) and len(node.items) > limit:
            return PrefixViolation(
                where,
                "maxItems",
                f"array of {len(node.items)}{'' if node.closed else '+'} items exceeds maxItems "
                f"{limit}",
            )
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        for index, item in enumerate(node.items):
            sub = prefix[index] if index < len(prefix) else schema.get("items", True)
            if sub is False and index >= len(prefix) and "items" in schema:
                return PrefixViolation(
                    where,
                    "items",
                    f"item {index} has begun, but items is false after {len(prefix)} prefixItems",
                )
            if (found := self.check(sub, item)) is not None:
                return found
        if schema.get("uniqueItems") is True:
            done = [item.value for item in node.items if item.complete]
            if (
                len(done) > 1
                and (
                    found := self._complete(
                        {"uniqueItems": True}, Node("array", node.path, complete=True, value=done)
                    )
                )
                is not None
            ):
                return PrefixViolation(
                    where,
                    "uniqueItems",
                    f"the complete items so far repeat a value: {found.reason}",
                )
        return None

    def _object(self, schema: dict, node: Node) -> PrefixViolation | None:
        where = pointer(node.path)
        limit = schema.get("maxProperties")
        if isinstance(limit, int) and not isinstance(limit, bool) and len(node.members) > limit:
            return PrefixViolation(
                where,
                "maxProperties",
                f"object of {len(node.members)}+ properties exceeds maxProperties {limit}",
            )
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        extra = schema.get("additionalProperties", True)
        names = schema.get("propertyNames", True)
        for key, value in node.members.items():
            try:
                matching = [p for p in patterns if re.search(p, key)]
                joined = (
                    bool(patterns) and re.search("|".join(patterns), key) is not None
                )  # how jsonschema finds the extra ones
            except re.error:
                continue  # a pattern Python cannot read: this key is not judged
            subschemas = [properties[key]] if key in properties else []
            subschemas += [patterns[p] for p in matching]
            if key not in properties and not joined and "additionalProperties" in schema:
                if extra is False:
                    allowed = ", ".join(map(repr, sorted(properties))) or "none"
                    return PrefixViolation(
                        where,
                        "additionalProperties",
                        f"property {_cut_text(key)!r} is not allowed (additionalProperties is "
                        "false; properties:"
                        f" {allowed})",
                    )
                subschemas.append(extra)
            if (
                names is not True
                and (
                    found := self._complete(
                        names, Node("string", (*node.path, key), complete=True, value=key)
                    )
                )
                is not None
            ):
                return PrefixViolation(
                    where, "propertyNames", f"property name {_cut_text(key)!r}: {found.reason}"
                )
            for sub in subschemas:
                if (found := self.check(sub, value)) is not None:
                    return found
        if node.open_key is not None and extra is False and not patterns:
            start = _maybe_string_start(node.open_key)
            if not any(name.startswith(start) for name in properties):
                allowed = ", ".join(map(repr, sorted(properties))) or "none"
                return PrefixViolation(
                    where,
                    "additionalProperties",
                    f"a property name starting {_cut_text(start)!r} is not allowed "
                    "(additionalProperties is false;"
                    f" properties: {allowed})",
                )
        return None


def prefix_violation(schema: Any, text: str | Node | None) -> PrefixViolation | None:
    """What every continuation of the JSON prefix ``text`` breaks in ``schema``, or None if it may
    still become valid.

    ``text`` is the cut answer (or its parse). A text that is not a JSON prefix, and anything not
    decided soundly, give None: the caller decides what else it is.
    """
    try:
        node = parse_prefix(text) if isinstance(text, str) else text
    except ValueError:
        return None
    if node is None:
        return None
    try:
        return _Judge(schema).check(schema, node)
    except (_Undecidable, RecursionError):
        return None

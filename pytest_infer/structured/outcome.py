"""The outcome of one structured-output request, classified into exactly one class.

Strict RFC 8259 parsing: Python's ``json`` already rejects raw control
characters inside strings; ``NaN``/``Infinity`` are refused here too. Schema
validation is Draft 2020-12 with format checking.
"""
from __future__ import annotations

import enum
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..outcomes import InferError


class Outcome(str, enum.Enum):
    REJECTED = "rejected"  # 4xx: the framework says it does not support the schema
    VALID = "valid"
    INVALID_JSON = "invalid-json"  # not strict RFC 8259 JSON
    VIOLATION = "violation"  # JSON that the schema rejects
    TRUNCATED = "truncated"  # finish_reason "length" before the JSON closed
    SERVER_ERROR = "server-error"  # 5xx, a malformed response, a dropped connection
    TIMEOUT = "timeout"
    DIED = "server-died"  # unreachable after the request

    @property
    def failed(self) -> bool:
        return self in FAILURES

    @property
    def matrix_class(self) -> str:
        """The column of the keyword matrix: the five classes of the docs (errors, hangs and deaths are "error")."""
        return _MATRIX_CLASS.get(self, "error")

    def __str__(self) -> str:
        return self.value


FAILURES = frozenset({Outcome.INVALID_JSON, Outcome.VIOLATION, Outcome.SERVER_ERROR, Outcome.TIMEOUT, Outcome.DIED})
MATRIX_CLASSES = ("valid", "rejected", "truncated", "invalid", "error")
_MATRIX_CLASS = {
    Outcome.VALID: "valid",
    Outcome.REJECTED: "rejected",
    Outcome.TRUNCATED: "truncated",
    Outcome.INVALID_JSON: "invalid",
    Outcome.VIOLATION: "invalid",
}


def matrix_cells(keywords: set[str], outcome: Outcome) -> list[tuple[str, str]]:
    """The (row, column) cells one request counts in: the "all" row and one row per keyword."""
    return [(row, outcome.matrix_class) for row in ("all", *sorted(keywords))]


@dataclass(frozen=True, slots=True)
class Verdict:
    """An outcome with its evidence: ``keyword`` is the schema keyword the output broke, if any."""

    outcome: Outcome
    message: str = ""
    keyword: str | None = None

    @property
    def signature(self) -> str:
        """What identifies one bug: the class and, for violations, the keyword (``violation:maxLength``)."""
        return f"{self.outcome.value}:{self.keyword}" if self.keyword else self.outcome.value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


class NumberRangeError(InferError, ValueError):
    """A number no IEEE 754 double holds (``1e999``): RFC 8259 section 6 calls it not interoperable."""


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NumberRangeError(f"the number {text[:40]} is outside the IEEE 754 double range")
    return value


def strict_loads(text: str) -> Any:
    """Parse as strict RFC 8259 JSON; raises ``ValueError``."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_parse_float)


_STRING_TAIL = re.compile(r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*(?:\\(?:u[0-9a-fA-F]{0,3})?)?')
_NUMBER_TAIL = re.compile(r"-?(?:(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][+-]?\d*)?)?$")


def is_json_prefix(text: str) -> bool:
    """Could ``text`` be the start of a strict JSON document, cut short? (A whole document counts too.)"""
    try:
        strict_loads(text)
        return True
    except json.JSONDecodeError as exc:
        rest = text[exc.pos :]
        if not rest.strip():
            return True  # the parser wanted more input: an unclosed array, object or key
        if exc.msg.startswith("Unterminated string"):
            # the document ends inside this string: fine if what there is of it is well-formed
            return _STRING_TAIL.fullmatch(text, exc.pos + 1) is not None
        if exc.msg.startswith("Invalid \\uXXXX escape") and re.search(r"\\u[0-9a-fA-F]{0,4}$", text):
            return is_json_prefix(text[: text.rindex("\\u")])  # cut inside a \uXXXX escape
        if any(word.startswith(rest) for word in ("true", "false", "null")):
            return True
        number = _NUMBER_TAIL.search(text)
        if number and number.group() and number.start() <= exc.pos and not text[: number.start()].endswith(tuple("0123456789.eE+-")):
            candidate = text[: number.start()] + "0"  # a number cut short: is what comes before it sound?
            return candidate != text and is_json_prefix(candidate)
        return False
    except ValueError:
        return False  # NaN / Infinity


def validate(schema: dict, instance: Any) -> tuple[str, str] | None:
    """None if valid, else (the failing keyword, the validator's message with the instance path)."""
    try:
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        error = best_match(validator.iter_errors(instance))
    except Exception as exc:  # the validator itself failed on this value: report it, don't crash the run
        return "validator-error", f"jsonschema could not check the value: {type(exc).__name__}: {exc}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return str(error.validator), f"{error.message} (at /{where}, schema path /{'/'.join(map(str, error.absolute_schema_path))})"


_STARTS = {"{": ("object",), "[": ("array",), '"': ("string",), "t": ("boolean",), "f": ("boolean",), "n": ("null",)}


def _allowed_types(schema: Any) -> set[str] | None:
    """The JSON types the top level may have, from ``type`` here and in ``allOf`` branches (None: any)."""
    allowed: set[str] | None = None
    for part in [schema, *(schema.get("allOf") or [] if isinstance(schema, dict) else [])]:
        declared = part.get("type") if isinstance(part, dict) else None
        if isinstance(declared, (str, list)):
            types = {declared} if isinstance(declared, str) else set(declared)
            types |= {"integer"} if "number" in types else set()
            allowed = types if allowed is None else allowed & types
    return allowed


def cut_type_violation(schema: Any, text: str) -> Verdict | None:
    """A cut-off answer whose top-level type the schema already forbids is a violation, not a truncation."""
    allowed = _allowed_types(schema)
    stripped = text.lstrip()
    if allowed is None or not stripped:
        return None
    started = _STARTS.get(stripped[0], ("integer", "number") if stripped[0] in "-0123456789" else None)
    if started is None or allowed & set(started):
        return None
    return Verdict(Outcome.VIOLATION, f"the answer is a {started[-1]} (cut at the token limit), the schema allows only {sorted(allowed)}", "type")


def classify_output(schema: dict, text: str | None, finish_reason: str | None) -> Verdict:
    """Classify a 200 answer's text against the schema it was constrained to."""
    if not isinstance(text, str):
        return Verdict(Outcome.SERVER_ERROR, f"the answer has no text content (got {type(text).__name__})")
    try:
        instance = strict_loads(text)
    except NumberRangeError as exc:
        if finish_reason == "length":  # a number still growing at the token limit (the endless-number loop)
            return cut_type_violation(schema, text) or Verdict(Outcome.TRUNCATED, f"cut at the token limit inside a number: {exc}")
        return Verdict(Outcome.INVALID_JSON, f"{exc} (RFC 8259 section 6: not interoperable; strict parsers reject it)", "number-range")
    except ValueError as exc:
        if finish_reason == "length" and is_json_prefix(text):
            return cut_type_violation(schema, text) or Verdict(Outcome.TRUNCATED, f"cut at the token limit after {len(text)} characters")
        return Verdict(Outcome.INVALID_JSON, f"not strict JSON: {exc}", "json")
    if finish_reason == "length" and isinstance(instance, (int, float)) and not isinstance(instance, bool):
        # a bare number cut at the limit may still grow digits, a fraction or an exponent:
        # only its type can be judged, not multipleOf or bounds
        return cut_type_violation(schema, text) or Verdict(Outcome.TRUNCATED, "a number still growing at the token limit")
    problem = validate(schema, instance)
    if problem is not None:
        return Verdict(Outcome.VIOLATION, problem[1], problem[0])
    if finish_reason == "length":
        return Verdict(Outcome.TRUNCATED, "the token limit was hit: the value parses but the model had not finished")
    return Verdict(Outcome.VALID)


def classify_status(status: int, body: str) -> Verdict | None:
    """A verdict for a non-200 answer, or None for 200."""
    if status == 200:
        return None
    excerpt = body[:300]
    if 400 <= status < 500:
        return Verdict(Outcome.REJECTED, f"HTTP {status}: {excerpt}")
    return Verdict(Outcome.SERVER_ERROR, f"HTTP {status}: {excerpt}")

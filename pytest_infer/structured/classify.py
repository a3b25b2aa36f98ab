"""The class of one structured-output answer: every request lands in exactly one.

Strict RFC 8259 parsing: Python's ``json`` already rejects raw control
characters inside strings; ``NaN``/``Infinity`` are refused here too. Schema
validation is Draft 2020-12 with format checking. An answer cut at the token
limit is ``truncated`` only while what was written can still become valid; a prefix
that already breaks the schema is a ``violation`` (``prefix.py`` decides, soundly).
"""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..outcomes import InferError
from .prefix import parse_prefix, prefix_violation


class AnswerClass(str, enum.Enum):
    """What one answer is; a test's outcome, judged from many answers, is
    ``pytest_infer.outcomes.Outcome``.
    """

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
        """The column of the keyword matrix: the five classes of the docs (errors, hangs and deaths
        are "error").
        """
        return _MATRIX_CLASS.get(self, "error")

    def __str__(self) -> str:
        return self.value


FAILURES = frozenset(
    {
        AnswerClass.INVALID_JSON,
        AnswerClass.VIOLATION,
        AnswerClass.SERVER_ERROR,
        AnswerClass.TIMEOUT,
        AnswerClass.DIED,
    }
)
MATRIX_CLASSES = ("valid", "rejected", "truncated", "invalid", "error")
_MATRIX_CLASS = {
    AnswerClass.VALID: "valid",
    AnswerClass.REJECTED: "rejected",
    AnswerClass.TRUNCATED: "truncated",
    AnswerClass.INVALID_JSON: "invalid",
    AnswerClass.VIOLATION: "invalid",
}


def matrix_cells(keywords: set[str], outcome: AnswerClass) -> list[tuple[str, str]]:
    """The (row, column) cells one request counts in: the "all" row and one row per keyword."""
    return [(row, outcome.matrix_class) for row in ("all", *sorted(keywords))]


@dataclass(frozen=True, slots=True)
class Classified:
    """An answer's class with its evidence: ``keyword`` is the schema keyword the output broke, if
    any.
    """

    outcome: AnswerClass
    message: str = ""
    keyword: str | None = None

    @property
    def signature(self) -> str:
        """What identifies one bug: the class and, for violations, the keyword
        (``violation:maxLength``).
        """
        return f"{self.outcome.value}:{self.keyword}" if self.keyword else self.outcome.value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


class NumberRangeError(InferError, ValueError):
    """A number no IEEE 754 double holds (``1e999``): RFC 8259 section 6 calls it not
    interoperable.
    """


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NumberRangeError(f"the number {text[:40]} is outside the IEEE 754 double range")
    return value


def strict_loads(text: str) -> Any:
    """Parse as strict RFC 8259 JSON; raises ``ValueError``, also for nesting deeper than the parser
    goes (RFC 8259 section 9 lets a parser limit the depth; a model looping on ``[`` reaches it)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_parse_float)
    except RecursionError as exc:
        raise ValueError(f"nested too deeply to parse ({exc})") from None


def is_json_prefix(text: str) -> bool:
    """Could ``text`` be the start of a strict JSON document, cut short? (A whole document counts
    too.)

    The prefix parser (``prefix.parse_prefix``) decides, so that what is called a prefix here is
    what the prefix judgement reads; a number outside the double range is never strict JSON.
    """
    try:
        strict_loads(text)
        return True
    except NumberRangeError:
        return False
    except ValueError:
        pass  # not a whole document (or NaN / Infinity): is it the start of one?
    try:
        parse_prefix(text)
    except ValueError:
        return False
    return True


def validate(schema: dict, instance: Any) -> tuple[str, str] | None:
    """None if valid, else (the failing keyword, the validator's message with the instance path)."""
    try:
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        error = best_match(validator.iter_errors(instance))
    # the validator itself failed on this value: report it, don't crash the run
    except Exception as exc:
        return (
            "validator-error",
            f"jsonschema could not check the value: {type(exc).__name__}: {exc}",
        )
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return (
        str(error.validator),
        f"{error.message} (at /{where}, schema path "
        f"/{'/'.join(map(str, error.absolute_schema_path))})",
    )


def prefix_verdict(schema: Any, text: str) -> Classified | None:
    """A cut-off answer that already breaks the schema, whatever would follow, is a violation, not a
    truncation.

    ``prefix.prefix_violation`` reads the JSON prefix and judges what is already decided (a string
    past ``maxLength``, a key ``additionalProperties: false`` forbids, a value of a forbidden type,
    ...); whatever might still become valid stays truncated.
    """
    found = prefix_violation(schema, text)
    return (
        Classified(AnswerClass.VIOLATION, found.message, found.keyword)
        if found is not None
        else None
    )


def classify_output(schema: dict, text: str | None, finish_reason: str | None) -> Classified:
    """Classify a 200 answer's text against the schema it was constrained to."""
    if not isinstance(text, str):
        return Classified(
            AnswerClass.SERVER_ERROR, f"the answer has no text content (got {type(text).__name__})"
        )
    try:
        instance = strict_loads(text)
    except NumberRangeError as exc:
        # a number still growing at the token limit (the endless-number loop)
        if finish_reason == "length":
            return prefix_verdict(schema, text) or Classified(
                AnswerClass.TRUNCATED, f"cut at the token limit inside a number: {exc}"
            )
        return Classified(
            AnswerClass.INVALID_JSON,
            f"{exc} (RFC 8259 section 6: not interoperable; strict parsers reject it)",
            "number-range",
        )
    except ValueError as exc:
        if finish_reason == "length" and is_json_prefix(text):
            return prefix_verdict(schema, text) or Classified(
                AnswerClass.TRUNCATED, f"cut at the token limit after {len(text)} characters"
            )
        return Classified(AnswerClass.INVALID_JSON, f"not strict JSON: {exc}", "json")
    if (
        finish_reason == "length"
        and isinstance(instance, (int, float))
        and not isinstance(instance, bool)
    ):
        # a bare number cut at the limit may still grow digits, a fraction or an exponent:
        # its type is judged, and bounds only where no continuation can meet them
        return prefix_verdict(schema, text) or Classified(
            AnswerClass.TRUNCATED, "a number still growing at the token limit"
        )
    problem = validate(schema, instance)
    if problem is not None:
        return Classified(AnswerClass.VIOLATION, problem[1], problem[0])
    if finish_reason == "length":
        return Classified(
            AnswerClass.TRUNCATED,
            "the token limit was hit: the value parses but the model had not finished",
        )
    return Classified(AnswerClass.VALID)


def classify_status(status: int, body: str) -> Classified | None:
    """A verdict for a non-200 answer, or None for 200."""
    if status == 200:
        return None
    excerpt = body[:300]
    if 400 <= status < 500:
        return Classified(AnswerClass.REJECTED, f"HTTP {status}: {excerpt}")
    return Classified(AnswerClass.SERVER_ERROR, f"HTTP {status}: {excerpt}")

"""What the plugin raises, and what a test's outcome is: one root for the plugin's errors, the one
table of test outcomes (``Outcome``) that the results, the gate and every report read, and the skips
that record an outcome of their own.

Kept free of heavy imports: the plugin module needs these on every pytest run, wherever it is
installed, and must not pull in the conformance checks or jsonschema to get them.
"""

from __future__ import annotations

import enum
import importlib
from typing import Any, ClassVar

import pytest


class InferError(Exception):
    """Root of pytest-infer's own errors: ``except InferError`` catches every one of them."""


class MissingExtra(InferError, ImportError):
    """An optional part used where its extra is not installed: a plain install stays light, and says
    what to add.
    """


def optional_module(name: str, extra: str, purpose: str) -> Any:
    """``name`` imported, or ``MissingExtra`` naming the ``pytest-infer[extra]`` that installs it
    for ``purpose``.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        top = name.partition(".")[0]
        raise MissingExtra(
            f"{purpose} need {top}, not installed: pip install 'pytest-infer[{extra}]'"
        ) from exc


class Judgement(enum.Enum):
    """What an outcome says of the server: the gate compares what was judged, and only that."""

    RIGHT = "judged, and found right"
    WRONG = "judged, and found wrong"
    DECLARED = "judged, and found wrong as declared: an expected failure"
    REFUSED = "the server refused a feature the check needs"
    BROKE = "the test broke before it judged anything"
    GONE = "its server was gone: the test never ran"
    NONE = "nothing judged"


class Outcome(enum.StrEnum):
    """A test's outcome as the results record it (``TestRecord.outcome``, the plain string),
    with how it ranks and how every report draws it.

    The members' order is the verdict's: the counts of a suite read in it. ``severity`` is the
    matrix's order, worst first (0): a cell holding several runs of one check shows the worst,
    and any step away from a pass beats a pass ("fixed" is a declared deviation that passed), so
    a cell holding [fixed, inconclusive] is inconclusive. ``notable``: a matrix row holding it is
    shown unfolded, its HTML cell in bold. ``symbol``: the terminal matrix's cell; ``label``: the
    verdict's heading and the Markdown cell, after its ``icon``; ``colour``: the HTML cell's
    background.
    """

    severity: int
    judgement: Judgement
    notable: bool
    symbol: str
    label: str
    icon: str
    colour: str

    def __new__(
        cls,
        value: str,
        severity: int,
        judgement: Judgement,
        notable: bool,
        symbol: str,
        label: str,
        icon: str,
        colour: str,
    ) -> Outcome:
        member = str.__new__(cls, value)
        member._value_ = value
        member.severity, member.judgement, member.notable = severity, judgement, notable
        member.symbol, member.label, member.icon, member.colour = symbol, label, icon, colour
        return member

    #   value       severity judgement             notable symbol  label            icon  colour
    PASSED = ("passed", 9, Judgement.RIGHT, False, "pass", "pass", "✅", "#e8f5e9")
    FAILED = ("failed", 2, Judgement.WRONG, True, "FAIL", "FAIL", "❌", "#ffcdd2")
    ERROR = ("error", 0, Judgement.BROKE, True, "ERROR", "ERROR", "💥", "#ffcdd2")
    UNSUPPORTED = ("unsupported", 3, Judgement.REFUSED, False, "unsup", "unsup", "➖", "#eceff1")
    XFAIL = ("xfail", 4, Judgement.DECLARED, False, "xfail", "xfail", "⚠️", "#fff8e1")
    FIXED = ("fixed", 8, Judgement.RIGHT, True, "FIXED", "FIXED", "🎉", "#c8e6c9")
    INCONCLUSIVE = (
        "inconclusive",
        5,
        Judgement.NONE,
        False,
        "inconc",
        "inconclusive",
        "❔",
        "#eceff1",
    )
    NOT_EXERCISED = (
        "not_exercised",
        6,
        Judgement.NONE,
        False,
        "n/ex",
        "not exercised",
        "◌",
        "#eceff1",
    )
    NOT_RUN = ("not_run", 1, Judgement.GONE, True, "n/run", "not run", "⛔", "#eceff1")
    SKIPPED = ("skipped", 7, Judgement.NONE, False, "skip", "skip", "⏭", "#eceff1")

    @property
    def passes(self) -> bool:
        """It judged something and found it right."""
        return self.judgement is Judgement.RIGHT

    @property
    def judged(self) -> bool:
        """It counts as judged: the server was found right or wrong, or refused the feature."""
        return self.judgement not in (Judgement.BROKE, Judgement.GONE, Judgement.NONE)

    @property
    def deviates(self) -> bool:
        """The server was judged and found wrong, declared or not."""
        return self.judgement in (Judgement.WRONG, Judgement.DECLARED)

    @property
    def broke(self) -> bool:
        """The test broke before it judged anything, or its server was gone."""
        return self.judgement in (Judgement.BROKE, Judgement.GONE)

    @property
    def finding(self) -> bool:
        """It makes a finding: a failure nobody declared, or a test that broke on its own."""
        return self.judgement in (Judgement.WRONG, Judgement.BROKE)

    @property
    def words(self) -> str:
        return words(self)

    @classmethod
    def of(cls, text: str) -> Outcome | None:
        """The outcome ``text`` names, or None: a results file may hold one this version does not
        know."""
        found = cls._value2member_map_.get(text)
        return found if isinstance(found, Outcome) else None

    @classmethod
    def worst_first(cls) -> tuple[Outcome, ...]:
        return tuple(sorted(cls, key=lambda outcome: outcome.severity))


def words(outcome: str) -> str:
    """``not exercised``: an outcome, known or not, as words in a sentence."""
    return outcome.replace("_", " ")


class OutcomeSkip(pytest.skip.Exception):  # type: ignore[name-defined]  # pytest's alias of Skipped
    """A skip that the results record as an outcome of its own (``outcome``), not as skipped; its
    reason reads after the outcome's words."""

    outcome: ClassVar[Outcome]

    def __init__(self, reason: str) -> None:
        super().__init__(f"{self.outcome.words}: {reason}", allow_module_level=False)


class Unsupported(OutcomeSkip):
    """The framework does not offer a feature a check needs: reported as unsupported, not broken."""

    outcome = Outcome.UNSUPPORTED

    def __init__(self, feature: str, reason: str) -> None:
        self.feature = feature
        super().__init__(f"{feature}: {reason}")


class Inconclusive(OutcomeSkip):
    """The model, not the server, kept the check from deciding (e.g. a random model never ended
    its JSON)."""

    outcome = Outcome.INCONCLUSIVE


class NotExercised(OutcomeSkip):
    """The check met nothing to judge on this server (no error event in the stream): never a
    pass."""

    outcome = Outcome.NOT_EXERCISED


class NotRun(OutcomeSkip):
    """The test's target never became ready."""

    outcome = Outcome.NOT_RUN

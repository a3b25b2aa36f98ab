"""A drafted upstream report per regression: a Markdown issue a user pastes into the vendor's
tracker, written for the vendor's maintainers (what their server did, on which release, how to see
it with curl), not for us.

Everything in it comes from the two stored runs the gate compared: the regression's finding, the
failing test's message, reproducer and the server's own log lines while it ran, and what the passing
release's test judged."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..paths import builtin_model_of
from ..reporting.history import Step
from ..results.model import SessionResults, TargetRecord
from ..results.views import CheckCell, check_matrix
from ..table import Finding
from .engines import Engine

_LOCAL_URL = re.compile(r"http://127\.0\.0\.1:\d+")
SERVER_URL = "http://127.0.0.1:8080"  # where the report asks the maintainer to start the server


@dataclass(slots=True)
class Draft:
    engine: str
    before: str  # release
    after: str
    subject: str
    title: str
    markdown: str

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{self.engine}-{self.after}-{self.subject}").strip(
            "-"
        )[:120]


def _cell(results: SessionResults, subject: str) -> tuple[TargetRecord, CheckCell | None]:
    tid, target = next(iter(results.targets.items()))
    return target, check_matrix(results).get(subject, {}).get(tid)


def _server_log(results: SessionResults, cell: CheckCell | None) -> str:
    """The server's log lines while the failing request ran, else its death's log tail; "" where
    none was kept.
    """
    if cell is not None:
        for t in cell.tests:
            if t.extra.get("server_log"):
                return str(t.extra["server_log"])
    target = next(iter(results.targets.values()))
    return next((c.log_tail for c in target.crashes if c.log_tail), "")


_EXPECTED = re.compile(r"^expected: (.+)$", re.MULTILINE)


def _expected(before: str, old: CheckCell | None, new: CheckCell | None, finding: Finding) -> str:
    """What the check requires, and what the release before did: its pass's evidence where it
    passed, else the requirement the failing test states (its ``expected:`` line) and the earlier
    outcome."""
    if old is not None and old.evidence:
        return f"What {before} did: {old.evidence}"
    stated = _EXPECTED.search(new.message) if new is not None else None
    earlier = f"{before}: {old.outcome if old is not None else finding.before}"
    if stated:
        return f"{stated[1]} ({earlier})"
    return f"`{finding.subject}` passes ({earlier})"


def _model(model: str) -> str:
    """A built-in model's cached folder, named by the model (a path on our machine means nothing to
    a maintainer).
    """
    name = builtin_model_of(model.split("@")[0])
    return f"`{name}` (pytest-infer's built-in test model, {model})" if name else f"`{model}`"


def _release(engine: Engine, version: str, target: TargetRecord) -> str:
    parts = [f"{engine.package} {version}"]
    if target.version and target.version != version:
        parts.append(f"server version {target.version}")
    if target.commit:
        parts.append(f"commit {target.commit}")
    return ", ".join(parts)


def draft(
    engine: Engine,
    step: Step,
    versions: dict[str, str],
    runs: dict[str, SessionResults],
    finding: Finding,
) -> Draft:
    """One regression of ``step`` as an issue. ``versions``: server version -> release; ``runs``:
    release -> results."""
    before, after = versions.get(step.before, step.before), versions.get(step.after, step.after)
    old_target, old = _cell(runs[before], finding.subject)
    new_target, new = _cell(runs[after], finding.subject)
    reproducer = finding.reproducer or (new.reproducer if new else "")
    observed = (new.message if new else "") or f"{finding.after}" + (
        f" ({finding.detail})" if finding.detail else ""
    )
    expected = _expected(before, old, new, finding)
    log = _server_log(runs[after], new)
    title = f"{finding.subject}: {finding.before} in {before}, {finding.after} in {after}"
    if finding.area == "check" and old is not None and new is not None:
        title = (
            f"Regression in {after}: {finding.subject} ({old.outcome} in {before}, "
            f"{new.outcome} in {after})"
        )
    lines = [
        f"# {title}",
        "",
        f"**Last good:** {_release(engine, before, old_target)}  ",
        f"**First bad:** {_release(engine, after, new_target)}  ",
        f"**Model:** {_model(new_target.model)}  ",
        f"**Found by:** pytest-infer ({finding.area} `{finding.subject}`), which ran the same "
        "requests against both "
        "releases on the same machine, model and suite code.",
        "",
        f"**The change:** {finding.before} in {before}, {finding.after} in {after}"
        + (f": {finding.detail[:400]}" if finding.detail else ""),
        "",
        "## Steps to reproduce",
        "",
        f"Start the server of {engine.package} {after} on the model above, listening on "
        f"{SERVER_URL}, then:",
        "",
        "```sh",
        _LOCAL_URL.sub(SERVER_URL, reproducer)
        if reproducer
        else "# no single request reproduces it: the check "
        f"judges several; rerun it with: pytest suites -k '{finding.subject}' "
        f"--infer-framework={engine.framework}",
        "```",
        "",
        "## Expected",
        "",
        expected,
        "",
        "## Observed",
        "",
        f"What {after} does: {observed}",
        "",
        "## Server log",
        "",
    ]
    lines += (
        ["```", log.strip()[-4000:], "```"]
        if log.strip()
        else ["The server logged nothing for this request that the run kept."]
    )
    return Draft(engine.name, before, after, finding.subject, title, "\n".join(lines) + "\n")


def drafts(
    engine: Engine, steps: list[Step], versions: dict[str, str], runs: dict[str, SessionResults]
) -> list[Draft]:
    """A draft for every regression along the history's steps."""
    return [draft(engine, s, versions, runs, f) for s in steps for f in s.result.regressions]

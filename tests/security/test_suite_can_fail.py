"""The security suite against the fake server: each check passes on the correct server with a key, naming what it
judged, fails on exactly its deviation (an open route, a leaking error answer, a request that stalls the others, a
refusal that is not the context's), and earns no pass against the null servers."""

from __future__ import annotations

import json
from pathlib import Path

import httpcore  # noqa: F401  kept loaded across in-process runs (see tests/faults/test_faults.py)
import pytest

from pytest_infer.testing.fakeserver import (
    NULL_MODES,
    Deviation,
    FakeServer,
    error_body,
    flat_errors,
    leak_in_errors,
    open_route,
    refuse_large,
    serving_process,
    shed_others,
    slow_request,
    stall_others,
    stall_streams,
)

SUITE = Path(__file__).resolve().parents[2] / "suites" / "security"
KEY = "sk-test-security-0123456789"
# a light load of 4/s for 1 s, the hostile request cut off after 3 s, 1 s after it
STALL = (
    "rate: 4\nbefore_s: 1.0\nhostile_timeout_s: 3.0\nafter_s: 1.0\nstall_limit_s: 0.8\ngap_limit_s: 0.8\n"
    "e2e_limit_s: 1.6\n"
)
# what picks each kind's hostile request out of the light load (tests/security runs only the stall checks beside it)
HOSTILE_PICKS = {
    "grammar-bomb": lambda body: "response_format" in body,
    "many-stop-strings": lambda body: len(body.get("stop") or []) > 100,
    "n-x-max-tokens": lambda body: body.get("n") == 16,
    "long-prompt": lambda body: (
        body.get("max_tokens") == 1 and len(json.dumps(body.get("messages"))) > 1000
    ),
}
STALL_TEST = "test_one_hostile_request_does_not_stall_the_others[{}]"


def hostile(body: dict) -> bool:
    return any(pick(body) for pick in HOSTILE_PICKS.values())


def _applying_the_bomb(path: str, body: dict, response: dict) -> dict:
    """The grammar bomb's answer as a server that applies its schema writes it within max_tokens=8: the start of
    the object it requires, cut at the limit (the fake writes ``{"answer": ...}`` whatever the schema)."""
    if HOSTILE_PICKS["grammar-bomb"](body) and not body.get("stream"):
        response["choices"][0]["message"]["content"] = '{"p0": "value-0'
        response["choices"][0]["finish_reason"] = "length"
    return response


APPLIES_SCHEMAS = Deviation(response=_applying_the_bomb)


def run_suite(
    pytester: pytest.Pytester, srv: FakeServer, *args: str, key: str | None = KEY
) -> tuple[pytest.RunResult, dict]:
    (pytester.path / "stall.yaml").write_text(STALL)
    keyed = [f"--infer-api-key={key}"] if key else []
    result = pytester.runpytest(
        str(SUITE), "-m", "security", f"--infer-endpoint={srv.base_url}", "--infer-request-timeout=20", "-p",
        "no:cacheprovider",
        "--infer-report-dir=report", f"--security-stall={pytester.path / 'stall.yaml'}", *keyed, *args,
    )  # fmt: skip
    return result, json.loads((pytester.path / "report" / "results.json").read_text())


def outcomes(results: dict) -> dict[str, tuple[str, str]]:
    return {name(t): (t["outcome"], t.get("message") or "") for t in results["tests"]}


def test_a_correct_server_passes_every_check_naming_what_it_judged(pytester):
    with FakeServer(APPLIES_SCHEMAS, api_key=KEY) as srv:
        result, results = run_suite(pytester, srv)
    found = outcomes(results)
    assert {name: o for name, (o, _) in found.items()} == {
        "test_every_route_refuses_a_caller_without_the_key": "passed",
        "test_refusals_carry_the_error_envelope": "passed",
        "test_error_answers_disclose_nothing": "passed",
        **{STALL_TEST.format(kind): "passed" for kind in HOSTILE_PICKS},
        "test_a_request_over_the_context_is_refused": "passed",
    }, found
    evidence = {name(t): t["extra"].get("evidence", "") for t in results["tests"]}
    assert (
        "protected routes answered with the key and refused without it"
        in evidence["test_every_route_refuses_a_caller_without_the_key"]
    )
    assert "POST /v1/chat/completions 401" in evidence["test_refusals_carry_the_error_envelope"]
    assert "error answers judged, none discloses" in evidence["test_error_answers_disclose_nothing"]
    assert "HTTP 400 'prompt of" in evidence["test_a_request_over_the_context_is_refused"]
    for (
        kind
    ) in HOSTILE_PICKS:  # the fake answers each at once: the first light request after it is judged
        said = evidence[STALL_TEST.format(kind)]
        assert said.startswith("hostile request answered (HTTP 200) in") and "worst TTFT" in said, (
            said
        )
    table = results["security"]["endpoint"]
    assert table["routes"]["POST /v1/chat/completions"]["verdict"] == "refused"
    assert table["errors_judged"] >= 5 and table["leaks"] == []
    assert table["stalls"]["n-x-max-tokens"]["stall_s"] < 0.8
    assert KEY not in (pytester.path / "report" / "results.json").read_text()


def name(test: dict) -> str:
    return test["nodeid"].split("::")[-1].replace("[endpoint]", "").replace("endpoint-", "")


def test_an_open_route_fails_the_route_check(pytester):
    with FakeServer(open_route("/v1/completions"), api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "refuses_a_caller")
    outcome, message = outcomes(results)["test_every_route_refuses_a_caller_without_the_key"]
    assert outcome == "failed"
    assert "1 route(s) answer a caller without the key: /v1/completions [generate]" in message
    assert "reproduce: curl" in message and KEY not in message
    assert results["security"]["endpoint"]["routes"]["POST /v1/completions"]["verdict"] == "open"


def test_without_a_key_the_route_check_is_not_exercised(pytester):
    with FakeServer() as srv:
        _, results = run_suite(pytester, srv, "-k", "refuses_a_caller", key=None)
    outcome, message = outcomes(results)["test_every_route_refuses_a_caller_without_the_key"]
    assert outcome == "not_exercised" and "no API key" in message


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        (None, {"stack trace", "source file path", "exception name", "host path"}),
        ("model weights under /home/deploy/models/llama-70b", {"host path"}),
        ("vllm.entrypoints.openai.serving_chat failed", {"internal module"}),
        (KEY, {"secret"}),
    ],
    ids=["traceback", "host-path", "module", "api-key"],
)
def test_a_leaking_error_answer_fails_the_disclosure_check(pytester, text, leaked):
    deviation = leak_in_errors() if text is None else leak_in_errors(text)
    with FakeServer(deviation, api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "disclose")
    outcome, message = outcomes(results)["test_error_answers_disclose_nothing"]
    assert outcome == "failed"
    leaks = results["security"]["endpoint"]["leaks"]
    assert {leak["what"] for leak in leaks} == leaked
    assert all(leak["where"] == "error.message" for leak in leaks)
    assert KEY not in json.dumps(results) and KEY not in message


def test_each_kind_of_hostile_request_that_stalls_the_others_fails_its_check(pytester):
    """Each kind's request holds the one engine lock for 2 s: every light request sent meanwhile waits for it."""
    with FakeServer(stall_others(hostile, 2.0), api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "hostile")
    found = outcomes(results)
    for kind in HOSTILE_PICKS:
        outcome, message = found[STALL_TEST.format(kind)]
        assert outcome == "failed", (kind, message)
        assert f"hostile request '{kind}'" in message and "stalled the others by" in message
        assert "light requests in flight while it ran" in message
        assert results["security"]["endpoint"]["stalls"][kind]["stall_s"] > 1.0


def test_an_expensive_request_the_others_do_not_wait_for_passes_naming_what_overlapped_it(pytester):
    with FakeServer(slow_request(HOSTILE_PICKS["n-x-max-tokens"], 2.0), api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "n-x-max-tokens")
    [test] = results["tests"]
    assert test["outcome"] == "passed", test["message"]
    assert "answered (HTTP 200) in 2." in test["extra"]["evidence"]
    assert " light requests in flight while it ran: worst TTFT" in test["extra"]["evidence"]
    assert results["security"]["endpoint"]["stalls"]["n-x-max-tokens"]["overlapping"] >= 4


def test_a_hostile_schema_the_server_does_not_apply_is_not_exercised(pytester):
    """transformers serve 5.24.0 takes response_format and applies none: its answer to the grammar bomb is prose,
    the costly grammar never compiled, and whatever the others' latency it shows nothing of that cost. The fake
    answers ``{"answer": ...}`` whatever the schema says: not the object the bomb requires."""
    with FakeServer(api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "grammar-bomb")
    outcome, message = outcomes(results)[STALL_TEST.format("grammar-bomb")]
    assert outcome == "not_exercised", message
    assert "the answer does not conform to the hostile request's schema" in message, message
    assert "it applied none, so the costly grammar never ran" in message, message


def test_light_requests_held_back_mid_stream_fail_the_stall_check_though_their_first_tokens_were_on_time(
    pytester,
):
    """Every light stream already past its first token pauses while the hostile request runs (2 s): no TTFT moves,
    the gaps between tokens and the whole answers do."""
    with FakeServer(stall_streams(HOSTILE_PICKS["n-x-max-tokens"], 2.0), api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "n-x-max-tokens")
    outcome, message = outcomes(results)[STALL_TEST.format("n-x-max-tokens")]
    assert outcome == "failed", message
    assert (
        "held a streaming light request's next token back by" in message
        and "(limit 800 ms)" in message
    ), message
    assert "stalled the others by" not in message, message  # the first tokens were on time
    stall = results["security"]["endpoint"]["stalls"]["n-x-max-tokens"]
    assert stall["gap_stall_s"] > 1.0 and stall["e2e_stall_s"] > 1.0 and stall["stall_s"] < 0.8, (
        stall
    )


def test_a_refused_a_failed_and_a_shedding_hostile_request_are_told_apart(pytester):
    """Refused at once: nothing ran, not exercised. A 5xx to the valid hostile request, or to the light requests
    beside it: failed, whatever the latency."""
    refuse, fail, shed = (
        HOSTILE_PICKS[k] for k in ("many-stop-strings", "long-prompt", "grammar-bomb")
    )
    shedding = shed_others(shed, 2.0).request
    assert shedding is not None

    def request(path: str, body: dict):
        if refuse(body):
            return 400, error_body("at most 64 stop strings", param="stop")
        if fail(body):
            return 500, error_body("EngineCore encountered an issue", "internal_server_error")
        return shedding(path, body)

    with FakeServer(Deviation(request=request), api_key=KEY) as srv:
        _, results = run_suite(
            pytester, srv, "-k", "many-stop-strings or long-prompt or grammar-bomb"
        )
    found = outcomes(results)
    outcome, message = found[STALL_TEST.format("many-stop-strings")]
    assert outcome == "not_exercised", message
    assert "refused (HTTP 400: 'at most 64 stop strings')" in message and "never ran" in message
    outcome, message = found[STALL_TEST.format("long-prompt")]
    assert (
        outcome == "failed" and "the hostile request, a valid one, failed (HTTP 500" in message
    ), message
    outcome, message = found[STALL_TEST.format("grammar-bomb")]
    assert outcome == "failed" and "light requests got a server error (HTTP 503" in message, message


@pytest.mark.parametrize(
    ("deviation", "said", "envelope"),
    [
        (
            refuse_large(3000, 413),
            "HTTP 413, not 400: a refusal of the body's size (a proxy's limit)",
            "passed",
        ),
        (refuse_large(3000, 429), "HTTP 429, not 400: a rate limit", "passed"),
        (
            flat_errors(),
            "HTTP 400 without the error envelope (no 'error' object (top-level keys: ['detail']))",
            "failed",
        ),
    ],
    ids=["proxy-413", "rate-limit-429", "flat-error"],
)
def test_a_refusal_that_is_not_the_contexts_fails_the_context_check(
    pytester, deviation, said, envelope
):
    """The control (the same request at half the context, about 2 KB) is answered each time; the refusal over it is
    not the context's. Errors without the envelope fail the refusals' envelope check too."""
    with FakeServer(deviation, api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "over_the_context or envelope")
    found = outcomes(results)
    outcome, message = found["test_a_request_over_the_context_is_refused"]
    assert outcome == "failed" and said in message, message
    assert "over the documented limit 'prompt over the 2048-token context'" in message
    assert found["test_refusals_carry_the_error_envelope"][0] == envelope, found


def test_the_context_check_needs_a_completion_under_the_limit_not_a_status(pytester):
    """HTTP 200 without a completion for the request under the limit: the refusal over it proves nothing."""
    empty = Deviation(
        request=lambda path, body: (
            (200, {}) if body.get("max_tokens") == 1 and len(str(body)) > 1000 else None
        )
    )
    with FakeServer(empty, api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "over_the_context")
    outcome, message = outcomes(results)["test_a_request_over_the_context_is_refused"]
    assert (
        outcome == "inconclusive" and "got no chat completion: HTTP 200 without choices" in message
    ), message


def test_a_candidate_that_stalls_longer_fails_the_gate(pytester):
    """The same hostile kind on a baseline that keeps the others going and on a candidate that stalls them past the
    limit: the gate names the kind."""
    from pytest_infer.gating.compare import compare
    from pytest_infer.results.model import SessionResults

    with FakeServer(api_key=KEY) as srv:
        _, baseline = run_suite(pytester, srv, "-k", "n-x-max-tokens")
    (pytester.path / "report" / "results.json").rename(pytester.path / "base.json")
    with FakeServer(stall_others(lambda body: body.get("n") == 16, 2.0), api_key=KEY) as srv:
        _, candidate = run_suite(pytester, srv, "-k", "n-x-max-tokens")
    assert (
        outcomes(baseline)["test_one_hostile_request_does_not_stall_the_others[n-x-max-tokens]"][0]
        == "passed"
    )
    gate = compare(
        SessionResults.read(pytester.path / "base.json"),
        SessionResults.read(pytester.path / "report" / "results.json"),
    )
    assert gate.verdict.startswith("FAIL"), gate.verdict
    assert any(
        "n-x-max-tokens" in f.subject and "stalled the others by" in f.detail
        for f in gate.regressions
    ), [f.line() for f in gate.findings]


@pytest.mark.parametrize("mode", sorted(NULL_MODES))
def test_no_check_passes_against_a_null_server(pytester, mode):
    with FakeServer(NULL_MODES[mode](), api_key=KEY) as srv:
        _, results = run_suite(pytester, srv, "-k", "not hostile or n-x-max-tokens")
    found = outcomes(results)
    assert found and not [name for name, (o, _) in found.items() if o == "passed"], found
    stall = found["test_one_hostile_request_does_not_stall_the_others[n-x-max-tokens]"]
    assert stall[0] == "inconclusive" and "a light request alone got no first output" in stall[1], (
        stall
    )


def run_against_a_process(pytester: pytest.Pytester, fault: str, *args: str) -> dict:
    """The suite against a fake server in a process of its own, with ``fault``: a server that can really die."""
    import os

    with serving_process(fault, {**os.environ, "VLLM_API_KEY": KEY}) as url:
        return run_suite(pytester, type("Endpoint", (), {"base_url": url})(), *args)[1]


def test_a_server_that_dies_during_the_route_check_fails_it_naming_the_route(pytester):
    """A request that takes the server down is met by the route check: it fails naming that route, never passes on
    the routes it saw refused before."""
    results = run_against_a_process(pytester, "die-after-0", "-k", "refuses_a_caller")
    outcome, message = outcomes(results)["test_every_route_refuses_a_caller_without_the_key"]
    assert outcome == "failed", message
    assert (
        "the server stopped answering during the route check, after POST /v1/chat/completions [generate]"
        in message
    )
    assert "Authorization: Bearer $PYTEST_INFER_API_KEY" in message and KEY not in message


@pytest.mark.parametrize(
    ("keyed", "named"),
    [
        (
            (200, "RemoteProtocolError", "ConnectError"),
            "/chat",
        ),  # died on the chat request, refused connections after
        (
            (200, "RemoteProtocolError", "ReadError"),
            "/chat",
        ),  # still accepting while it exited: a read fails
        ((200, "ConnectError", "ConnectError"), "/models"),  # answered, then gone
        (("ConnectError", "ConnectError", "ConnectError"), None),  # silent from the first route
    ],
)
def test_the_route_a_server_went_silent_at_is_named_however_its_death_reached_the_client(
    keyed, named
):
    from pytest_infer.security.routes import RouteProbe, last_answered_before_silence

    paths = ("/models", "/chat", "/completions")
    probes = [
        RouteProbe(path, "generate", "POST", "openapi", answer, True)
        for path, answer in zip(paths, keyed)
    ]
    found = last_answered_before_silence(probes)
    assert (found and found.path) == named


def test_a_route_that_changes_state_is_probed_with_a_method_it_does_not_serve():
    """Its router refuses that with 405 once past the key check: the probe never does what the route is for."""
    from pytest_infer.security.routes import Route, probe_request

    assert probe_request(Route("/start_profile", "change-state", {"GET", "POST"}), "m") == (
        "DELETE",
        None,
    )
    assert probe_request(Route("/flush_cache", "change-state", {"POST"}), "m") == ("GET", None)
    assert probe_request(
        Route("/server_info", "internals", {"GET", "DELETE", "PUT", "PATCH"}), "m"
    ) == ("TRACE", None)
    assert probe_request(Route("/health", "read", {"GET"}), "m") == ("GET", None)


def test_a_server_that_dies_on_a_bad_request_fails_the_disclosure_check_naming_it(pytester):
    results = run_against_a_process(pytester, "die-on-unknown-token-ids", "-k", "disclose")
    outcome, message = outcomes(results)["test_error_answers_disclose_nothing"]
    assert outcome == "failed", message
    assert (
        "the server died on a bad request instead of refusing it; the first left unanswered: RemoteProtocolError"
        in message
    )
    assert "/v1/completions" in message and "-10" not in message and KEY not in message

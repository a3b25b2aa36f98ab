"""The security suite's parts on their own: route classes, the disclosure scan, the error log, the stall judge, the
table."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest

from pytest_infer.adapters.base import KnownRoute, routes
from pytest_infer.client.errors import ErrorLog, record_errors
from pytest_infer.load.trace import RequestTrace
from pytest_infer.security.disclosure import (
    environment_secrets,
    scan_body,
    scan_headers,
    sent_strings,
)
from pytest_infer.security.routes import Route, RouteProbe, classify, probe_request
from pytest_infer.security.stall import Hostile, StallLimits, judge
from pytest_infer.security.table import SecurityTable
from pytest_infer.table import Pairing


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/invocations", "generate"),
        ("/v1/chat/completions", "generate"),
        ("/sleep", "change-state"),
        ("/flush_cache", "change-state"),
        ("/get_server_info", "internals"),
        ("/collective_rpc", "internals"),
        ("/health", "read"),
        ("/version", "read"),
    ],
)
def test_unknown_routes_are_classed_by_their_words(path, kind):
    assert classify(path) == kind


def test_a_route_kind_outside_the_list_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match="valid kinds are read, generate, change-state, internals"):
        KnownRoute("GET", "/x", "dangerous")
    assert routes("read", "GET /a", "POST /b") == (
        KnownRoute("GET", "/a", "read"),
        KnownRoute("POST", "/b", "read"),
    )


def test_a_state_changing_route_is_never_asked_to_act():
    assert probe_request(Route("/sleep", "change-state", {"POST"}), "m") == ("GET", None)
    assert probe_request(Route("/invocations", "generate", {"POST"}), "m")[1]["max_tokens"] == 1


def test_an_open_route_and_a_refused_one():
    opened = RouteProbe(
        "/invocations", "generate", "POST", "adapter", 200, True, no_key=200, wrong_key=200
    )
    refused = RouteProbe(
        "/v1/completions", "generate", "POST", "openapi", 200, True, no_key=401, wrong_key=401
    )
    past_the_key = RouteProbe(
        "/scale", "change-state", "GET", "openapi", 405, True, True, no_key=405, wrong_key=405
    )
    unrouted = RouteProbe("/x", "generate", "POST", "openapi", 200, True, no_key=404, wrong_key=401)
    assert (opened.verdict, refused.verdict, past_the_key.verdict, unrouted.verdict) == (
        "open",
        "refused",
        "open",
        "unclear",
    )
    assert RouteProbe("/x", "generate", "POST", "openapi", 404, False).verdict == "not reached"


def test_the_scan_names_each_leak_by_its_field_and_masks_secrets():
    body = (
        '{"error": {"message": "Traceback (most recent call last):\\n  File \\"/usr/lib/python3/site.py\\", line'
        ' 3\\nKeyError: x", "type": "BadRequestError", "detail": "key sk-secret-1234 rejected"}}'
    )
    leaks = scan_body(body, ["sk-secret-1234"])
    assert {(leak.what, leak.where) for leak in leaks} == {
        ("stack trace", "error.message"),
        ("source file path", "error.message"),
        ("host path", "error.message"),
        ("exception name", "error.message"),
        ("secret", "error.detail"),
    }
    assert all("sk-secret-1234" not in leak.excerpt for leak in leaks)
    assert (
        scan_body(
            '{"error": {"message": "max_tokens must be at least 1", "type": "BadRequestError"}}'
        )
        == []
    )
    assert scan_headers([("server", "uvicorn"), ("x-trace", "/root/app/main.py")]) != []
    assert scan_headers([("server", "uvicorn"), ("content-type", "application/json")]) == []
    assert environment_secrets(
        {"HF_TOKEN": "hf_abcdefghij", "PATH": "/usr/bin", "API_KEY": "1"}
    ) == ["hf_abcdefghij"]


def test_the_error_log_keeps_what_the_caller_read_of_an_error_only():
    log = ErrorLog()

    class Streamed(
        httpx.SyncByteStream
    ):  # as a real transport's body: read only when the caller reads it
        def __init__(self, data: bytes) -> None:
            self.data = data

        def __iter__(self):
            yield self.data

    def answer(request: httpx.Request) -> httpx.Response:
        status = 200 if request.url.path == "/ok" else 400
        return httpx.Response(
            status, stream=Streamed(b'{"error": {"message": "%s"}}' % request.url.path.encode())
        )

    with httpx.Client(
        transport=httpx.MockTransport(answer),
        base_url="http://x:1",
        event_hooks={"response": [lambda r: record_errors(r, log)]},
    ) as c:
        c.get("/ok")
        c.get("/bad")
    [only] = log.snapshot()
    assert (only.origin, only.method, only.path, only.status) == (
        "http://x:1",
        "GET",
        "/bad",
        400,
    ) and "/bad" in only.body


def _trace(
    i: int, at_s: float, ttft_s: float | None, phase: str = "measured", status: int = 200
) -> RequestTrace:
    sent = int(at_s * 1e9)
    events = [] if ttft_s is None else [sent + int(ttft_s * 1e9)]
    return RequestTrace(
        i,
        phase,
        intended_ns=sent,
        sent_ns=sent,
        event_ns=events,
        end_ns=sent + 10**7,
        status=status,
    )


BASE = [
    _trace(0, 0.1, 9.0, "warmup"),
    _trace(1, 0.5, 0.1),
    _trace(2, 1.0, 0.1),
    _trace(3, 1.5, 0.1),
]
LIMITS = replace(StallLimits.load(), stall_limit_s=1.0)


def _hostile(
    status: int | None = 200, start_s: float = 2.0, end_s: float = 4.0, **fields
) -> Hostile:
    return Hostile(
        "k", status=status, start_ns=int(start_s * 1e9), end_ns=int(end_s * 1e9), **fields
    )


def test_the_judge_measures_the_stall_and_the_recovery():
    hostile = _hostile()
    calm = judge("k", [*BASE, _trace(4, 2.5, 0.3), _trace(5, 5.0, 0.1)], hostile, LIMITS)
    assert (calm.verdict, round(calm.stall_s, 3), calm.recovered) == ("passed", 0.2, True)
    stalled = judge("k", [*BASE, _trace(4, 2.5, 1.8), _trace(5, 5.0, 0.1)], hostile, LIMITS)
    assert stalled.verdict == "failed" and "stalled the others by 1700 ms" in stalled.why
    stuck = judge("k", [*BASE, _trace(4, 2.5, 0.2), _trace(5, 5.0, 2.0)], hostile, LIMITS)
    assert stuck.verdict == "failed" and "did not come back" in stuck.why
    assert judge("k", BASE[:2], hostile, LIMITS).verdict == "inconclusive"


def test_a_pass_names_how_long_the_hostile_request_ran_what_overlapped_it_and_their_worst_latency():
    """A light request sent before the hostile one but still waiting when it started met it too."""
    met_at_start = _trace(4, 1.9, 0.4)
    stall = judge(
        "k", [*BASE, met_at_start, _trace(5, 2.5, 0.3), _trace(6, 5.0, 0.1)], _hostile(), LIMITS
    )
    assert stall.verdict == "passed", stall.why
    assert "answered (HTTP 200) in 2.00s" in stall.why
    assert (
        "2 light requests in flight while it ran: worst TTFT 400 ms against a median of 100 ms before"
        in stall.why
    )
    assert stall.to_json()["overlapping"] == 2 and stall.to_json()["hostile_outcome"] == "answered"


def test_a_refused_hostile_request_that_met_no_light_request_is_not_exercised():
    """The server refused it at once: nothing ran, so nothing was stalled and nothing was judged."""
    refused = _hostile(400, 2.0, 2.01, said="too many stop strings")
    stall = judge("k", [*BASE, _trace(4, 2.5, 0.1), _trace(5, 3.0, 0.1)], refused, LIMITS)
    assert stall.verdict == "not_exercised", stall.why
    assert (
        "refused (HTTP 400: 'too many stop strings') in 0.01s" in stall.why
        and "never ran" in stall.why
    )


def test_a_refusal_that_ran_long_enough_to_stall_the_others_fails():
    refused = _hostile(400, 2.0, 4.0, said="grammar too large")
    stall = judge("k", [*BASE, _trace(4, 2.5, 1.8), _trace(5, 5.0, 0.1)], refused, LIMITS)
    assert stall.verdict == "failed" and "stalled the others by 1700 ms" in stall.why


@pytest.mark.parametrize(
    ("hostile", "said"),
    [
        (_hostile(500, said="EngineCore died"), "failed (HTTP 500: 'EngineCore died')"),
        (_hostile(None, error="RemoteProtocolError"), "failed (RemoteProtocolError)"),
        (
            _hostile(200, said="HTTP 200 without choices: '{}'"),
            "failed (HTTP 200: \"HTTP 200 without choices: '{}'\")",
        ),
    ],
    ids=["5xx", "dropped", "no-completion"],
)
def test_a_valid_hostile_request_that_fails_fails_the_check(hostile, said):
    stall = judge("k", [*BASE, _trace(4, 2.5, 0.1), _trace(5, 5.0, 0.1)], hostile, LIMITS)
    assert stall.verdict == "failed", stall.why
    assert f"the hostile request, a valid one, {said}" in stall.why


def test_a_light_request_with_a_server_error_fails_the_check():
    shed = [_trace(4, 2.5, None, status=503), _trace(5, 3.0, None, status=503), _trace(6, 5.0, 0.1)]
    stall = judge("k", [*BASE, *shed], _hostile(), LIMITS)
    assert (
        stall.verdict == "failed"
        and "2 of 6 light requests got a server error (HTTP 503 x2)" in stall.why
    )


def test_a_hostile_request_answered_before_any_light_request_met_it():
    """Shorter than the limit, it could hold no light request back past it: the first one after it is judged. As long
    as the limit, with nothing in flight, nothing was measured."""
    quick = judge(
        "k", [*BASE, _trace(4, 2.5, 0.15), _trace(5, 3.0, 0.1)], _hostile(200, 2.0, 2.05), LIMITS
    )
    assert quick.verdict == "passed", quick.why
    assert (
        "no light request in flight while it ran (it took under the 1000 ms limit); the first after it"
        in quick.why
    )
    lingering = judge(
        "k", [*BASE, _trace(4, 2.5, 1.5), _trace(5, 3.0, 0.1)], _hostile(200, 2.0, 2.05), LIMITS
    )
    assert lingering.verdict == "failed" and "stalled the others by 1400 ms" in lingering.why
    slow = judge("k", [*BASE, _trace(4, 5.5, 0.1)], _hostile(200, 2.0, 5.0), LIMITS)
    assert slow.verdict == "inconclusive" and "no light request was in flight" in slow.why


def test_the_gate_fails_a_route_the_candidate_opened():
    def table(target: str, verdict: str) -> SecurityTable:
        t = SecurityTable()
        t.target(target)["routes"]["POST /invocations"] = {
            "kind": "generate",
            "verdict": verdict,
            "no_key": 200,
            "reproducer": "curl x",
        }
        return t

    pairing = Pairing("a", "b", "a -> b")
    [finding] = table("b", "open").compare(table("a", "refused"), pairing)
    assert (finding.kind, finding.subject, finding.reproducer) == (
        "regression",
        "POST /invocations [generate]",
        "curl x",
    )
    assert table("b", "refused").compare(table("a", "open"), pairing)[0].kind == "improvement"
    assert table("b", "open").compare(table("a", "open"), pairing) == []
    merged = table("a", "open")
    merged.merge(table("b", "refused"))
    assert [s.heading for s in merged.sections()] == ["route"]
    cause = merged.cause(
        "test", "2 route(s) answer a caller without the key: /invocations [generate]"
    )
    assert (
        cause is not None
        and cause.severity == "critical"
        and cause.place == "/invocations [generate]"
    )


def test_an_error_that_echoes_the_request_or_the_model_id_discloses_nothing():
    sent = '{"model": "/models/llama", "messages": [{"role": "user", "content": "see /home/me/notes.py"}]}'
    body = (
        '{"detail": [{"msg": "bad", "input": "see /home/me/notes.py"}], "pinned": "/models/llama"}'
    )
    assert scan_body(body, [], ["/models/llama", *sent_strings(sent)]) == []
    assert {leak.what for leak in scan_body(body)} == {"host path", "source file path"}


def test_a_body_nested_past_the_parser_is_scanned_as_text():
    deep = "[" * 5000 + "]" * 5000
    assert sent_strings(deep) == [deep]
    assert {leak.what for leak in scan_body(deep + " Traceback (most recent call last):")} == {
        "stack trace"
    }


def test_a_stall_file_of_some_keys_takes_the_bundled_file_for_the_others(tmp_path):
    """The bundled stall.yaml is where the defaults live (a partial file once took the
    dataclass's own, 3.0 s and 6.0 s, instead of its 2.5 s and 5.0 s; the dataclass has none now)."""
    bundled = StallLimits.load()
    partial = tmp_path / "stall.yaml"
    partial.write_text("rate: 4.0\nbefore_s: 1.5\n")
    limits = StallLimits.load(partial)
    assert (limits.rate, limits.before_s) == (4.0, 1.5)
    assert limits.hostile_timeout_s == bundled.hostile_timeout_s == 5.0
    assert limits.after_s == bundled.after_s == 2.5
    with pytest.raises(TypeError):
        StallLimits()  # type: ignore[call-arg]

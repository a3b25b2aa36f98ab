"""The robustness suite against the fake server: all green when the server is right, and each check
fails, with its own message and count, when the server is wrong in exactly that way."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpcore  # noqa: F401  kept loaded across in-process runs (see tests/faults/test_faults.py)
import pytest

from pytest_infer.testing.fakeserver import Deviation, FakeServer, error_body

SUITE = Path(__file__).resolve().parents[2] / "suites" / "robustness"


def run_suite(
    pytester: pytest.Pytester, srv: FakeServer, *args: str, timeout: float = 3.0
) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest(
        str(SUITE), "-m", "robustness", f"--infer-endpoint={srv.base_url}", f"--infer-request-timeout={timeout}",
        "-p", "no:cacheprovider", "--infer-report-dir=report", *args,
    )  # fmt: skip
    return result, json.loads((pytester.path / "report" / "results.json").read_text())


def failures(results: dict) -> dict[str, str]:
    return {
        t["nodeid"].split("[")[-1].rstrip("]").removeprefix("endpoint-"): t["message"]
        for t in results["tests"]
        if t["outcome"] == "failed"
    }


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_a_correct_server_passes_the_catalogue_and_is_counted(pytester):
    with FakeServer() as srv:
        result, results = run_suite(pytester, srv, "-k", "test_bad_request_is_refused", timeout=20)
    cases = result.parseoutcomes()["passed"]
    result.assert_outcomes(passed=cases)
    assert cases >= 30 and len(results["tests"]) == cases
    counts = results["robustness"]["endpoint"]
    assert counts["tried"] == counts["4xx"] == cases
    assert counts["5xx"] == counts["hangs"] == counts["deaths"] == counts["accepted"] == 0
    result.stdout.fnmatch_lines(
        [
            "robustness *endpoint*",
            f"tried *{cases}",
            f"4xx *{cases}",
            "5xx *0",
            "accepted *0",
            "hangs *0",
            "deaths *0",
        ]
    )
    for test in results[
        "tests"
    ]:  # each pass names its control, the refusal it judged and the health after it
        evidence = test["extra"]["evidence"]
        assert "the same request without the fault answered correctly;" in evidence, test
        assert re.search(
            r"got HTTP 4\d\d with the error envelope \(.+\); a normal request was answered",
            evidence,
        )


def test_the_generated_and_the_abuse_checks_pass_a_correct_server_naming_what_they_judged(pytester):
    with FakeServer() as srv:
        result, results = run_suite(pytester, srv, "-k", "generated or abuse", timeout=20)
    result.assert_outcomes(passed=4)
    evidence = {
        t["nodeid"].split("::")[-1].split("[")[0]: t["extra"]["evidence"] for t in results["tests"]
    }
    assert re.match(
        r"\d+ generated bad chat requests \(plain and streamed, after both controls answered correctly\): \d+"
        r" refused with the error envelope, \d+ accepted, none a 5xx",
        evidence["test_generated_bad_requests_never_break_the_server"],
    ), evidence
    assert (
        "4 streams dropped after their first event"
        in evidence["test_disconnect_mid_stream_frees_the_request"]
    )
    assert (
        "32 concurrent streams served until their clients left"
        in evidence["test_many_concurrent_aborts"]
    )
    assert (
        "a 16-token request answered correctly in"
        in evidence["test_slow_reading_client_does_not_block_others"]
    )


def when(field: str, value: object, answer: tuple[int, object]) -> Deviation:
    """Answer ``answer`` to requests whose ``field`` equals ``value``; spec-correct otherwise."""
    return Deviation(request=lambda path, body: answer if body.get(field) == value else None)


@pytest.mark.parametrize(
    ("case", "deviation", "message", "counter"),
    [
        (
            "negative_temperature",
            when("temperature", -1.0, (500, error_body("boom", "server_error"))),
            "HTTP 500 (a server error for bad input",
            "5xx",
        ),
        (
            "top_p_over_1",
            when("top_p", 1.5, (400, {"detail": "top_p"})),
            "HTTP 400 without the error envelope: no 'error' object",
            "4xx",
        ),
        (
            "n_zero",
            when("n", 0, (200, {"id": "x", "object": "chat.completion", "choices": []})),
            "accepted with HTTP 200 instead of a 4xx",
            "accepted",
        ),
    ],
)
def test_each_wrong_answer_fails_its_case(pytester, case, deviation, message, counter):
    with FakeServer(deviation) as srv:
        result, results = run_suite(pytester, srv, "-k", f"refused and ({case} or malformed_json)")
    result.assert_outcomes(passed=1, failed=1)
    assert message in failures(results)[case]
    assert "reproduce: curl" in failures(results)[case]
    assert results["robustness"]["endpoint"][counter] >= 1


def test_a_hang_is_cut_at_the_timeout_counted_and_the_session_goes_on(pytester, release):
    deviation = Deviation(
        request=lambda path, body: release.wait(60) and None if body.get("n") == 0 else None
    )
    with FakeServer(deviation) as srv:
        started = time.monotonic()
        result, results = run_suite(
            pytester, srv, "-k", "refused and (n_zero or malformed_json or n_far)", timeout=2
        )
        elapsed = time.monotonic() - started
    result.assert_outcomes(passed=2, failed=1)
    assert "no answer: ReadTimeout after 2s" in failures(results)["n_zero"]
    assert results["robustness"]["endpoint"]["hangs"] == 1
    assert elapsed < 30


def test_a_server_death_is_counted_once_and_later_cases_fail_fast(pytester):
    holder: dict[str, FakeServer] = {}

    def die(path: str, body: dict):
        if body.get("seed") == 2**70:  # the seed_over_64_bits case kills the server
            srv = holder["srv"]
            srv.httpd.socket.close()  # no new connections: refused from now on
            threading.Thread(target=srv.httpd.shutdown, daemon=True).start()
            return (500, error_body("dying", "server_error"))
        return None

    with FakeServer(Deviation(request=die)) as srv:
        holder["srv"] = srv
        result, results = run_suite(
            pytester,
            srv,
            "-k",
            "refused and (seed_over_64_bits or unknown_model or lone_surrogate)",
        )
    result.assert_outcomes(passed=0, failed=3)
    found = failures(results)
    assert "the server is gone" in found["seed_over_64_bits"]
    assert "server unusable since an earlier test" in found["unknown_model"]
    assert results["robustness"]["endpoint"]["deaths"] == 1


def test_the_generated_check_finds_a_5xx_nobody_listed(pytester):
    """Hypothesis corrupts fields the catalogue never touches; a 500 on one of them is found and shrunk."""

    def bad_stop(path: str, body: dict):
        stop = body.get("stop")
        return (
            (500, error_body("stop crashed", "server_error"))
            if stop is not None and not isinstance(stop, (str, list))
            else None
        )

    with FakeServer(Deviation(request=bad_stop)) as srv:
        result, results = run_suite(pytester, srv, "-k", "generated")
    result.assert_outcomes(failed=1)
    message = next(iter(failures(results).values()))
    assert "invalid stop -> 5xx 500" in message
    assert results["robustness"]["endpoint"]["5xx"] >= 1


class OneAtATime:
    """A server that generates for one request at a time; ``frees_aborted`` says whether it stops for a client that
    left."""

    def __init__(self, frees_aborted: bool, events: int = 60, delay: float = 0.05) -> None:
        self.frees_aborted, self.events, self.delay = frees_aborted, events, delay
        self.lock = threading.Lock()

    def __call__(self, path: str, body: dict, handler) -> None:
        with self.lock:
            answer = handler._chat(body)
            if isinstance(answer, dict):
                return handler._send_json(200, answer)
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            handler.close_connection = True
            for event in [*[e for e in answer if e != "[DONE]"][: self.events], "[DONE]"]:
                try:
                    handler.wfile.write(
                        f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode()
                    )
                    handler.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    if self.frees_aborted:
                        return
                time.sleep(
                    self.delay
                )  # "generating" the next token, whether anyone reads it or not


# (test, fake server's work per stream, streams the test aborts): the disconnect test drops 4 streams one after
# another; the concurrent one aborts 32 at once, so each costs less, or the backlog would outlast the health check
ABUSE = {"disconnect": ({}, 4), "concurrent_aborts": ({"events": 25, "delay": 0.01}, 32)}


@pytest.mark.parametrize("frees_aborted", [True, False], ids=["frees", "keeps-generating"])
@pytest.mark.parametrize("test", list(ABUSE))
def test_the_abort_checks_see_a_server_that_keeps_generating(pytester, test, frees_aborted):
    work, aborted = ABUSE[test]
    with FakeServer(Deviation(raw_stream=OneAtATime(frees_aborted, **work))) as srv:
        result, results = run_suite(pytester, srv, "-k", test, timeout=60)
    if frees_aborted:
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(failed=1)
        assert "the server seems to keep working for clients that are gone" in next(
            iter(failures(results).values())
        )
    assert results["robustness"]["endpoint"]["aborted"] == aborted


def refuse_streams(status: int, longer_than: int = 0) -> Deviation:
    """Refuse every stream of more than ``longer_than`` tokens with ``status`` (a server that limits long streams)."""

    def refuse(path: str, body: dict):
        long = (body.get("max_tokens") or 0) > longer_than
        return (
            (status, error_body("too many streams", "rate_limit_error"))
            if body.get("stream") and long and path.endswith("/chat/completions")
            else None
        )

    return Deviation(request=refuse)


@pytest.mark.parametrize("status", [429, 503])
def test_the_concurrent_abort_check_fails_when_the_streams_are_refused(pytester, status):
    """Refused streams abort nothing: a 4xx counts as much as a 5xx (it used to pass on anything but a 5xx). The server
    serves the controls' short stream, so the refusal of the long ones is the server's fault."""
    with FakeServer(refuse_streams(status, longer_than=4)) as srv:
        result, results = run_suite(pytester, srv, "-k", "concurrent_aborts", timeout=20)
    result.assert_outcomes(failed=1)
    message = next(iter(failures(results).values()))
    assert re.search(
        rf"\d+ of 32 concurrent streams were not served until their client left: \['HTTP {status}'\]",
        message,
    ), message


def skips(results: dict) -> dict[str, str]:
    return {
        t["nodeid"].split("::")[-1]: t["message"]
        for t in results["tests"]
        if t["outcome"] in ("skipped", "inconclusive")
    }


def test_an_abuse_of_a_server_that_serves_no_stream_is_inconclusive_naming_the_control(pytester):
    with FakeServer(refuse_streams(503)) as srv:
        result, results = run_suite(pytester, srv, "-k", "concurrent_aborts", timeout=20)
    result.assert_outcomes(skipped=1)
    [message] = skips(results).values()
    assert (
        "bad request 'many_concurrent_aborts:stream' not judged: its positive control (the same request without the"
        " fault) was not answered correctly: HTTP 503: " in message
    )
    assert "control: curl " in message and '"stream": true' in message
    assert results["robustness"]["endpoint"]["aborted"] == 0


def test_a_bad_request_whose_route_serves_nothing_is_inconclusive_and_not_counted(pytester):
    """The catalogue's refusal counts only where the same request without the fault is served: a server refusing
    everything at /v1/completions gets no credit for refusing a prompt over the context there."""
    refuse = Deviation(
        request=lambda path, body: (
            (404, error_body("no such route", "not_found_error"))
            if path == "/v1/completions"
            else None
        )
    )
    with FakeServer(refuse) as srv:
        result, results = run_suite(
            pytester,
            srv,
            "-k",
            "refused and (missing_prompt or completions_prompt_over_context or malformed_json)",
        )
    result.assert_outcomes(passed=1, skipped=2)
    assert all(
        "its positive control" in m and "HTTP 404" in m and "/v1/completions" in m
        for m in skips(results).values()
    )
    assert results["robustness"]["endpoint"]["tried"] == 1

"""An ``--infer-endpoint`` that cannot be reached is one finding that names it, not one failure per test.

The endpoint is probed once, on first use: no HTTP answer at all (connection refused, a name that does not resolve,
a TLS handshake that fails) fails the first test with the URL and the error, and the target's other tests are not
run, saying why, in the terminal, results.json, summary.md, report.html and the JUnit XML alike. A server that
answers, even 404 to everything, is reachable, and its tests are judged.
"""

from __future__ import annotations

import glob
import html
import json
import socket
import threading
import xml.etree.ElementTree as ET

import pytest

from pytest_infer.server.process import free_port
from pytest_infer.testing.fakeserver import Deviation, FakeServer, not_found

SESSION = """
def test_1(infer_client):
    assert infer_client.chat_completion("hi", max_tokens=2)["choices"]

def test_2(infer_client):
    assert infer_client.chat_completion("hi", max_tokens=2)["choices"]

def test_3(infer_endpoint):
    assert infer_endpoint.models()

def test_4(infer_server):
    assert infer_server.model

def test_5_needs_no_server():
    pass
"""


def run(pytester: pytest.Pytester, url: str) -> pytest.RunResult:
    pytester.makepyfile(test_session=SESSION)
    return pytester.runpytest_subprocess(
        f"--infer-endpoint={url}",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--junitxml=junit.xml",
    )


@pytest.fixture(params=["closed-port", "unresolvable-host", "tls-to-plain-http"])
def unreachable(request) -> tuple[str, str]:
    """(URL, the start of the error that names why): nothing listens, the name does not resolve, TLS to a server
    that speaks plain HTTP."""
    if request.param == "closed-port":
        yield f"http://127.0.0.1:{free_port()}", "ConnectError: [Errno 111] Connection refused"
    elif request.param == "unresolvable-host":
        yield "http://no-such-host.invalid:8000", "ConnectError: "
    else:
        with FakeServer() as server:
            yield server.base_url.replace("http://", "https://"), "ConnectError: [SSL"


def test_an_unreachable_endpoint_is_one_error_naming_it_and_the_rest_not_run(pytester, unreachable):
    url, error = unreachable
    result = run(pytester, url)
    result.assert_outcomes(errors=1, skipped=3, passed=1)
    cause = f"endpoint: cannot reach {url}: {error}"
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_1[[]endpoint[]]*",
            f"{glob.escape(cause)}*",
            "findings: 1 root causes of 1 failed tests",
            f"  [[]critical[]] {glob.escape(cause)}*; 3 tests not run",
            f"endpoint: endpoint unknown model=tiny ({glob.escape(cause.removeprefix('endpoint: '))}*): 1 error,"
            " 3 not run",
        ]
    )
    report = pytester.path / "infer-report"
    results = json.loads((report / "results.json").read_text())
    assert [t["outcome"] for t in results["tests"]] == ["error", "not_run", "not_run", "not_run"]
    assert results["targets"]["endpoint"]["error"].startswith(f"cannot reach {url}: {error}")
    summary = (report / "summary.md").read_text()
    assert "### Findings: 1 root causes of 1 failed tests" in summary
    assert f"1. **[critical]** {cause}" in summary and "; 3 tests not run" in summary
    page = html.unescape((report / "report.html").read_text())
    assert (
        "Findings: 1 root causes of 1 failed tests" in page
        and cause in page
        and "3 tests not run" in page
    )
    cases = {
        c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    }
    (errored,) = [name for name, case in cases.items() if case.find("error") is not None]
    assert errored == "test_1[endpoint]" and url in cases[errored].find("error").get("message")
    skipped = {
        name: case.find("skipped").get("message")
        for name, case in cases.items()
        if case.find("skipped") is not None
    }
    assert sorted(skipped) == ["test_2[endpoint]", "test_3[endpoint]", "test_4[endpoint]"]
    assert all(f"not run: {cause}" in message for message in skipped.values()), skipped
    assert not any(case.find("failure") is not None for case in cases.values())


def test_an_endpoint_answering_404_to_everything_is_reachable_and_its_tests_are_judged(pytester):
    with FakeServer(not_found()) as server:
        result = run(pytester, server.base_url)
    result.assert_outcomes(failed=3, passed=2)  # test_4 asks nothing of it, test_5 needs no server
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert results["targets"]["endpoint"]["error"] is None
    assert [t["outcome"] for t in results["tests"]] == ["failed", "failed", "failed", "passed"]


@pytest.fixture(params=["undecodable-body", "not-http"])
def garbage(request) -> tuple[str, str]:
    """(URL, the error named): an answer whose body does not decode as its headers say (gzip that is not), and bytes
    that are no HTTP at all."""
    if request.param == "undecodable-body":
        with FakeServer(
            Deviation(headers=lambda path, status: {"Content-Encoding": "gzip"})
        ) as server:
            yield (
                server.base_url,
                f"cannot read {server.base_url}'s answer to GET /v1/models: DecodingError: ",
            )
        return
    with socket.create_server(("127.0.0.1", 0)) as listener:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"

        def answer_garbage() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(65536)
                    conn.sendall(b"\x00\xffgarbage, not HTTP\r\n\r\n")

        threading.Thread(target=answer_garbage, daemon=True).start()
        yield url, f"cannot reach {url}: RemoteProtocolError: "


def test_an_endpoint_answering_garbage_is_one_error_naming_it_and_the_rest_not_run(
    pytester, garbage
):
    """The detection's first request got bytes it cannot read: one error naming the URL and what failed, as for no
    answer at all, never a traceback out of the session or one failure per test."""
    url, error = garbage
    result = run(pytester, url)
    result.assert_outcomes(errors=1, skipped=3, passed=1)
    results = json.loads((pytester.path / "infer-report" / "results.json").read_text())
    assert [t["outcome"] for t in results["tests"]] == ["error", "not_run", "not_run", "not_run"]
    assert results["targets"]["endpoint"]["error"].startswith(error), results["targets"][
        "endpoint"
    ]["error"]
    result.stdout.fnmatch_lines([f"endpoint: {glob.escape(error)}*"])

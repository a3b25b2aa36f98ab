"""A failing structured request carries the server's own log lines written while it ran.

``ServerInfo.log_mark`` / ``log_since`` read the (already redacted) server log by window;
the runner keeps that window on a failing ``Attempt`` (waiting briefly for a line flushed
after the answer) and nothing on a passing one; the suite shows the lines in the failure
message and records them (``infer_server_log``: results.json's ``extra.server_log``, the
JUnit XML's properties). End to end, a launched fake vLLM logs an xgrammar-like warning
exactly when it gets a schema with ``format``, and only that line reaches the failing test.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

# loaded before any in-process inner run (see test_suite_outcomes.py)
pytest.importorskip("matplotlib.figure")
httpx.HTTPTransport()

from core.fakeenv import make_fake_env  # noqa: E402

from pytest_infer.adapters.external import ENDPOINT  # noqa: E402
from pytest_infer.client.endpoint import Endpoint  # noqa: E402
from pytest_infer.client.http import InferClient  # noqa: E402
from pytest_infer.server.pool import ServerInfo  # noqa: E402
from pytest_infer.structured import AnswerClass  # noqa: E402
from pytest_infer.structured import runner as runner_module  # noqa: E402
from pytest_infer.structured.judge import SUPPORT_PROBES, record_evidence, survive  # noqa: E402
from pytest_infer.structured.runner import LOG_SECTION, RESPONSE_FORMAT, StructuredRunner  # noqa: E402
from pytest_infer.testing.fakeserver import MODEL, Deviation, FakeServer, error_body  # noqa: E402

from . import deviations  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
SUITE = TESTS.parent / "suites" / "structured"
WARNING = (
    "json_schema_converter.cc:1161: Warning: format combined with minLength/maxLength is not supported; ignoring"
    " minLength/maxLength"
)
FORMAT_SCHEMA = {
    "type": "string",
    "format": "date-time",
    "maxLength": 20,
}  # the corpus's length-with-format
TOO_LONG = json.dumps("2024-01-01T00:00:00.000001Z")  # 27 characters: breaks maxLength 20
PLAIN_SCHEMA = {
    "type": "string",
    "minLength": 2,
    "maxLength": 5,
    "pattern": "^[a-z]+$",
}  # the corpus's length-with-pattern
FITS = json.dumps("ab")


def info(log: Path | None) -> ServerInfo:
    return ServerInfo(
        target="t", adapter=ENDPOINT, model=MODEL, base_url="", log_path=str(log) if log else None
    )


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def marked(tmp_path: Path, written: bytes) -> tuple[Path, ServerInfo, int]:
    """A server log that already holds ``written``, its ``ServerInfo``, and the mark taken now."""
    log = tmp_path / "server.log"
    append(log, written)
    server = info(log)
    return log, server, server.log_mark()


# --- ServerInfo.log_mark / log_since -------------------------------------------------------


def test_log_since_gives_the_lines_after_the_mark(tmp_path):
    log, server, mark = marked(tmp_path, b"$ vllm serve\nbefore 1\nbefore 2\n")
    assert mark == log.stat().st_size
    assert server.log_since(mark) == []
    append(log, b"after 1\nafter 2\n")
    assert server.log_since(mark) == ["after 1", "after 2"]
    assert server.log_since(0) == ["$ vllm serve", "before 1", "before 2", "after 1", "after 2"]


def test_a_partial_last_line_is_returned_only_when_complete(tmp_path):
    log, server, mark = marked(tmp_path, b"start\n")
    append(log, b"done\nWarning: format combined with min")
    assert server.log_since(mark) == ["done"]
    append(log, b"Length is not supported\n")
    assert server.log_since(mark) == [
        "done",
        "Warning: format combined with minLength is not supported",
    ]


def test_the_rest_of_a_line_begun_before_the_mark_is_not_returned(tmp_path):
    log, server, mark = marked(tmp_path, b"old line, half wri")
    append(log, b"tten\nnew\n")
    assert server.log_since(mark) == ["new"]


def test_max_lines_keeps_the_last(tmp_path):
    log = tmp_path / "server.log"
    log.touch()
    server = info(log)
    append(log, b"".join(b"line %d\n" % i for i in range(100)))
    assert server.log_since(0) == [f"line {i}" for i in range(60, 100)]  # 40 by default
    assert server.log_since(0, max_lines=3) == ["line 97", "line 98", "line 99"]
    assert server.log_since(0, max_lines=0) == []


def test_bad_bytes_are_replaced_and_crlf_is_one_line_end(tmp_path):
    log = tmp_path / "server.log"
    append(log, b"caf\xc3\xa9 \xff\xfe\r\nprogress 10%\rprogress 20%\n")
    assert info(log).log_since(0) == ["caf\u00e9 \ufffd\ufffd", "progress 10%\rprogress 20%"]


def test_a_log_started_afresh_is_read_from_its_start(tmp_path):
    log, server, mark = marked(tmp_path, b"a long first life of the server\n")
    log.write_bytes(b"second life\n")
    assert server.log_since(mark) == ["second life"]


def test_no_log_gives_nothing(tmp_path):
    for server in (info(None), info(tmp_path / "never-written.log")):
        assert server.log_mark() == 0
        assert server.log_since(0) == []


def test_the_window_crosses_to_xdist_workers_as_plain_data(tmp_path):
    log = tmp_path / "server.log"
    append(log, b"x\n")
    copy = ServerInfo.from_dict(json.loads(json.dumps(info(log).to_dict())))
    assert copy.log_since(0) == ["x"]


# --- the runner --------------------------------------------------------------------------


class Watched:
    """A ServerInfo whose reads are counted."""

    def __init__(self, server: ServerInfo) -> None:
        self.server = server
        self.since_calls = 0

    def log_mark(self) -> int:
        return self.server.log_mark()

    def log_since(self, mark: int, max_lines: int = 40) -> list[str]:
        self.since_calls += 1
        return self.server.log_since(mark, max_lines)


@pytest.fixture
def server_log(tmp_path) -> Path:
    log = tmp_path / "server.log"
    log.write_text("$ fake vllm serve\n")
    return log


def writer(log: Path):
    lock = threading.Lock()

    def write(line: str) -> None:
        with lock:
            append(log, line.encode() + b"\n")

    return write


def make_runner(server: FakeServer, log, **kwargs) -> tuple[InferClient, StructuredRunner]:
    client = InferClient(Endpoint(server.base_url, MODEL), timeout=10)
    return client, StructuredRunner(client, timeout=10, server_log=log, **kwargs)


def test_a_failing_attempt_keeps_exactly_the_lines_of_its_request(server_log):
    deviation = deviations.logging_on("format", WARNING, TOO_LONG, FITS, log=writer(server_log))
    with FakeServer(deviation) as server:
        client, runner = make_runner(server, info(server_log))
        with client:
            earlier = runner.run(PLAIN_SCHEMA, RESPONSE_FORMAT, 16)
            failing = runner.run(FORMAT_SCHEMA, RESPONSE_FORMAT, 48)
            later = runner.run({"enum": ["a"]}, RESPONSE_FORMAT, 16)
    assert earlier.verdict.outcome is AnswerClass.VALID and earlier.server_log == ()
    assert failing.verdict.signature == "violation:maxLength"
    assert failing.server_log == (WARNING,)
    assert later.verdict.outcome is AnswerClass.VIOLATION and later.server_log == (
        'INFO compiled a grammar for {"enum": ["a"]}',
    )
    log_text = server_log.read_text()
    assert log_text.index("INFO compiled a grammar") < log_text.index(WARNING), (
        "an earlier request logged another line"
    )
    described = failing.describe()
    assert f"  {LOG_SECTION}\n    | {WARNING}\n" in described and "INFO" not in described
    assert failing.reproducer()["server_log"] == [WARNING]


def test_a_passing_attempt_records_nothing_and_is_not_delayed(server_log, monkeypatch):
    monkeypatch.setattr(runner_module, "LOG_WAIT", 30.0)  # a wait would show
    deviation = deviations.logging_on("format", WARNING, TOO_LONG, FITS, log=writer(server_log))
    watched = Watched(info(server_log))
    with FakeServer(deviation) as server:
        client, runner = make_runner(server, watched)
        with client:
            started = time.monotonic()
            attempt = runner.run(PLAIN_SCHEMA, RESPONSE_FORMAT, 16)
            elapsed = time.monotonic() - started
    assert attempt.verdict.outcome is AnswerClass.VALID
    assert attempt.server_log == () and watched.since_calls == 0, (
        "the log is not even read for a pass"
    )
    assert "INFO compiled a grammar" in server_log.read_text(), "the server did log a line"
    assert elapsed < 5.0
    assert LOG_SECTION not in attempt.describe() and attempt.reproducer()["server_log"] == []


def test_a_line_flushed_after_the_answer_is_waited_for(server_log):
    """Servers log through buffers (and the masking copier's thread): the line may land after the response."""
    late = writer(server_log)

    def response(path: str, body: dict, answer: dict) -> dict:
        threading.Timer(
            0.08, late, args=("ERROR grammar compilation fell back to unconstrained decoding",)
        ).start()
        answer["choices"][0]["message"]["content"] = "not json"
        return answer

    with FakeServer(Deviation(response=response)) as server:
        client, runner = make_runner(server, info(server_log))
        with client:
            attempt = runner.run(PLAIN_SCHEMA, RESPONSE_FORMAT, 16)
    assert attempt.verdict.outcome is AnswerClass.INVALID_JSON
    assert attempt.server_log == ("ERROR grammar compilation fell back to unconstrained decoding",)


def test_a_failure_the_server_says_nothing_about_waits_briefly_and_keeps_nothing(server_log):
    with FakeServer(deviations.constant("not json")) as server:
        client, runner = make_runner(server, info(server_log))
        with client:
            started = time.monotonic()
            attempt = runner.run(PLAIN_SCHEMA, RESPONSE_FORMAT, 16)
            elapsed = time.monotonic() - started
    assert attempt.verdict.outcome is AnswerClass.INVALID_JSON and attempt.server_log == ()
    assert runner_module.LOG_WAIT <= elapsed < runner_module.LOG_WAIT + 2.0
    assert attempt.seconds < elapsed, "the wait is not counted as the request's time"


def test_without_a_server_log_nothing_is_read(server_log):
    with FakeServer(deviations.constant("not json")) as server:
        client, runner = make_runner(server, None)
        with client:
            started = time.monotonic()
            attempt = runner.run(PLAIN_SCHEMA, RESPONSE_FORMAT, 16)
            elapsed = time.monotonic() - started
    assert attempt.verdict.outcome is AnswerClass.INVALID_JSON and attempt.server_log == ()
    assert elapsed < runner_module.LOG_WAIT, "an endpoint without a log is not waited on"


def test_a_schema_that_must_be_refused_keeps_the_log_of_an_accepted_answer(server_log):
    deviation = deviations.logging_on(
        "format", WARNING, json.dumps("2024-01-01T00:00:00Z"), FITS, log=writer(server_log)
    )
    with FakeServer(deviation) as server:
        client, runner = make_runner(server, info(server_log))
        with client:
            accepted = runner.run(FORMAT_SCHEMA, RESPONSE_FORMAT, 48, fresh=True, refuse=True)
            not_asked = runner.run(FORMAT_SCHEMA, RESPONSE_FORMAT, 48, fresh=True)
    assert accepted.verdict.outcome is AnswerClass.VALID and accepted.server_log == (WARNING,)
    assert not_asked.verdict.outcome is AnswerClass.VALID and not_asked.server_log == ()


def test_a_server_that_did_not_survive_shows_its_log_through_the_known_good_request(server_log):
    """The known-good schema is answered validly, the bad one kills the engine core: the log runs on through
    the known-good request sent after it, where the crash is logged."""
    write = writer(server_log)
    bad = {"type": "string"}
    dead = [False]

    def request(path: str, body: dict):
        if path != "/v1/chat/completions":
            return None
        if dead[0]:
            write("ERROR engine core died: RecursionError")
            return 500, error_body("EngineCore encountered an issue", "InternalServerError")
        if deviations.schema_of(body) == bad:
            write("WARNING recursion limit reached while compiling the grammar")
            dead[0] = True
        return None

    known = {json.dumps(schema, sort_keys=True): instance for schema, instance in SUPPORT_PROBES}
    answers = deviations.answering(
        lambda schema: (json.dumps(known.get(json.dumps(schema, sort_keys=True), "x")), "stop")
    )
    with FakeServer(
        Deviation(request=request, response=answers.response, events=answers.events)
    ) as server:
        client, runner = make_runner(server, info(server_log))
        with client:
            survival = survive(runner, RESPONSE_FORMAT, bad)
    assert survival.healthy is False and survival.attempt is not None
    assert (
        survival.why.startswith("the known-good schema ")
        and "then got server-error: HTTP 500" in survival.why
    )
    assert survival.attempt.server_log == (
        "WARNING recursion limit reached while compiling the grammar",
        "ERROR engine core died: RecursionError",
    )


def test_record_evidence_records_the_lines_only_when_there_are_some(server_log):
    with FakeServer(
        deviations.logging_on("format", WARNING, TOO_LONG, FITS, log=writer(server_log))
    ) as server:
        client, runner = make_runner(server, info(server_log))
        with client:
            failing = runner.run(FORMAT_SCHEMA, RESPONSE_FORMAT, 48)
    recorded: list[tuple[str, object]] = []
    record_evidence(lambda name, value: recorded.append((name, value)), failing)
    assert recorded == [("infer_reproducer", failing.curl), ("infer_server_log", WARNING)]
    recorded.clear()
    record_evidence(
        lambda name, value: recorded.append((name, value)), runner_module.Attempt(*_silent(failing))
    )
    assert [name for name, _ in recorded] == ["infer_reproducer"]


def _silent(attempt):
    return attempt.schema, attempt.path, attempt.body, attempt.verdict, attempt.curl


# --- end to end: the bundled suite against a launched fake vLLM ----------------------------

LAUNCHER = """
import os, sys
sys.path.insert(0, {tests!r})
from structured import deviations
from pytest_infer.testing.fakeserver import FakeServer

def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default

print("fake vllm with an xgrammar-like converter starting", flush=True)
deviation = deviations.logging_on("format", {warning!r}, {bad!r}, {good!r})
server = FakeServer(deviation, arg("--host", "127.0.0.1"), int(arg("--port", "0")),
                    api_key=os.environ.get("VLLM_API_KEY") or None)
print("ready", flush=True)
server.httpd.serve_forever()
"""


def warning_env(root: Path) -> Path:
    """A fake vLLM environment whose server is the fake server with the ``logging_on`` deviation."""
    env = make_fake_env(root)
    launcher = root / "launch_logging_server.py"
    launcher.write_text(LAUNCHER.format(tests=str(TESTS), warning=WARNING, bad=TOO_LONG, good=FITS))
    script = env / "bin" / "python"
    text = script.read_text()
    assert "-m pytest_infer.testing.fakeserver" in text
    script.write_text(text.replace("-m pytest_infer.testing.fakeserver", str(launcher)))
    return env


def log_sections(message: str) -> list[list[str]]:
    """The lines under each "server log while this request ran:" of a failure message."""
    sections = []
    lines = message.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == LOG_SECTION:
            block = []
            for following in lines[i + 1 :]:
                if not following.startswith("    | "):
                    break
                block.append(following.removeprefix("    | "))
            sections.append(block)
    return sections


@pytest.mark.parametrize("key", [None, "sk-log-window-SECRET"], ids=["plain-log", "masked-log"])
def test_the_failing_corpus_case_carries_the_warning_its_request_caused(pytester, tmp_path, key):
    """With an API key the server's output reaches the log through the masking copier's thread."""
    env = warning_env(tmp_path / "vllm-warns")
    shutil.copytree(
        SUITE, pytester.path / "structured", ignore=shutil.ignore_patterns("__pycache__")
    )
    result = pytester.runpytest(
        "structured/test_corpus.py",
        "--infer-framework=vllm", f"--infer-env=vllm={env}", "--infer-model=/models/m",
        "--infer-report-dir=report", "--junitxml=junit.xml", "-p", "no:cacheprovider",
        "-k", "(length-with-pattern or length-with-format) and response_format and not stream",
        *([f"--infer-api-key={key}"] if key else []),
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)

    server_log = next((pytester.path / "report" / "servers").glob("*.log")).read_text()
    assert server_log.count(WARNING) == 3, "one warning per seed"
    assert (
        server_log.index("INFO plain chat request")
        < server_log.index("INFO compiled a grammar")
        < server_log.index(WARNING)
    ), "earlier requests (the readiness probe, the passing case) logged other lines first"
    assert not key or key not in server_log

    tests = {
        t["nodeid"]: t
        for t in json.loads((pytester.path / "report" / "results.json").read_text())["tests"]
    }
    (failed,) = [t for t in tests.values() if t["outcome"] == "failed"]
    (passed,) = [t for t in tests.values() if t["outcome"] == "passed"]
    assert "length-with-format" in failed["nodeid"] and "length-with-pattern" in passed["nodeid"]
    assert failed["extra"]["server_log"] == WARNING
    assert "server_log" not in passed["extra"]
    assert log_sections(failed["message"])[0] == [WARNING]  # the message is cut at 4000 characters
    assert "INFO" not in failed["message"]

    # the terminal's failure message: one section per failing seed, each with exactly the warning
    text = result.stdout.str()
    failure = text[text.index("_ test_known_bug_class[") : text.index("server log tail:")]
    assert log_sections(failure) == [[WARNING]] * 3
    assert "INFO" not in failure

    cases = {
        c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    }
    props = {
        name: {p.get("name"): p.get("value") for p in case.iter("property")}
        for name, case in cases.items()
    }
    (failed_props,) = [p for name, p in props.items() if "length-with-format" in name]
    (passed_props,) = [p for name, p in props.items() if "length-with-pattern" in name]
    assert failed_props["infer_server_log"] == WARNING
    assert "infer_server_log" not in passed_props

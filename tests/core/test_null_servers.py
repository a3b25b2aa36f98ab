"""No bundled suite earns a single pass against a server that serves nothing.

A null server answers every request the same useless way: the fake server's null modes (HTTP 200 ``{}``, a 404
envelope) and independently written ones (tests/null_servers.py: an empty body, ``[]``, a 500 envelope, an echo of
the request, a stream that is only ``[DONE]``). A check that passes against one judged nothing, or judged only that
an answer came: every bundled suite (smoke included) runs against each as users run them (``--infer-endpoint``, with
an API key, so the security suite's route checks run too: the fake's null servers require it, the independent ones
take any; two sessions of several named endpoints each, in parallel), and the results files must hold no ``passed``
(nor ``fixed``) test of any suite.

The same sessions pass against a correct server elsewhere (tests/conformance/test_plugin.py,
tests/structured/test_suite_outcomes.py, tests/robustness/test_suite_can_fail.py,
tests/security/test_suite_can_fail.py, tests/consistency/test_suite_can_fail.py); the SLO profile and the smoke test
are shown passing on the correct fake server below, each naming what it judged, so their failures on the null servers
are theirs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import null_servers
import pytest
from filelock import FileLock

from pytest_infer.paths import bundled
from pytest_infer.secrets import API_KEY_ENV
from pytest_infer.testing.fakeserver import NULL_MODES, FakeServer

SUITES = ("conformance", "structured", "slo", "robustness", "security", "consistency", "smoke")
SERVERS = (
    *(f"fake-{mode}" for mode in NULL_MODES),
    *(f"wsgi-{mode}" for mode in null_servers.MODES),
)
CONTROL = "fake-correct"  # the correct fake server: the positive control of the SLO profile and the smoke test
CONTROLLED = ("slo", "smoke")
KEY = "sk-null-servers-0123456789"  # given as users give it, in the environment (never on the command line)
PASSES = ("passed", "fixed")
SESSION_SECONDS = 600  # a session's limit; they take seconds on an idle machine
# Lenient on purpose: any server that streams tokens meets it within seconds; a null server must still miss it.
PROFILE = """
name: null-servers
hardware: {accelerator: cpu}
validity: {max_client_busy: 2.0, max_loop_lag_p99_ms: 10000, max_schedule_lag_p99_ms: 10000}
defaults: {api: chat, output_tokens: 4, input_tokens: 8, warmup_requests: 1, requests: 20, timeout_s: 5}
models:
"""
# The security suite's stall measurement, shortened: against a null server each kind is inconclusive at once.
STALL = "rate: 4\nbefore_s: 1.0\nhostile_timeout_s: 2.0\nafter_s: 1.0\nstall_limit_s: 0.8\n"
POINT = (
    "    load_points: [{id: lenient, concurrency: 2, thresholds: {ttft_p50_ms: 60000, min_output_tokens_per_s: 0.01,"
    " max_error_share: 0}}]\n"
)
OPTIONS = (
    "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "--slo=profile.yaml", "--infer-report-dir=report",
    "--infer-request-timeout=5",
    "--structured-examples=1", "--structured-shrink-seconds=0", "--structured-timeout=5", "--security-stall=stall.yaml",
)  # fmt: skip


def _session(folder: Path, urls: dict[str, str], suites: tuple[str, ...]) -> subprocess.Popen:
    """Start pytest on copies of ``suites`` against the servers ``urls`` (name: URL), as a user would, in ``folder``.

    The model a null server is tested under is the default (its /v1/models names none); the fake server's is its own."""
    folder.mkdir()
    for suite in suites:
        shutil.copytree(
            bundled("suites") / suite, folder / suite, ignore=shutil.ignore_patterns("__pycache__")
        )
    (folder / "stall.yaml").write_text(STALL)
    (folder / "profile.yaml").write_text(
        PROFILE + "".join(f"  {model}:\n{POINT}" for model in ("tiny", "fake-model"))
    )
    argv = [
        sys.executable,
        "-m",
        "pytest",
        *suites,
        *OPTIONS,
        *(f"--infer-endpoint={name}={url}" for name, url in urls.items()),
    ]
    env = {**os.environ, API_KEY_ENV: KEY}
    return subprocess.Popen(
        argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.fixture(scope="session")
def results(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, list[dict]]:
    """Each server's tests from the results files: every null server under every suite, and the SLO control.

    Computed once per run: under xdist the first worker to get here runs the sessions while the others wait on a lock
    and read what it wrote (``xdist_group`` does not hold the tests on one worker under pytest 9: xdist 3.8 sets
    ``item._nodeid``, which pytest 9 no longer reads)."""
    shared = (
        tmp_path_factory.getbasetemp()
        if worker_id == "master"
        else tmp_path_factory.getbasetemp().parent
    )
    stored = shared / "null-servers.json"
    with FileLock(str(stored) + ".lock"):
        if not stored.is_file():
            stored.write_text(json.dumps(_run_sessions(shared / "null-servers")))
    return json.loads(stored.read_text())


def _run_sessions(root: Path) -> dict[str, list[dict]]:
    """Three sessions at once (a session's imports cost more than a server's tests, so not one per server)."""
    root.mkdir()
    with ExitStack() as stack:
        urls = {
            f"fake-{mode}": stack.enter_context(FakeServer(make(), api_key=KEY)).base_url
            for mode, make in NULL_MODES.items()
        }
        urls |= {
            f"wsgi-{mode}": stack.enter_context(null_servers.serving(mode))
            for mode in null_servers.MODES
        }
        control = stack.enter_context(FakeServer(api_key=KEY)).base_url
        groups = {
            "nulls-1": (SERVERS[0::2], SUITES),
            "nulls-2": (SERVERS[1::2], SUITES),
            "control": ((CONTROL,), CONTROLLED),
        }
        urls[CONTROL] = control
        runs = {
            group: _session(root / group, {name: urls[name] for name in names}, suites)
            for group, (names, suites) in groups.items()
        }
        found: dict[str, list[dict]] = {}
        for group, run in runs.items():
            try:
                output, _ = run.communicate(timeout=SESSION_SECONDS)
            except subprocess.TimeoutExpired:
                for other in runs.values():
                    other.kill()
                pytest.fail(f"the session {group} ran past {SESSION_SECONDS}s", pytrace=False)
            report = root / group / "report" / "results.json"
            if run.returncode not in (0, 1) or not report.is_file():
                pytest.fail(
                    f"the session {group} ended with exit status {run.returncode}:\n{output[-3000:]}",
                    pytrace=False,
                )
            for test in json.loads(report.read_text())["tests"]:
                found.setdefault(test["target"], []).append(test)
    return found


def suite_of(test: dict) -> str:
    """The suite a test ran under: its marker's, else its folder's (the smoke suite carries no marker)."""
    return test["suite"] or test["nodeid"].split("/")[0]


def test_the_slo_profile_and_the_smoke_test_pass_on_a_correct_server_naming_what_they_judged(
    results,
):
    """The positive control of the sessions: a server that serves meets the profile and answers the smoke test."""
    passed = {
        suite_of(t): t["extra"].get("evidence", "")
        for t in results[CONTROL]
        if t["outcome"] == "passed"
    }
    assert sorted(passed) == sorted(CONTROLLED) and len(results[CONTROL]) == len(CONTROLLED), (
        results[CONTROL]
    )
    assert passed["slo"].startswith(
        "load point lenient (concurrency 2): 20 of 20 measured requests answered;"
    )
    assert passed["smoke"].startswith("POST /v1/chat/completions: HTTP 200, a chat completion of ")


@pytest.mark.parametrize(
    ("suite", "server"),
    [(suite, server) for suite in SUITES for server in SERVERS],
)
def test_no_check_passes_against_a_null_server(results, suite, server):
    tests = [t for t in results[server] if suite_of(t) == suite]
    assert tests, f"the {suite} suite recorded no test against {server}: it did not run"
    keyless = [t["nodeid"] for t in tests if "no API key" in (t["message"] or "")]
    assert not keyless, f"run without the API key, so not judged: {keyless}"
    passed = sorted(
        f"{t['check'] or t['nodeid'].split('::')[-1]}" for t in tests if t["outcome"] in PASSES
    )
    assert not passed, (
        f"{len(passed)} of {len(tests)} {suite} tests passed against the null server {server}: {passed}"
    )

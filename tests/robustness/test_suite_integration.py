"""The robustness suite against the real CPU engines: it runs, counts consistently, and every 5xx it
reports is reproduced by the curl line it prints."""

from __future__ import annotations

import json
import re
import subprocess
import time

import httpx
import pytest

from .test_suite_can_fail import SUITE, failures

pytestmark = [pytest.mark.integration, pytest.mark.measures]


@pytest.mark.parametrize("engine", ["vllm-0.32", "transformers"])
def test_suite_against_a_real_engine(pytester, real_engine, engine):
    server = real_engine(engine)
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        str(SUITE), "-m", "robustness", f"--infer-endpoint={server.base_url}",
        f"--infer-framework={engine.split('-')[0]}",
        "-p", "no:cacheprovider", "--infer-report-dir=report", "--infer-request-timeout=30",
    )  # fmt: skip
    elapsed = time.monotonic() - started
    results = json.loads((pytester.path / "report" / "results.json").read_text())
    counts = results["robustness"][engine.split("-")[0]]
    outcomes = result.parseoutcomes()
    # a bad request whose positive control the engine does not answer correctly is inconclusive (a skip), not judged
    assert (
        outcomes.get("passed", 0) + outcomes.get("failed", 0) + outcomes.get("skipped", 0)
        == len(results["tests"])
        >= 35
    )
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) >= 30
    assert counts["tried"] >= 30  # the bad requests sent: not those whose control failed first
    assert counts["tried"] == sum(
        counts[k] for k in ("4xx", "5xx", "accepted", "dropped", "hangs", "deaths")
    )
    result.stdout.fnmatch_lines(
        ["robustness *", "tried *", "4xx *", "5xx *", "hangs *", "deaths *"]
    )
    assert elapsed < 300
    # Every 5xx reported is real: its printed curl line gets a 5xx again.
    for case, message in failures(results).items():
        if " -> 5xx" not in message and "HTTP 5" not in message.split("\n")[0]:
            continue
        curl = re.search(r"reproduce: (.*)", message).group(1)
        if "@body.json" in curl:
            continue  # a body too large to spell out in one line
        status = subprocess.run(
            ["bash", "-c", f"{curl} -o /dev/null -w '%{{http_code}}' -m 30"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert status.startswith("5"), (
            f"{case}: reported a 5xx, its reproducer got {status!r}: {curl}"
        )
    # The suite leaves the server serving.
    resp = httpx.post(
        f"{server.base_url}/v1/chat/completions",
        json={
            "model": server.model,
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 4,
        },
        timeout=60,
    )
    assert resp.status_code == 200, resp.text[:300]

"""The client benchmark (benchmarks/client_bench.py) beside its peers, run as its command line.

No peer is installed here: each is a stand-in under ``$PYTEST_INFER_PEERS`` (and ``--vllm-python``)
that the bench finds and runs as it would the real tool. A stand-in replays a peer's stored result
files (tests/data/peers), writes none or junk, crashes, hangs, or is a small client of its own that
reports every TTFT late. The bench's JSON and printed tables are what is asserted on; the install
script's dry run is run as the bench runs it."""

from __future__ import annotations

import copy
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "client_bench.py"
INSTALL = ROOT / "benchmarks" / "peers" / "install.sh"
DATA = Path(__file__).resolve().parents[1] / "data" / "peers"
TOOLS = {"aiperf": "aiperf", "guidellm": "guidellm", "inference-perf": "inference-perf"}

# What a stand-in does on its n-th call (the last step repeats): reads ``plan.json`` beside it.
STAND_IN = r'''
import json, os, shutil, subprocess, sys, threading, time
from pathlib import Path

here = Path(__file__).resolve().parent
calls = here / "calls"
n = len(calls.read_text()) if calls.exists() else 0
calls.write_text("x" * (n + 1))
plan = json.loads((here / "plan.json").read_text())
step = plan[min(n, len(plan) - 1)]
argv = sys.argv[1:]


def arg(*names):
    return next(argv[argv.index(name) + 1] for name in names if name in argv)


if step["do"] == "replay":
    shutil.copytree(step["from"], ".", dirs_exist_ok=True)
elif step["do"] == "junk":
    for name in ("profile_export.jsonl", "profile_export_aiperf.json", "benchmarks.json",
                 "out.json"):
        Path(name).write_text("{not json\n")
    Path("reports").mkdir()
    Path("reports/per_request_lifecycle_metrics.json").write_text("{not json")
elif step["do"] == "crash":
    print("boom: no tokenizer")
    sys.exit(3)
elif step["do"] == "hang":
    worker = (f"import os, time; open({step['pid_file']!r}, 'w').write(str(os.getpid()));"
              " time.sleep(60)")
    subprocess.Popen([sys.executable, "-c", worker])
    time.sleep(60)
elif step["do"] == "client":  # aiperf's or vllm bench's arguments; their result files
    import httpx

    vllm = "--base-url" in argv
    url = arg("--base-url", "--url")
    warmup = int(arg("--num-warmups", "--warmup-request-count"))
    total = warmup + int(arg("--num-prompts", "--request-count"))
    streams = step.get("streams") or int(arg("--max-concurrency", "--concurrency"))
    body = {"model": "paced-model", "prompt": "hi", "max_tokens": 8, "stream": True}
    results, lock, counter = {}, threading.Lock(), iter(range(total))

    def stream():
        with httpx.Client(base_url=url, timeout=30) as client:
            while (i := next(counter, None)) is not None:
                sent = time.perf_counter()
                with client.stream("POST", "/v1/completions", json=body) as resp:
                    times = [time.perf_counter() for line in resp.iter_lines()
                             if line.startswith("data: {")]
                with lock:
                    results[i] = ((times[0] - sent) * 1000 + step["late_ms"],
                                  [(b - a) * 1000 for a, b in zip(times, times[1:])])

    threads = [threading.Thread(target=stream) for _ in range(streams)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    measured = [results[i] for i in range(warmup, total)]
    if vllm:
        out = {"ttfts": [t / 1000 for t, _ in measured],
               "itls": [[g / 1000 for g in gaps] for _, gaps in measured], "output_throughput": 1.0}
        Path("out.json").write_text(json.dumps(out))
    else:
        with open("profile_export.jsonl", "w") as fh:
            for i in range(total):
                ttft, gaps = results[i]
                phase = "warmup" if i < warmup else "profiling"
                metrics = {"time_to_first_token": {"value": ttft},
                           "inter_chunk_latency": {"value": gaps}}
                fh.write(json.dumps({"metadata": {"benchmark_phase": phase}, "metrics": metrics}))
                fh.write("\n")
        summary = {"output_token_throughput": {"avg": 1.0}}
        Path("profile_export_aiperf.json").write_text(json.dumps(summary))
'''  # fmt: skip


def stand_ins(folder: Path, **plans: list[dict]) -> Path:
    """A stand-in per peer (aiperf=[...], guidellm=[...], inference_perf=[...], vllm=[...]) under
    ``folder/peers``, each answering install.sh's version check as present; vllm's interpreter is
    ``folder/vllm/bin/python``."""
    for name, plan in plans.items():
        peer = name.replace("_", "-")
        bin_dir = folder / ("vllm" if peer == "vllm" else f"peers/{peer}") / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "plan.json").write_text(json.dumps(plan))
        tool = bin_dir / ("python" if peer == "vllm" else TOOLS[peer])
        tool.write_text(f"#!{sys.executable}\n{STAND_IN}")
        tool.chmod(0o755)
        if peer != "vllm":
            (bin_dir / "python").write_text("#!/bin/sh\nexit 0\n")  # the version check passes
            (bin_dir / "python").chmod(0o755)
    return folder / "peers"


def bench(*args: str, peers: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTEST_INFER_PEERS": str(peers)}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)  # fmt: skip


def tool_runs(out: Path, name: str, row: int = 0) -> dict:
    return json.loads(out.read_text())["rows"][row]["tools"][name]


@pytest.fixture(scope="module")
def paced():
    """The paced server, for a bench run against an endpoint of its own (--endpoint)."""
    command = [sys.executable, "-m", "pytest_infer.testing.pacedserver", "--port", "0",
               "--ttft-ms", "20", "--itl-ms", "2"]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        ready = proc.stdout.readline() if proc.stdout else ""
        assert "ready" in ready
        yield ready.split(" on ")[1].split()[0]
        proc.terminate()


# --- each peer's own result files, read through a run against an endpoint ---


def shifted(times: dict, keys: tuple[str, ...], by: float, late: float = 0.0) -> None:
    """Every time of ``keys`` ``by`` seconds later, and all but the first ``late`` more."""
    for key in keys:
        late_too = late if key != keys[0] else 0.0
        if isinstance(times[key], list):
            times[key] = [t + by + late_too for t in times[key]]
        else:
            times[key] += by + late_too


def guidellm_report(folder: Path) -> list[dict]:
    """The stored report grown to 3 warm-up requests (their first token 5 s late, started first)
    and 8 measured ones (the stored 5, then 3 of them again 10 s on), listed last to first; the
    measured requests' timings."""
    report = json.loads((DATA / "guidellm" / "benchmarks.json").read_text())
    stored = report["benchmarks"][0]["requests"]["successful"]
    keys = ("request_start", "first_token_iteration", "last_token_iteration", "request_end")
    grown = []
    for i in range(11):
        request = copy.deepcopy(stored[i % 5])
        warm = i < 3
        by = -100.0 + i if warm else 10.0 * ((i - 3) // 5)
        shifted(request["info"]["timings"], keys, by, 5 * warm)
        grown.append(request)
    report["benchmarks"][0]["requests"]["successful"] = grown[::-1]
    folder.mkdir()
    (folder / "benchmarks.json").write_text(json.dumps(report))
    return [r["info"]["timings"] for r in grown[3:]]


def inference_perf_report(folder: Path) -> list[dict]:
    """The stored per-request report grown as guidellm's is, its failed request last; the
    measured records."""
    reports = DATA / "inference-perf" / "reports"
    records = json.loads((reports / "per_request_lifecycle_metrics.json").read_text())
    ok, failed = [r for r in records if not r["error"]], [r for r in records if r["error"]]
    grown = []
    for i in range(11):
        record = copy.deepcopy(ok[i % 5])
        warm = i < 3
        chunks = record["info"]["response_metrics"]
        times = {"start_time": record["start_time"], "chunk_times": chunks["chunk_times"]}
        by = -100.0 + i if warm else 10.0 * ((i - 3) // 5)
        shifted(times, ("start_time", "chunk_times"), by, 5 * warm)
        record["start_time"], chunks["chunk_times"] = times.values()
        grown.append(record)
    failed[0]["start_time"] += 100
    (folder / "reports").mkdir(parents=True)
    per_request = json.dumps((grown + failed)[::-1])
    (folder / "reports" / "per_request_lifecycle_metrics.json").write_text(per_request)
    stage = reports / "stage_1_lifecycle_metrics.json"
    (folder / "reports" / stage.name).write_text(stage.read_text())
    return grown[3:]


@pytest.fixture(scope="module")
def replayed(paced, tmp_path_factory):
    """One bench run against an endpoint, three repeats: each peer replays its results, then
    writes none, then junk; what each peer's measured requests were."""
    tmp = tmp_path_factory.mktemp("replayed")
    guidellm = guidellm_report(tmp / "guidellm")
    inference_perf = inference_perf_report(tmp / "inference-perf")

    def plan(data: Path) -> list[dict]:
        return [{"do": "replay", "from": str(data)}, {"do": "nothing"}, {"do": "junk"}]

    peers = stand_ins(tmp, aiperf=plan(DATA / "aiperf"), guidellm=plan(tmp / "guidellm"),
                      inference_perf=plan(tmp / "inference-perf"),
                      vllm=plan(DATA / "vllm"))  # fmt: skip
    out = tmp / "real.json"
    run = bench("--endpoint", paced, "--model", "paced-model", "--streams", "2", "--rounds", "4",
                "--tokens", "8", "--repeats", "3", "--peers", "vllm,aiperf,guidellm,inference-perf",
                "--vllm-python", str(tmp / "vllm" / "bin" / "python"), "--tokenizer", str(tmp),
                "--out", str(out), peers=peers)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run, out, {"guidellm": guidellm, "inference-perf": inference_perf}


def figures(run: dict, ttft: list[float], itl: list[float]) -> None:
    assert run["requests"] == len(ttft)
    assert run["ttft_p50_ms"] == pytest.approx(statistics.median(ttft), abs=1e-3)
    assert run["itl_p50_ms"] == pytest.approx(statistics.median(itl), abs=1e-3)


def test_aiperf_records_keep_the_profiling_phase_and_skip_failed_requests(replayed):
    _, out, _ = replayed
    lines = (DATA / "aiperf" / "profile_export.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    profiled = [r["metrics"] for r in records if r["metadata"]["benchmark_phase"] == "profiling"
                and "time_to_first_token" in r["metrics"]]  # fmt: skip
    assert len(profiled) == 2 and len(records) == 5  # two warm-ups and one failed request left out
    run = tool_runs(out, "aiperf")["runs"][0]
    figures(run, [m["time_to_first_token"]["value"] for m in profiled],
            [x for m in profiled for x in m["inter_chunk_latency"]["value"]])  # fmt: skip
    assert run["output_tokens_per_s"] == pytest.approx(359.6)


def test_guidellm_report_keeps_the_last_requests_and_their_mean_gaps(replayed):
    _, out, measured = replayed
    run = tool_runs(out, "guidellm")["runs"][0]
    timings = measured["guidellm"]
    ttft = [(t["first_token_iteration"] - t["request_start"]) * 1000 for t in timings]
    gaps = [(t["last_token_iteration"] - t["first_token_iteration"]) * 1000 / 63 for t in timings]
    figures(run, ttft, gaps)
    assert run["itl_kind"] == "per-request mean"
    assert 40 < run["ttft_p50_ms"] < run["ttft_p99_ms"] < 100  # milliseconds, no warm-up's 5 s


def test_inference_perf_report_keeps_the_last_successes_and_every_chunk_gap(replayed):
    _, out, measured = replayed
    records = measured["inference-perf"]
    chunks = [(r["start_time"], r["info"]["response_metrics"]["chunk_times"]) for r in records]
    run = tool_runs(out, "inference-perf")["runs"][0]
    figures(run, [(times[0] - start) * 1000 for start, times in chunks],
            [(b - a) * 1000 for _, times in chunks for a, b in zip(times, times[1:])])  # fmt: skip
    assert run["output_tokens_per_s"] == pytest.approx(334.1)


def test_vllm_detailed_result_in_milliseconds(replayed):
    _, out, _ = replayed
    data = json.loads((DATA / "vllm" / "out.json").read_text())
    figures(tool_runs(out, "vllm")["runs"][0], [t * 1000 for t in data["ttfts"]],
            [x * 1000 for per in data["itls"] for x in per])  # fmt: skip


@pytest.mark.parametrize("peer", ["aiperf", "guidellm", "inference-perf", "vllm"])
def test_missing_or_foreign_result_files_are_named(replayed, peer):
    _, out, _ = replayed
    runs, summary = tool_runs(out, peer)["runs"], tool_runs(out, peer)["summary"]
    assert "no " in runs[1]["error"] and "not" in runs[2]["error"].split(";")[0]
    assert summary["repeats"] == 1 and summary["failed_repeats"] == 2  # the figures: the good run's
    assert summary["ttft_p50_ms"] == runs[0]["ttft_p50_ms"]


def test_a_real_server_gets_each_tools_own_figures_side_by_side(replayed):
    run, out, _ = replayed
    assert "| 2 | ours |" in run.stdout.split("TTFT p50 (ms) | ITL p50 (ms)")[1]
    ours = tool_runs(out, "ours")
    first = ours["runs"][0]
    assert first["ttft_p50_ms"] == pytest.approx(20, abs=15)
    assert first["itl_p50_ms"] == pytest.approx(2, abs=1.5)
    assert "ttft_p50_error_ms" not in first  # no ground truth
    assert "cpu_ms_per_request" not in first  # nor a window of the load
    repeats = [r["ttft_p50_ms"] for r in ours["runs"]]
    assert len(repeats) == 3 and ours["summary"]["ttft_p50_ms"] == statistics.median(repeats)
    assert not out.with_suffix(".html").exists()


# --- against the paced server: a late client is charged its lateness; failing peers ---


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One bench run on the paced server: aiperf's stand-in a client 25 ms late, vllm's one on time
    but holding one stream where two were asked, guidellm's crashing, inference-perf's hanging."""
    tmp = tmp_path_factory.mktemp("measured")
    worker = tmp / "worker.pid"
    peers = stand_ins(tmp, aiperf=[{"do": "client", "late_ms": 25.0}],
                      vllm=[{"do": "client", "late_ms": 0.0, "streams": 1}],
                      guidellm=[{"do": "crash"}],
                      inference_perf=[{"do": "hang", "pid_file": str(worker)}])  # fmt: skip
    out = tmp / "bench.json"
    run = bench("--streams", "2", "--rounds", "4", "--tokens", "8", "--ttft-ms", "20",
                "--itl-ms", "2", "--peers", "vllm,aiperf,guidellm,inference-perf",
                "--peer-timeout", "5",
                "--vllm-python", str(tmp / "vllm" / "bin" / "python"), "--tokenizer", str(tmp),
                "--out", str(out), peers=peers)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run, out, worker


def test_a_late_client_is_charged_its_lateness(measured):
    _, out, _ = measured
    late, on_time = (tool_runs(out, name)["runs"][0] for name in ("aiperf", "vllm"))
    assert on_time["requests"] == late["requests"] == 8
    assert late["server"]["requests"] == 8
    assert late["server"]["ttft_p50_ms"] == pytest.approx(20, abs=10)
    assert late["ttft_p50_error_ms"] - on_time["ttft_p50_error_ms"] == pytest.approx(25, abs=8)
    assert late["cpu_ms_per_request"] > 0  # the stand-in's interpreter, charged over 10 requests
    assert 1.0 < late["in_flight_mean"] <= 2.0  # two streams held (nearly) two requests at once


def test_a_tool_that_held_fewer_requests_than_streams_does_not_keep_the_load(measured):
    run, out, _ = measured
    assert tool_runs(out, "vllm")["summary"]["in_flight_mean"] == pytest.approx(1.0, abs=0.1)
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("| 2 | vllm |")]
    assert "(below the load asked) |" in line
    kept = "- vllm: highest load kept with |median TTFT error| <= 1 ms: none of the loads"
    assert kept in run.stdout


def test_a_failed_peer_reports_its_exit_and_log(measured):
    _, out, _ = measured
    crashed = tool_runs(out, "guidellm")
    error = crashed["runs"][0]["error"]
    assert error.startswith("exit 3") and "boom: no tokenizer" in error
    assert crashed["summary"] == {"error": error}


def test_a_peer_past_its_time_is_ended_with_its_workers(measured):
    run, out, worker = measured
    assert tool_runs(out, "inference-perf")["runs"][0]["error"].startswith("no result within 5 s")
    pid = int(worker.read_text())
    time.sleep(0.2)
    proc = Path(f"/proc/{pid}")
    assert not proc.exists() or "Z" in (proc / "stat").read_text().split()[2]
    assert "| failed | failed |" in run.stdout  # guidellm and inference-perf in the ratio tables


# --- the tables, re-printed from a stored result (--table-from) ---


def row(streams: int, **tools) -> dict:
    return {"streams": streams, "tools": {n: {"runs": [], "summary": s} for n, s in tools.items()}}


def summary(ttft: float, cpu: float = 1.0, lag: float = 0.5, **more) -> dict:
    return {"ttft_p50_error_ms": ttft, "ttft_p99_error_ms": ttft * 3, "itl_p50_error_ms": 0.01,
            "cpu_ms_per_request": cpu, "output_tokens_per_s": 100.0, "server_lag_p50_ms": lag,
            "server_kept_schedule": lag <= 5.0, **more}  # fmt: skip


def tables(rows: list[dict], tmp_path: Path) -> str:
    stored = tmp_path / "stored.json"
    stored.write_text(json.dumps({"rows": rows}))
    run = bench("--table-from", str(stored), peers=tmp_path / "peers")
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_ratio_tables_and_cannot_express_cells(tmp_path):
    refused = {"cannot_express": "no such load"}
    text = tables([
        row(1, ours=summary(0.5, cpu=2), aiperf=summary(2.0, cpu=4), guidellm=refused),
        row(512, ours=summary(-4.0), aiperf={"error": "exit 1: boom"}, guidellm=summary(8.0)),
    ], tmp_path)  # fmt: skip
    assert "| 1 | 0.25 (0.50 / 2.00) | cannot express: no such load |" in text  # |TTFT error|
    assert "| 512 | failed | 0.50 (4.00 / 8.00) |" in text  # magnitudes: -4 ms is 4 ms wrong
    assert "| 1 | 0.50 (2.00 / 4.00) | cannot express: no such load |" in text  # CPU per request
    assert "| 1 | guidellm | cannot express: no such load |" in text
    kept = "highest load kept with |median TTFT error| <= 1 ms:"
    assert f"ours: {kept} 1 streams; <= 5 ms: 512 streams" in text
    assert f"aiperf: {kept} none of the loads; <= 5 ms: 1 streams" in text


def test_a_lighter_load_than_asked_is_shown_and_not_kept(tmp_path):
    held = row(16, ours=summary(0.8, in_flight_mean=15.7), lazy=summary(0.5, in_flight_mean=7.4))
    text = tables([held], tmp_path)
    assert "- lazy: highest load kept with |median TTFT error| <= 1 ms: none of the loads" in text
    assert "- ours: highest load kept with |median TTFT error| <= 1 ms: 16 streams" in text
    assert "| 16 | lazy | +0.50 | +1.50 | +0.01 | 1.00 | 100 | 7.4 (below the load asked) |" in text


def test_a_load_the_server_fell_behind_on_is_not_kept(tmp_path):
    text = tables([row(1, ours=summary(0.5)), row(512, ours=summary(0.5, lag=30.0))], tmp_path)
    assert "- ours: highest load kept with |median TTFT error| <= 1 ms: 1 streams" in text
    assert "server behind schedule" in text


# --- installing: never here, and a dry run says what it would do ---


def run_install(*args: str, peers: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTEST_INFER_PEERS": str(peers)}
    return subprocess.run(["bash", str(INSTALL), *args], capture_output=True, text=True, env=env,
                          timeout=60)  # fmt: skip


def test_install_dry_run_creates_nothing(tmp_path):
    proc = run_install("--dry-run", "aiperf", "inference-perf", peers=tmp_path / "peers")
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("aiperf: would install aiperf==0.13.0 with ")
    # a machine without Python 3.12 is told so, by name
    assert lines[1].startswith(("inference-perf: would install inference-perf==0.7.0",
                                "inference-perf: FAILED: no python3.12"))  # fmt: skip
    assert not (tmp_path / "peers").exists()


def test_install_sees_a_present_peer_and_refuses_an_unknown_one(tmp_path):
    python = tmp_path / "peers" / "guidellm" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nexit 0\n")  # answers the version check as guidellm 0.8.1 would
    python.chmod(0o755)
    proc = run_install("guidellm", peers=tmp_path / "peers")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"guidellm: present 0.8.1 in {python.parent.parent}"
    bad = run_install("locust", peers=tmp_path / "peers")
    assert bad.returncode == 2 and "unknown peer 'locust'" in bad.stderr


def test_one_run_with_peers_not_installed_measures_ours_alone(tmp_path):
    out = tmp_path / "bench.json"
    run = bench("--streams", "2", "--rounds", "4", "--tokens", "8", "--ttft-ms", "20",
                "--itl-ms", "2", "--peers", "aiperf,guidellm,vllm", "--no-install",
                "--vllm-python", str(tmp_path / "no-vllm"), "--processes", "1,2", "--out", str(out),
                peers=tmp_path / "peers")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "aiperf: would install aiperf==0.13.0" in run.stdout
    assert "not measured: aiperf" in run.stdout
    assert "guidellm: would install guidellm==0.8.1" in run.stdout
    assert f"vllm: FAILED: no {tmp_path / 'no-vllm'}" in run.stdout
    result = json.loads(out.read_text())
    assert list(result["rows"][0]["tools"]) == ["ours", "ours x2"]
    for name in ("ours", "ours x2"):  # our own CPU, and that of our processes once they ended
        ours = result["rows"][0]["tools"][name]["summary"]
        assert abs(ours["ttft_p50_error_ms"]) < 20 and ours["cpu_ms_per_request"] > 0
    assert len(result["rows"][0]["tools"]["ours x2"]["runs"][0]["processes"]) == 2
    assert set(result["load_average"]) == {"before", "after"}
    page = out.with_suffix(".html").read_text()
    assert "<svg" in page and "Load clients against the paced server" in page
    assert not (tmp_path / "peers").exists()

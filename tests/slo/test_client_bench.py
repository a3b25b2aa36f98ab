"""The client benchmark beside its peers: each peer's result format read back, the error it charges a late
client, the ratio tables, "cannot express", and the install script's dry run (no peer is installed here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import client_bench  # noqa: E402
from peers import Load, Measured, Peer, PeerError, ensure  # noqa: E402
from peers.aiperf import AIPerf  # noqa: E402
from peers.guidellm import GuideLLM  # noqa: E402
from peers.inference_perf import InferencePerf  # noqa: E402
from peers.vllm_bench import VllmBench  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "peers"
INSTALL = BENCHMARKS / "peers" / "install.sh"


@pytest.fixture(autouse=True)
def no_real_peers(tmp_path, monkeypatch):
    """Every peer environment this module could touch lives in an empty folder: nothing is installed for real."""
    monkeypatch.setenv("PYTEST_INFER_PEERS", str(tmp_path / "peers"))


# --- each peer's own result files ---


def test_aiperf_records_keep_the_profiling_phase_and_skip_failed_requests():
    got = AIPerf().parse(DATA / "aiperf", Load(4, 3, 2))
    records = [json.loads(line) for line in (DATA / "aiperf" / "profile_export.jsonl").read_text().splitlines()]
    profiled = [
        r for r in records if r["metadata"]["benchmark_phase"] == "profiling" and "time_to_first_token" in r["metrics"]
    ]
    assert len(profiled) == 2 and len(records) == 5  # two warm-up records and one failed request are left out
    assert got.ttft_ms == [r["metrics"]["time_to_first_token"]["value"] for r in profiled]
    assert got.itl_ms == [x for r in profiled for x in r["metrics"]["inter_chunk_latency"]["value"]]
    assert got.output_tokens_per_s == pytest.approx(359.6095534216715)


def test_guidellm_report_keeps_the_last_requests_and_their_mean_gaps():
    got = GuideLLM().parse(DATA / "guidellm", Load(4, 3, 2))
    requests = json.loads((DATA / "guidellm" / "benchmarks.json").read_text())["benchmarks"][0]["requests"]
    last = [r["info"]["timings"] for r in requests["successful"][-3:]]
    assert got.ttft_ms == pytest.approx([(t["first_token_iteration"] - t["request_start"]) * 1000 for t in last])
    assert got.itl_ms == pytest.approx(
        [(t["last_token_iteration"] - t["first_token_iteration"]) * 1000 / 63 for t in last]
    )
    assert got.itl_kind == "per-request mean"
    assert 40 < min(got.ttft_ms) and max(got.ttft_ms) < 100  # milliseconds, not seconds


def test_inference_perf_report_keeps_the_last_successes_and_every_chunk_gap():
    got = InferencePerf().parse(DATA / "inference-perf", Load(4, 3, 2))
    records = json.loads((DATA / "inference-perf" / "reports" / "per_request_lifecycle_metrics.json").read_text())
    last = [r for r in records if not r["error"]][-3:]
    assert got.ttft_ms == pytest.approx(
        [(r["info"]["response_metrics"]["chunk_times"][0] - r["start_time"]) * 1000 for r in last]
    )
    assert len(got.itl_ms) == 3 * 4  # five chunk times each: four gaps
    assert got.output_tokens_per_s == pytest.approx(334.0718005712041)


def test_vllm_detailed_result_in_milliseconds():
    got = VllmBench("/nonexistent/python").parse(DATA / "vllm", Load(2, 4, 2))
    data = json.loads((DATA / "vllm" / "out.json").read_text())
    assert got.ttft_ms == pytest.approx([t * 1000 for t in data["ttfts"]])
    assert len(got.itl_ms) == sum(len(x) for x in data["itls"])


@pytest.mark.parametrize("peer", [AIPerf(), GuideLLM(), InferencePerf(), VllmBench("/nonexistent/python")])
def test_missing_or_foreign_result_files_are_named(peer, tmp_path):
    with pytest.raises(PeerError, match="no "):
        peer.parse(tmp_path, Load(1, 1, 1))
    for name in ("profile_export.jsonl", "profile_export_aiperf.json", "benchmarks.json", "out.json"):
        (tmp_path / name).write_text("{not json\n")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "per_request_lifecycle_metrics.json").write_text("{not json")
    with pytest.raises(PeerError, match="not"):
        peer.parse(tmp_path, Load(1, 1, 1))


# --- the bench itself: a late client is charged its lateness; "cannot express"; the tables ---

FAKE_CLIENT = r"""
import json, sys, time, threading, httpx
url, out, streams, total, late_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
body = {"model": "paced-model", "prompt": "hi", "max_tokens": 8, "stream": True}
results, lock, counter = [], threading.Lock(), iter(range(total))
def stream():
    with httpx.Client(base_url=url, timeout=30) as client:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            sent = time.perf_counter()
            with client.stream("POST", "/v1/completions", json=body) as resp:
                lines = resp.iter_lines()
                for line in lines:
                    if line.startswith("data: {"):
                        first = time.perf_counter()
                        break
                for _ in lines:
                    pass
            with lock:
                results.append((i, (first - sent) * 1000 + late_ms))
threads = [threading.Thread(target=stream) for _ in range(streams)]
[t.start() for t in threads]; [t.join() for t in threads]
json.dump([ttft for _, ttft in sorted(results)], open(out + "/result.json", "w"))
"""


class FakePeer(Peer):
    """A client that reports every TTFT ``late_ms`` later than it saw it."""

    name = "fake"

    def __init__(self, late_ms: float = 0.0, why_not: str | None = None) -> None:
        self.late_ms, self.why_not = late_ms, why_not

    def cannot_express(self, load: Load) -> str | None:
        return self.why_not

    def command(self, load, url, out, tokenizer):
        total = load.warmup + load.requests
        return [sys.executable, "-c", FAKE_CLIENT, url, str(out), str(load.streams), str(total), str(self.late_ms)]

    def parse(self, out, load):
        ttft = json.loads((out / "result.json").read_text())[-load.requests :]
        return Measured(ttft, [2.0] * len(ttft))


@pytest.fixture(scope="module")
def paced():
    proc, url = client_bench.start_server(ttft_ms=20, itl_ms=2, pin=False)
    yield proc, url
    proc.terminate()
    proc.wait(10)


def test_a_late_client_is_charged_its_lateness(paced, tmp_path):
    proc, url = paced
    load = Load(streams=2, requests=8, warmup=2, output_tokens=8)
    on_time = client_bench.run_peer(FakePeer(0.0), url, load, tmp_path, timeout_s=60)
    late = client_bench.run_peer(FakePeer(25.0), url, load, tmp_path, timeout_s=60)
    assert on_time["requests"] == late["requests"] == 8
    assert late["server"]["requests"] == 8 and late["server"]["ttft_p50_ms"] == pytest.approx(20, abs=10)
    assert late["ttft_p50_error_ms"] - on_time["ttft_p50_error_ms"] == pytest.approx(25, abs=8)
    assert late["cpu_ms_per_request"] > 0  # the fake client's interpreter costs CPU, charged over 10 requests
    assert 1.0 < late["in_flight_mean"] <= 2.0  # two streams held the server busy with (nearly) two requests


def test_in_flight_mean_is_the_load_a_tool_offered():
    def record(recv_ms: float, end_ms: float) -> dict:
        return {"recv_ns": int(recv_ms * 1e6), "end_ns": int(end_ms * 1e6), "write_ns": [int(end_ms * 1e6)]}

    two_streams = [record(0, 100), record(0, 100), record(100, 200), record(100, 200)]
    asked_two_held_one = [record(0, 100), record(100, 200), record(200, 300), record(300, 400)]
    assert client_bench.in_flight_mean(two_streams) == 2.0
    assert client_bench.in_flight_mean(asked_two_held_one) == 1.0


def test_a_load_a_peer_cannot_express_runs_nothing_and_says_why(tmp_path):
    got = client_bench.run_peer(FakePeer(why_not="no closed loop"), "http://127.0.0.1:9", Load(4, 8, 4), tmp_path, 1)
    assert got == {"cannot_express": "no closed loop"}  # the unreachable URL was never asked


def test_a_failed_peer_reports_its_exit_and_log(paced, tmp_path):
    proc, url = paced

    class Crashing(FakePeer):
        def command(self, load, url, out, tokenizer):
            return [sys.executable, "-c", "import sys; print('boom: no tokenizer'); sys.exit(3)"]

    got = client_bench.run_peer(Crashing(), url, Load(1, 1, 1), tmp_path, timeout_s=30)
    assert got["error"].startswith("exit 3") and "boom: no tokenizer" in got["error"]


def test_a_real_server_gets_each_tools_own_figures_side_by_side(paced, tmp_path, capsys):
    proc, url = paced
    out = tmp_path / "real.json"
    code = client_bench.main(
        ["--endpoint", url, "--model", "paced-model", "--streams", "2", "--rounds", "4", "--tokens", "8", "--peers",
         "", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    assert "| 2 | ours |" in capsys.readouterr().out.split("TTFT p50 (ms) | ITL p50 (ms)")[1]
    run = json.loads(out.read_text())["rows"][0]["tools"]["ours"]["runs"][0]
    assert run["ttft_p50_ms"] == pytest.approx(20, abs=15) and run["itl_p50_ms"] == pytest.approx(2, abs=1.5)
    assert "ttft_p50_error_ms" not in run and "cpu_ms_per_request" not in run  # no ground truth, no load window
    assert not out.with_suffix(".html").exists()


def test_a_peer_past_its_time_is_ended_with_its_workers(paced, tmp_path):
    proc, url = paced
    marker = tmp_path / "worker.pid"

    class Hanging(FakePeer):
        def command(self, load, url, out, tokenizer):
            worker = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
            spawn = (
                f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {worker!r}]); time.sleep(60)"
            )
            return [sys.executable, "-c", spawn]

    got = client_bench.run_peer(Hanging(), url, Load(1, 1, 1), tmp_path, timeout_s=3)
    assert got["error"].startswith("no result within 3 s")
    worker = int(marker.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{worker}").exists() or "Z" in Path(f"/proc/{worker}/stat").read_text().split()[2]


def row(streams: int, **tools) -> dict:
    return {"streams": streams, "tools": {name: {"runs": [], "summary": s} for name, s in tools.items()}}


def figures(ttft: float, cpu: float = 1.0, lag: float = 0.5) -> dict:
    return {
        "ttft_p50_error_ms": ttft,
        "ttft_p99_error_ms": ttft * 3,
        "itl_p50_error_ms": 0.01,
        "cpu_ms_per_request": cpu,
        "output_tokens_per_s": 100.0,
        "server_lag_p50_ms": lag,
        "server_kept_schedule": lag <= client_bench.SERVER_LAG_P50_MS,
    }


def test_ratio_tables_and_cannot_express_cells():
    rows = [
        row(1, ours=figures(0.5, cpu=2), aiperf=figures(2.0, cpu=4), guidellm={"cannot_express": "no such load"}),
        row(512, ours=figures(-4.0), aiperf={"error": "exit 1: boom"}, guidellm=figures(8.0)),
    ]
    text = client_bench.ratio_tables(rows)
    assert "| 1 | 0.25 (0.50 / 2.00) | cannot express: no such load |" in text  # |median TTFT error|
    assert "| 512 | failed | 0.50 (4.00 / 8.00) |" in text  # magnitudes: -4 ms is 4 ms wrong
    assert "| 1 | 0.50 (2.00 / 4.00) | cannot express: no such load |" in text  # CPU per request
    full = client_bench.table(rows)
    assert "| 1 | guidellm | cannot express: no such load |" in full
    assert "ours: highest load kept with |median TTFT error| <= 1 ms: 1 streams; <= 5 ms: 512 streams" in full
    assert "aiperf: highest load kept with |median TTFT error| <= 1 ms: none of the loads; <= 5 ms: 1 streams" in full


def test_a_tool_that_held_fewer_requests_than_streams_does_not_keep_the_load():
    light = {**figures(0.5), "in_flight_mean": 7.4}
    rows = [row(16, ours={**figures(0.8), "in_flight_mean": 15.7}, lazy=light)]
    assert client_bench.kept(rows, "lazy", 1.0) == "none of the loads"
    assert client_bench.kept(rows, "ours", 1.0) == "16 streams"
    assert "| 16 | lazy | +0.50 | +1.50 | +0.01 | 1.00 | 100 | 7.4 (below the load asked) |" in client_bench.table(rows)


def test_a_load_the_server_fell_behind_on_is_not_kept():
    rows = [row(1, ours=figures(0.5)), row(512, ours=figures(0.5, lag=30.0))]
    assert client_bench.kept(rows, "ours", 1.0) == "1 streams"
    assert "server behind schedule" in client_bench.table(rows)


def test_summary_is_the_median_of_the_repeats_and_keeps_a_refusal():
    runs = [
        {"ttft_p50_error_ms": e, "ttft_p99_error_ms": 1.0, "itl_p50_error_ms": 0.0, "cpu_ms_per_request": 1.0,
         "output_tokens_per_s": 1.0, "server": {"lag_p50_ms": 0.5}}
        for e in (0.4, 9.0, 0.6)
    ]  # fmt: skip
    assert client_bench.summary(runs)["ttft_p50_error_ms"] == 0.6
    assert client_bench.summary(runs + [{"error": "exit 1"}])["failed_repeats"] == 1
    assert client_bench.summary([{"cannot_express": "why"}]) == {"cannot_express": "why"}


BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


def test_tree_cpu_of_this_process_counts_a_finished_child_not_a_running_server():
    server = subprocess.Popen([sys.executable, "-c", BURN + "time.sleep(3)"])  # stands for the paced server
    try:
        with client_bench.TreeCPU(os.getpid()) as cpu:
            start = time.perf_counter_ns()
            subprocess.Popen([sys.executable, "-c", BURN]).wait()
            end = time.perf_counter_ns()
    finally:
        server.kill()
        server.wait()
    assert 0.25 <= cpu.between(start, end) < 1.5


def test_tree_cpu_of_a_peer_counts_its_children():
    peer = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BURN!r}])"]
    )
    with client_bench.TreeCPU(peer.pid, every_s=0.05) as cpu:
        start = time.perf_counter_ns()
        peer.wait()
        end = time.perf_counter_ns()
    assert 0.25 <= cpu.between(start, end) < 1.5


# --- installing: never here, and a dry run says what it would do ---


def run_install(*args: str, peers: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTEST_INFER_PEERS": str(peers)}
    return subprocess.run(["bash", str(INSTALL), *args], capture_output=True, text=True, env=env, timeout=60)


def test_install_dry_run_creates_nothing(tmp_path):
    proc = run_install("--dry-run", "aiperf", "inference-perf", peers=tmp_path / "peers")
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("aiperf: would install aiperf==0.13.0 with ")
    # a machine without Python 3.12 is told so, by name
    assert lines[1].startswith(
        ("inference-perf: would install inference-perf==0.7.0", "inference-perf: FAILED: no python3.12")
    )
    assert not (tmp_path / "peers").exists()


def test_install_sees_a_present_peer_and_refuses_an_unknown_one(tmp_path):
    python = tmp_path / "peers" / "guidellm" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nexit 0\n")  # answers the version check as guidellm 0.8.1 would
    python.chmod(0o755)
    proc = run_install("guidellm", peers=tmp_path / "peers")
    assert proc.returncode == 0 and proc.stdout.strip() == f"guidellm: present 0.8.1 in {python.parent.parent}"
    bad = run_install("locust", peers=tmp_path / "peers")
    assert bad.returncode == 2 and "unknown peer 'locust'" in bad.stderr


def test_ensure_dry_run_names_each_peer_and_installs_none(tmp_path):
    status = ensure([AIPerf(), GuideLLM(), VllmBench(tmp_path / "no-vllm" / "python")], dry_run=True)
    assert status["aiperf"].startswith("would install aiperf==0.13.0")
    assert status["guidellm"].startswith("would install guidellm==0.8.1")
    assert status["vllm"].startswith("FAILED: no ")
    assert not (tmp_path / "peers").exists()


def test_one_run_with_peers_not_installed_measures_ours_alone(tmp_path, capsys):
    out = tmp_path / "bench.json"
    code = client_bench.main(
        ["--streams", "2", "--rounds", "4", "--tokens", "8", "--ttft-ms", "20", "--itl-ms", "2", "--peers",
         "aiperf", "--no-install", "--processes", "1,2", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "aiperf: would install" in printed and "not measured: aiperf" in printed
    result = json.loads(out.read_text())
    assert list(result["rows"][0]["tools"]) == ["ours", "ours x2"]
    for name in ("ours", "ours x2"):
        ours = result["rows"][0]["tools"][name]["summary"]
        assert abs(ours["ttft_p50_error_ms"]) < 20 and ours["cpu_ms_per_request"] > 0
    assert len(result["rows"][0]["tools"]["ours x2"]["runs"][0]["processes"]) == 2
    assert set(result["load_average"]) == {"before", "after"}
    page = out.with_suffix(".html").read_text()
    assert "<svg" in page and "Load clients against the paced server" in page
    assert not (tmp_path / "peers").exists()

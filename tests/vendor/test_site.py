"""The drafted upstream reports and the static site, from a history the fake runner filled: the gate's verdicts
along it, the regression still open with its draft, the release x check table in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_infer.reporting.history import build_history
from pytest_infer.vendor.drafts import drafts
from pytest_infer.vendor.engines import ENGINES
from pytest_infer.vendor.site import render_site
from pytest_infer.vendor.store import Store
from pytest_infer.vendor.watch import watch

from .conftest import BROKEN, LOG, FakeRunner, release

HF = ENGINES["transformers"]
FIXED_LATER = "completions.logprobs"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5.22.0 passes all; 5.23.0 breaks logprobs; 5.24.0 fails to install; 5.25.0 fixes logprobs and breaks stop
    strings, run by other suite code: logprobs' regression is closed, stop strings' is open."""
    root = tmp_path_factory.mktemp("history")
    runs = {
        "5.22.0": release("5.22.0"),
        "5.23.0": release("5.23.0", {FIXED_LATER: "failed"}),
        "5.25.0": release("5.25.0", {BROKEN: "failed"}),
    }
    runs["5.25.0"].environment["git"] = {
        "commit": "def4567890ab",
        "dirty": False,
    }  # the suites changed meanwhile
    watch(
        HF,
        Store(root, "transformers"),
        FakeRunner(runs, {"5.24.0"}),
        [*runs, "5.24.0"],
        root / "work",
    )
    (root / "llamacpp").mkdir()
    (root / "llamacpp" / "summary.md").write_text(
        "## llama.cpp b9976 to b11312, stored as Markdown\n"
    )
    return root


def test_a_draft_is_written_for_the_vendor_with_the_curl_line_and_the_server_log(history: Path):
    store = Store(history, "transformers")
    _, line = build_history(store.parts())
    versions = {e.label: e.version for e in store.judged()}
    found = drafts(HF, line.steps, versions, dict(store.parts()))
    assert [(d.before, d.after, d.subject) for d in found] == [
        ("5.22.0", "5.23.0", FIXED_LATER),
        ("5.23.0", "5.25.0", BROKEN),
    ]
    text = found[1].markdown
    assert text.startswith(
        f"# Regression in 5.25.0: {BROKEN} (passed in 5.23.0, failed in 5.25.0)\n"
    )
    assert (
        "**Last good:** transformers 5.23.0" in text
        and "**First bad:** transformers 5.25.0" in text
    )
    assert "**The change:** passed in 5.23.0, failed in 5.25.0" in text
    assert (
        f"curl -sS http://127.0.0.1:8080/v1/{BROKEN}" in text
    )  # the stored curl line, on the port it names
    assert f"What 5.23.0 did: {BROKEN}: the answer ended at the stop string" in text
    assert f"What 5.25.0 does: {BROKEN} failed: expected X, got Y" in text
    assert f"```\n{LOG}\n```" in text


def test_the_site_has_the_table_the_releases_the_checks_and_the_open_regressions(
    history: Path, tmp_path: Path
):
    out = tmp_path / "site"
    (site,) = render_site(history, out)
    assert [d.subject for d in site.open] == [BROKEN]  # logprobs regressed and was fixed: not open
    front = (out / "index.html").read_text()
    assert (
        "3 releases judged (5.22.0, 5.23.0, 5.25.0); 1 not judged" in front
        and "1 open regression" in front
    )
    assert "latest step: 5.25.0: FAIL: 1 regression" in front
    assert "llamacpp/summary.md" in front  # the histories stored as Markdown, shown as they are
    table = (out / "transformers" / "index.html").read_text()
    assert table.count('data-suite="conformance"') == 5 and 'id="suite-filter"' in table
    assert f'href="checks/{BROKEN}.html#r-5.25.0"' in table  # a failing cell links to its failure
    assert "No matching distribution" in table  # the release that failed to install, with its log
    releases = (out / "transformers" / "releases.html").read_text()
    assert releases.index("5.25.0 since 5.23.0: FAIL: 1 regression") < releases.index(
        "5.23.0 since 5.22.0"
    )
    assert (
        releases.count("ran different suite code") == 1
    )  # the gate's warning, on the step whose suites differed
    check = (out / "transformers" / "checks" / f"{FIXED_LATER}.html").read_text()
    assert check.count("<circle") == 3 and check.count('fill="#c62828"') == 1  # up, down, up again
    assert f"reports/transformers-5.25.0-{BROKEN}.md" in (out / "regressions.html").read_text()
    assert (
        (out / "reports" / f"transformers-5.25.0-{BROKEN}.md")
        .read_text()
        .startswith("# Regression in 5.25.0")
    )


def chromium() -> str | None:
    return next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
    )


def test_the_site_in_a_headless_browser_colours_the_table_and_filters_by_suite(
    history: Path, tmp_path: Path
):
    """As the HTML report's browser test: the DOM after its script ran (the filter from the address hides the other
    suites' rows), and a screenshot whose pixels hold the failed and the passed cells' colours."""
    browser = chromium()
    if browser is None:
        pytest.skip("no headless browser: apt-get install chromium")
    from PIL import Image

    out = tmp_path / "site"
    render_site(history, out)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    page = (out / "transformers" / "index.html").resolve().as_uri()
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", f"{page}#suite=structured"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert (
        dom.stdout.count('class="hidden" data-suite="conformance"')
        + dom.stdout.count('data-suite="conformance" class="hidden"')
        == 5
    ), dom.stdout[:3000]
    shot = tmp_path / "table.png"
    run = subprocess.run([browser, *flags, "--window-size=1000,700", f"--screenshot={shot}", page],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    colours = {c for _, c in Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)}
    assert (0xFF, 0xCD, 0xD2) in colours and (
        0xE8,
        0xF5,
        0xE9,
    ) in colours  # failed and passed cells

"""``pytest-infer bisect``: halving an ordered list of releases, where each visit is judged good, bad, inconclusive
or failed to install; only the last two are never called good or bad. Good and bad are the gate's judgement."""

from __future__ import annotations

import pytest

from pytest_infer.vendor.bisect import (
    BAD,
    GOOD,
    INCONCLUSIVE,
    INSTALL_FAILED,
    Visit,
    bisect,
    bisect_releases,
    judge_check,
    summary,
)

from .conftest import BROKEN, release

RELEASES = [f"0.3.{n}" for n in range(20, 37)]  # 17 releases, 0.3.20 .. 0.3.36


def judge(first_bad: str, untestable: dict[str, str] | None = None):
    visited: list[str] = []

    def visit(version: str) -> Visit:
        visited.append(version)
        if version in (untestable or {}):
            return Visit(version, untestable[version], "no verdict")
        bad = RELEASES.index(version) >= RELEASES.index(first_bad)
        return Visit(
            version,
            BAD if bad else GOOD,
            label=f"b{1000 + RELEASES.index(version)}",
            commit=f"c{version}",
        )

    return visit, visited


@pytest.mark.parametrize("first_bad", ["0.3.21", "0.3.28", "0.3.36"])
def test_halving_finds_the_first_bad_release_visiting_few(first_bad: str):
    visit, visited = judge(first_bad)
    result = bisect(RELEASES, visit)
    assert result.first_bad.version == first_bad and result.exact
    assert result.last_good.version == RELEASES[RELEASES.index(first_bad) - 1]
    assert len(visited) <= 2 + 5  # the two ends, then log2(15) rounded up
    assert len(set(visited)) == len(visited)  # nothing installed twice


def test_ends_known_from_a_stored_history_are_not_visited():
    visit, visited = judge("0.3.30")
    ends = [Visit("0.3.20", GOOD), Visit("0.3.36", BAD)]
    result = bisect(RELEASES, visit, ends)
    assert (
        "0.3.20" not in visited and "0.3.36" not in visited and result.first_bad.version == "0.3.30"
    )


def test_adjacent_releases_need_no_visit_between():
    visit, visited = judge("0.3.36")
    result = bisect(["0.3.35", "0.3.36"], visit, [Visit("0.3.35", GOOD), Visit("0.3.36", BAD)])
    assert visited == [] and result.exact and result.first_bad.version == "0.3.36"


@pytest.mark.parametrize("why", [INCONCLUSIVE, INSTALL_FAILED])
def test_a_release_that_judged_nothing_is_neither_good_nor_bad(why: str):
    """0.3.28 is the first bad one but cannot be judged: the answer is a range, 0.3.28 or 0.3.29, never an exact
    'first bad 0.3.29' nor a good 0.3.28."""
    visit, visited = judge("0.3.28", {"0.3.28": why})
    result = bisect(RELEASES, visit)
    assert result.last_good.version == "0.3.27" and result.first_bad.version == "0.3.29"
    assert result.skipped_between == ["0.3.28"] and not result.exact
    assert "0.3.28" in visited
    lines = "\n".join(summary("llamacpp", "errors.context-overflow-stream", result))
    assert f"visited 0.3.28: {why}" in lines and "the first bad is one of these or 0.3.29" in lines
    assert "source range: c0.3.27..c0.3.29" in lines


def test_an_end_that_is_not_what_it_was_said_to_be_gives_no_answer():
    visit, _ = judge("0.3.20")  # already bad at GOOD
    result = bisect(RELEASES, visit)
    assert (
        result.error.startswith("0.3.20 was given as good but is bad") and result.first_bad is None
    )
    visit, _ = judge("0.3.25", {"0.3.36": INSTALL_FAILED})
    assert "is install failed" in bisect(RELEASES, visit).error


def test_the_gate_judges_a_release_against_both_ends():
    """Bad: the gate finds the check regressed from GOOD; good: the gate finds it regressed from the release to BAD;
    a release that did not judge the check is inconclusive."""
    good, bad = release("5.23.0"), release("5.25.0", {BROKEN: "failed"})
    assert judge_check(BROKEN, good, bad, release("5.24.0", {BROKEN: "failed"}))[0] == BAD
    assert judge_check(BROKEN, good, bad, release("5.24.0"))[0] == GOOD
    outcome, why = judge_check(BROKEN, good, bad, release("5.24.0", {BROKEN: "inconclusive"}))
    assert outcome == INCONCLUSIVE and BROKEN in why


def test_bisecting_releases_runs_only_the_check_on_what_it_visits(tmp_path):
    """GOOD is in the stored history (not installed again); BAD and the visited releases are installed and run with
    only the check selected; 5.20.0 fails to install and is skipped, so the answer is the range 5.20.0 or 5.21.0."""
    from pytest_infer.vendor.engines import ENGINES
    from pytest_infer.vendor.store import Store
    from pytest_infer.vendor.watch import watch

    from .conftest import FakeRunner

    store = Store(tmp_path, "transformers")
    watch(
        ENGINES["transformers"],
        store,
        FakeRunner({"5.18.0": release("5.18.0")}),
        ["5.18.0"],
        tmp_path / "w",
    )
    versions = ["5.18.0", "5.19.0", "5.20.0", "5.21.0", "5.22.0", "5.23.0"]
    runs = {v: release(v, {BROKEN: "failed"} if v >= "5.21.0" else None) for v in versions[1:]}
    runner = FakeRunner(runs, broken={"5.20.0"})
    result, ends_run = bisect_releases(BROKEN, versions, store, runner, tmp_path / "work")
    assert [v.version for v in ends_run] == ["5.23.0"] and "5.18.0" not in runner.installed
    assert {select for _, select in runner.ran} == {BROKEN}
    assert result.last_good.version == "5.19.0" and result.first_bad.version == "5.21.0"
    assert result.skipped_between == ["5.20.0"] and not result.exact
    assert [(v.version, v.outcome) for v in result.visits] == [
        ("5.20.0", INSTALL_FAILED), ("5.21.0", BAD), ("5.19.0", GOOD),
    ]  # fmt: skip


def test_bisecting_ends_the_gate_does_not_call_a_regression_is_refused(tmp_path):
    from pytest_infer.vendor.engines import VendorError
    from pytest_infer.vendor.store import Store

    from .conftest import FakeRunner

    runs = {"5.18.0": release("5.18.0"), "5.23.0": release("5.23.0")}
    with pytest.raises(VendorError, match="the gate finds no regression"):
        bisect_releases(
            BROKEN, list(runs), Store(tmp_path, "transformers"), FakeRunner(runs), tmp_path / "w"
        )


@pytest.mark.parametrize(
    ("suite", "check", "node"),
    [
        (
            "structured",
            "test_known_bug_class[response_format-stream-absent-type]",
            "test_known_bug_class[response_format-stream-probe-absent-type]",
        ),
        (
            "conformance",
            "errors.context-overflow-stream",
            "test_check[errors.context-overflow-stream-probe]",
        ),
    ],
)
def test_the_selection_of_a_check_collects_its_test_whatever_the_target(
    pytester, suite, check, node
):
    """The bisection runs one check by ``-k``; a check id leaves out the target, which a test id
    carries among its parameters (the bisection of a structured check once selected nothing)."""
    from pytest_infer.paths import bundled
    from pytest_infer.vendor.watch import selection

    result = pytester.runpytest_subprocess(
        str(bundled("suites") / suite), "--co", "-q", "-p", "no:cacheprovider",
        "--infer-endpoint=probe=http://127.0.0.1:9", "-k", selection(check),
    )  # fmt: skip
    assert any(line.endswith(node) for line in result.outlines), result.outlines[-5:]
    unselected = pytester.runpytest_subprocess(
        str(bundled("suites") / suite), "--co", "-q", "-p", "no:cacheprovider",
        "--infer-endpoint=probe=http://127.0.0.1:9", "-k", check,
    )  # fmt: skip
    assert (node in "\n".join(unselected.outlines)) == ("[" not in check)

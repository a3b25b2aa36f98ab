"""The parser history across releases (pytest_infer.conformance.matrix history): only the cells that changed, each
with the first release that changed it, releases ordered as versions (not as text), and a parser a release does
not ship told apart from one it ships but did not run."""

from __future__ import annotations

from pathlib import Path

from pytest_infer.conformance.matrix import history, main
from pytest_infer.results import model

OUTCOME = {
    "pass": ("passed", ""),
    "FAIL": ("failed", "got: []"),
    "nd": ("not_exercised", "not drivable: x"),
}


def report(root: Path, version: str, cells: dict[str, dict[str, str]], shipped: list[str]) -> Path:
    """A parser-matrix report folder as scripts/parser-matrix.sh leaves it: one results file per parser folder."""
    out = root / f"parsers-{version}"
    for parser, row in cells.items():
        results = model.SessionResults()
        results.targets["vllm"] = model.TargetRecord(
            id="vllm", framework="vllm", model="tiny", version=version
        )
        for case, shown in row.items():
            outcome, message = OUTCOME[shown]
            nodeid = f"t::{parser}-{case}"
            results.add_test(
                model.TestRecord(nodeid, "vllm", outcome, "conformance", f"parsers.{case}", message)
            )
        (out / parser).mkdir(parents=True)
        results.write(out / parser / "results.json")
    (out / "engine-parsers.txt").write_text("".join(f"{line}\n" for line in shipped))
    return out


SHIPPED = ["tool hermes", "tool pythonic", "tool qwen3_xml", "reasoning qwen3"]
STEADY = {"reasoning-qwen3": {"reasoning-split": "nd"}}


def releases(root: Path) -> list[Path]:
    """Four releases: a cell broken in 0.30.0, a FAIL -> pass -> FAIL flip, a parser first shipped in 0.29.0,
    one shipped but not run in 0.30.0; 0.100.0 is the newest, though it sorts first as text."""
    hermes = {"tool-single": "pass", "tool-nested": "pass"}
    broken = {**hermes, "tool-single": "FAIL"}
    fails, passes, xlam = {"tool-single": "FAIL"}, {"tool-single": "pass"}, [*SHIPPED, "tool xlam"]
    return [
        report(root, "0.100.0", {"tool-hermes": broken, "tool-pythonic": fails, "tool-xlam": passes,
                                 "tool-qwen3_xml": passes, **STEADY}, xlam),
        report(root, "0.30.0", {"tool-hermes": broken, "tool-pythonic": fails, "tool-xlam": passes, **STEADY}, xlam),
        report(root, "0.28.0", {"tool-hermes": hermes, "tool-pythonic": fails, "tool-qwen3_xml": passes, **STEADY},
               SHIPPED),
        report(root, "0.29.0", {"tool-hermes": hermes, "tool-pythonic": passes, "tool-xlam": passes,
                                "tool-qwen3_xml": passes, **STEADY}, xlam),
    ]  # fmt: skip


EXPECTED = """\
| parser | case | 0.28.0 | 0.29.0 | 0.30.0 | 0.100.0 | first changed in |
|---|---|---|---|---|---|---|
| tool-hermes | tool-single | pass | pass | FAIL | FAIL | 0.30.0 |
| tool-pythonic | tool-single | FAIL | pass | FAIL | FAIL | 0.29.0 |
| tool-qwen3_xml | tool-single | pass | pass | not run | pass | 0.30.0 |
| tool-xlam | tool-single | absent | pass | pass | pass | 0.29.0 |

2 of 6 (parser, case) cells were identical across all 4 versions."""


def test_history_lists_the_changed_cells_with_the_first_release_that_changed_them(
    tmp_path: Path,
) -> None:
    assert history(releases(tmp_path)) == EXPECTED


def test_history_without_a_change_says_so(tmp_path: Path) -> None:
    same = {"tool-hermes": {"tool-single": "pass"}}
    dirs = [report(tmp_path, v, same, ["tool hermes"]) for v in ("0.31.0", "0.32.0")]
    assert (
        history(dirs)
        == "No cell changed.\n\n1 of 1 (parser, case) cells were identical across all 2 versions."
    )


def test_history_and_matrix_entry_points_write_their_files(tmp_path: Path) -> None:
    dirs = releases(tmp_path)
    main(["history", *map(str, dirs), "-o", str(tmp_path / "parsers-history.md")])
    assert (tmp_path / "parsers-history.md").read_text() == EXPECTED + "\n"
    main([str(dirs[0]), "--engine-parsers", str(dirs[0] / "engine-parsers.txt")])
    assert "| hermes | pass | FAIL |" in (dirs[0] / "matrix.md").read_text()

"""The parser matrix: one results file per parser (scripts/parser-matrix.sh runs one server per
parser), folded into one table of parsers x cases, and the parsers an engine ships that no script
can drive; and the parser history: the cells that changed across an engine's releases, each with the
first release that changed it.

    python -m pytest_infer.conformance.matrix REPORT_DIR [--engine-parsers FILE]
    python -m pytest_infer.conformance.matrix history REPORT_DIR... -o OUT (a Markdown file)

reads REPORT_DIR/*/results.json (one folder per parser, named ``tool-NAME`` or ``reasoning-NAME``,
or ``pair-T+R`` for a tool and a reasoning parser served together, shown in both tables) and writes
REPORT_DIR/matrix.md; ``FILE`` lists the engine's own parser names (``tool NAME`` / ``reasoning
NAME`` per line), so that a parser without a script shows as "not drivable", not as absent.
``history`` takes one REPORT_DIR per release (its version read from its results files, its parser
listing from its ``engine-parsers.txt``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..outcomes import Outcome, words
from ..results.model import SessionResults, atomic_write_text
from ..results.views import PROBLEMS, release_version
from .scripts import REASONING_FORMATS, TOOL_FORMATS

PREFIX = "parsers."
MATRIX_FILE = "matrix" + ".md"  # a report the script writes, not a document under docs/
# written by scripts/parser-matrix.sh beside the parsers' folders
ENGINE_PARSERS = "engine-parsers.txt"
# results outcome -> the cell shown
CELLS: dict[str, str] = {
    Outcome.PASSED: Outcome.PASSED.label,
    Outcome.FAILED: Outcome.FAILED.label,
    Outcome.ERROR: Outcome.ERROR.label,
    Outcome.XFAIL: f"{Outcome.FAILED.label} (known)",
    Outcome.FIXED: f"{Outcome.PASSED.label} ({Outcome.FIXED.words})",
}
Rows = dict[str, dict[str, str]]  # parser folder -> case -> cell


def cell(outcome: str, message: str) -> str:
    if outcome in CELLS:
        return CELLS[outcome]
    if "not drivable" in message:
        return "not drivable"
    return words(outcome)


def rows(report_dir: Path) -> tuple[Rows, list[str], str | None]:
    """One report's cells, its failures' first lines, and the engine version its results files
    name.
    """
    found: Rows = {}
    notes: list[str] = []
    version = None
    for path in sorted(report_dir.glob("*/results.json")):
        results = SessionResults.read(path)
        parser = path.parent.name
        version = version or next((t.version for t in results.targets.values() if t.version), None)
        for test in results.tests:
            if test.check and test.check.startswith(PREFIX):
                found.setdefault(parser, {})[test.check.removeprefix(PREFIX)] = cell(
                    test.outcome, test.message
                )
                if test.outcome in PROBLEMS:
                    said = [
                        line.strip()
                        for line in test.message.splitlines()
                        if line.strip().startswith(("expected:", "got:"))
                    ]
                    notes.append(
                        f"- {parser} / {test.check}: {' '.join(said)[:300] or test.outcome}"
                    )
    return found, notes, version


def read_engine_parsers(path: Path) -> list[tuple[str, str]]:
    """``tool NAME`` / ``reasoning NAME`` lines as (kind, name)."""
    words = (line.split(maxsplit=1) for line in path.read_text().splitlines() if line.strip())
    return [(kind, name) for kind, name in words]


def _named(parser: str) -> list[tuple[str, str]]:
    """The engine parsers a folder ran: tool-NAME, reasoning-NAME, or pair-T+R (both)."""
    if parser.startswith("pair-"):
        tool, reasoning = parser.removeprefix("pair-").split("+", 1)
        return [("tool", tool), ("reasoning", reasoning)]
    kind, name = parser.split("-", 1)
    return [(kind, name)]


def matrix(report_dir: Path, engine_parsers: list[tuple[str, str]] | None = None) -> str:
    found, notes, _ = rows(report_dir)
    unscripted: dict[str, list[str]] = {"tool": [], "reasoning": []}
    not_run: dict[str, list[str]] = {"tool": [], "reasoning": []}
    run = {name for p in found for _, name in _named(p)}
    for kind, name in engine_parsers or []:
        formats = TOOL_FORMATS if kind == "tool" else REASONING_FORMATS
        if name not in formats:
            unscripted.setdefault(kind, []).append(name)
        elif name not in run:
            not_run.setdefault(kind, []).append(name)
    cases = sorted({c for r in found.values() for c in r if c != "*"})
    kinds = {
        "tool": [c for c in cases if c.startswith("tool-")],
        "reasoning": [c for c in cases if c.startswith("reasoning-")],
    }
    lines = []
    for kind, columns in kinds.items():
        parsers = sorted(p for p in found if p.startswith((f"{kind}-", "pair-")))
        if not parsers:
            continue
        lines += [
            f"| {kind} parser | " + " | ".join(c.removeprefix(f"{kind}-") for c in columns) + " |",
            "|---" * (len(columns) + 1) + "|",
        ]
        for parser in parsers:
            row = found[parser]
            cells = [row.get(c, "-") for c in columns]
            lines.append(
                f"| {parser.removeprefix(f'{kind}-')} | " + " | ".join(cells) + " |"
            )  # a pair shows as pair-T+R
        lines.append("")
    for kind in ("tool", "reasoning"):
        if unscripted.get(kind):
            lines.append(
                f"Not drivable, no script for its format ({kind}): {', '.join(unscripted[kind])}."
            )
        if not_run.get(kind):
            lines.append(f"Scripted, not run here ({kind}): {', '.join(not_run[kind])}.")
    return "\n".join(lines + (["", "Failures:", *notes] if notes else []))


def history(report_dirs: list[Path]) -> str:
    """Every (parser, case) cell that differs across releases, oldest first, with the first release
    whose cell differs from the one before; a parser the release does not ship is "absent", one it
    ships but that has no results there "not run" (its listing, engine-parsers.txt, tells them
    apart)."""
    runs = []
    for report_dir in report_dirs:
        found, _, version = rows(report_dir)
        if version is None:
            raise SystemExit(
                f"matrix history: no results file in {report_dir} names the engine's version"
            )
        listing = report_dir / ENGINE_PARSERS
        shipped = set(read_engine_parsers(listing)) if listing.is_file() else None
        release = release_version(version)
        if release is None:
            raise SystemExit(
                f"matrix history: {report_dir}'s engine version {version!r} is neither PEP 440 nor "
                "a llama.cpp build"
            )
        runs.append((release, version, found, shipped))
    runs.sort(key=lambda run: run[0])
    keys = sorted(
        {(parser, case) for *_, found, _ in runs for parser, row in found.items() for case in row}
    )
    lines = ["| parser | case | " + " | ".join(run[1] for run in runs) + " | first changed in |"]
    lines.append("|---" * (len(runs) + 3) + "|")
    for parser, case in keys:
        cells = []
        for _, _, found, shipped in runs:
            if parser in found:
                cells.append(found[parser].get(case, "-"))
            else:
                cells.append(
                    "absent"
                    if shipped is not None and not set(_named(parser)) <= shipped
                    else "not run"
                )
        first = next((runs[i][1] for i in range(1, len(cells)) if cells[i] != cells[i - 1]), None)
        if first:
            lines.append(f"| {parser} | {case} | " + " | ".join(cells) + f" | {first} |")
    changed = len(lines) - 2
    same = (
        f"{len(keys) - changed} of {len(keys)} (parser, case) cells were identical across all "
        f"{len(runs)} versions."
    )
    return "\n".join((lines if changed else ["No cell changed."]) + ["", same])


def main(argv: list[str] | None = None) -> None:
    argv = list(argv if argv is not None else sys.argv[1:])
    parser = argparse.ArgumentParser(
        prog="pytest_infer.conformance.matrix", description=__doc__.splitlines()[0]
    )
    if argv[:1] == ["history"]:
        parser.add_argument(
            "report_dirs", type=Path, nargs="+", help="one parser-matrix report folder per release"
        )
        parser.add_argument(
            "-o", "--output", type=Path, required=True, help="the Markdown file to write"
        )
        args = parser.parse_args(argv[1:])
        text, out = history(args.report_dirs), args.output
    else:
        parser.add_argument("report_dir", type=Path)
        parser.add_argument(
            "--engine-parsers", type=Path, help="lines 'tool NAME' / 'reasoning NAME'"
        )
        args = parser.parse_args(argv)
        listed = read_engine_parsers(args.engine_parsers) if args.engine_parsers else []
        text, out = matrix(args.report_dir, listed), args.report_dir / MATRIX_FILE
    atomic_write_text(out, text + "\n")
    print(text)


if __name__ == "__main__":
    main()

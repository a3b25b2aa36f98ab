"""The parser matrix: one results file per parser (scripts/parser-matrix.sh runs one server per parser), folded
into one table of parsers x cases, and the parsers an engine ships that no script can drive.

    python -m pytest_infer.conformance.matrix REPORT_DIR [--engine-parsers FILE]

reads REPORT_DIR/*/results.json (one folder per parser, named ``tool-NAME`` or ``reasoning-NAME``, or ``pair-T+R``
for a tool and a reasoning parser served together, shown in both tables) and writes
REPORT_DIR/matrix.md; ``FILE`` lists the engine's own parser names (``tool NAME`` / ``reasoning NAME`` per line),
so that a parser without a script shows as "not drivable", not as absent.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..results.model import SessionResults, atomic_write_text
from .scripts import REASONING_FORMATS, TOOL_FORMATS

PREFIX = "parsers."
MATRIX_FILE = "matrix" + ".md"  # a report the script writes, not a document under docs/
# results outcome -> the cell shown
CELLS = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "xfailed": "FAIL (known)", "xpassed": "pass (fixed)"}


def cell(outcome: str, message: str) -> str:
    if outcome in CELLS:
        return CELLS[outcome]
    if "not drivable" in message:
        return "not drivable"
    return outcome.replace("_", " ")


def matrix(report_dir: Path, engine_parsers: list[tuple[str, str]] | None = None) -> str:
    rows: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    for path in sorted(report_dir.glob("*/results.json")):
        results = SessionResults.read(path)
        parser = path.parent.name
        for test in results.tests:
            if test.check and test.check.startswith(PREFIX):
                rows.setdefault(parser, {})[test.check.removeprefix(PREFIX)] = cell(test.outcome, test.message)
                if test.outcome in ("failed", "error"):
                    said = [line.strip() for line in test.message.splitlines() if line.strip().startswith(("expected:", "got:"))]
                    notes.append(f"- {parser} / {test.check}: {' '.join(said)[:300] or test.outcome}")
    unscripted: dict[str, list[str]] = {"tool": [], "reasoning": []}
    not_run: dict[str, list[str]] = {"tool": [], "reasoning": []}
    run = {p.split("-", 1)[1] for p in rows} | {n for p in rows if p.startswith("pair-") for n in p[5:].split("+")}
    for kind, name in engine_parsers or []:
        formats = TOOL_FORMATS if kind == "tool" else REASONING_FORMATS
        if name not in formats:
            unscripted.setdefault(kind, []).append(name)
        elif name not in run:
            not_run.setdefault(kind, []).append(name)
    cases = sorted({c for r in rows.values() for c in r if c != "*"})
    kinds = {"tool": [c for c in cases if c.startswith("tool-")], "reasoning": [c for c in cases if c.startswith("reasoning-")]}
    lines = []
    for kind, columns in kinds.items():
        parsers = sorted(p for p in rows if p.startswith((f"{kind}-", "pair-")))
        if not parsers:
            continue
        lines += [f"| {kind} parser | " + " | ".join(c.removeprefix(f"{kind}-") for c in columns) + " |", "|---" * (len(columns) + 1) + "|"]
        for parser in parsers:
            row = rows[parser]
            cells = [row.get(c, "-") for c in columns]
            lines.append(f"| {parser.removeprefix(f'{kind}-')} | " + " | ".join(cells) + " |")  # a pair shows as pair-T+R
        lines.append("")
    for kind in ("tool", "reasoning"):
        if unscripted.get(kind):
            lines.append(f"Not drivable, no script for its format ({kind}): {', '.join(unscripted[kind])}.")
        if not_run.get(kind):
            lines.append(f"Scripted, not run here ({kind}): {', '.join(not_run[kind])}.")
    return "\n".join(lines + (["", "Failures:", *notes] if notes else []))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="pytest_infer.conformance.matrix", description=__doc__.splitlines()[0])
    parser.add_argument("report_dir", type=Path)
    parser.add_argument("--engine-parsers", type=Path, help="the engine's parser names: 'tool NAME' or 'reasoning NAME' per line")
    args = parser.parse_args(argv)
    listed: list[tuple[str, str]] = []
    if args.engine_parsers:
        listed = [(kind, name) for kind, name in (line.split(maxsplit=1) for line in args.engine_parsers.read_text().splitlines() if line.strip())]
    text = matrix(args.report_dir, listed)
    atomic_write_text(args.report_dir / MATRIX_FILE, text + "\n")
    print(text)


if __name__ == "__main__":
    main()

"""``pytest-infer``: what happens outside a test run.

- ``merge FILE|DIR... -o OUT``: combine the results of many CI jobs into one matrix.
- ``compare BASELINE CANDIDATE``: what changed; exit 1 on a regression (the gate).
- ``report FILE``: re-render HTML, Markdown and pytest-benchmark JSON from a results file.
- ``history FILE|DIR... -o OUT``: a trend across versions (vendor regression tracking).
- ``watch ENGINE`` / ``bisect ENGINE GOOD BAD --check ID`` / ``site DIR``: vendor regression
  tracking as a service (``pytest_infer/vendor``): each new release judged and stored, the first bad
  release of a check, the site.
- ``path suites|FOLDER``: where the bundled suites are, for ``pytest "$(pytest-infer path
  suites)"``, or a folder a suite bundles (the SLO suite's ``slo``: its profiles).

A suite adds its own arguments to ``compare`` and ``history`` (its gate settings) and commands of
its own (``Suite.cli``), such as the SLO suite's ``--fail-on`` and ``calibrate``.

Exit codes: 0 fine, 1 the gate found regressions, 2 the gate is incomplete (no target paired, a side
that judged nothing: its server never became ready or its file holds no tests, a measurement
invalid) or bad input (a missing, cut-short or foreign file, a bad rule).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .gating.compare import EXIT_INCOMPLETE, EXIT_PASS, compare, gate_of
from .outcomes import InferError
from .paths import bundled
from .reporting.history import build_history, render_history, terminal_lines
from .reporting.history import render_markdown as render_history_markdown
from .reporting.markdown import render_markdown
from .reporting.outputs import write_renderings
from .reporting.terminal import render_gate, render_summary, render_written
from .results.model import SessionResults, atomic_write_text, combine, result_files
from .suite import SuiteCli, installed
from .table import ALPHA
from .vendor.cli import add_commands as add_vendor_commands

# bad input exits as an incomplete gate does: nothing compared
EXIT_OK, EXIT_USAGE = EXIT_PASS, EXIT_INCOMPLETE


class CliError(InferError):
    pass


def suite_clis() -> dict[str, SuiteCli]:
    """Suite name -> its part in this command (``Suite.cli``), for every installed suite that has
    one.
    """
    return {suite.name: part for suite in installed() if (part := suite.command_line()) is not None}


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """Each suite's gate settings from its arguments (``Pairing.settings``), for the suites that
    have some.
    """
    return {
        name: value
        for name, part in suite_clis().items()
        if (value := part.settings(args)) is not None
    }


def _read_all(inputs: Sequence[str]) -> SessionResults:
    files = result_files(inputs)
    return combine([(str(p), SessionResults.read(p)) for p in files])


def _print(lines: list[str]) -> None:
    for line in lines:
        print(line)


def cmd_merge(args: argparse.Namespace) -> int:
    merged = _read_all(args.inputs)
    merged.write(args.output)
    _print(render_summary(merged))
    print(
        f"merged {len(merged.environment['parts'])} files, {len(merged.targets)} targets -> "
        f"{args.output}"
    )
    return EXIT_OK


def _pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        b, sep, c = item.partition("=")
        if not sep or not b or not c:
            raise CliError(f"--pair {item!r} is not BASELINE_TARGET=CANDIDATE_TARGET")
        pairs[b] = c
    return pairs


def cmd_compare(args: argparse.Namespace) -> int:
    settings = _settings(args)
    baseline, candidate = SessionResults.read(args.baseline), SessionResults.read(args.candidate)
    gate = compare(baseline, candidate, settings, pairs=_pairs(args.pair), alpha=args.alpha)
    _print(render_gate(gate))
    if args.output:
        candidate.gate = {"baseline": str(args.baseline), **gate.to_dict()}
        candidate.write(args.output)
        print(f"candidate with the gate's verdict -> {args.output}")
    if args.markdown:
        atomic_write_text(
            args.markdown, render_markdown(candidate, gate, "pytest-infer upgrade gate")
        )
    return gate.exit_code


def cmd_report(args: argparse.Namespace) -> int:

    results = (
        _read_all(args.inputs)
        if len(args.inputs) > 1 or Path(args.inputs[0]).is_dir()
        else SessionResults.read(args.inputs[0])
    )
    out = args.output or Path(args.inputs[0]).parent
    written = write_renderings(
        results, out, gate=gate_of(results), title=args.title, step_summary=not args.no_step_summary
    )
    _print(render_summary(results))
    if written.gate is not None:
        _print(render_gate(written.gate))
    _print(render_written(written))
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    parts = [(str(p), SessionResults.read(p)) for p in result_files(args.inputs)]
    merged, history = build_history(parts, _settings(args))
    html, markdown = args.output / "history.html", args.output / "summary.md"
    atomic_write_text(html, render_history(merged, history, args.title))
    atomic_write_text(
        markdown,
        render_history_markdown(
            history, args.title, link=os.environ.get("PYTEST_INFER_REPORT_URL", "")
        ),
    )
    _print(terminal_lines(history))
    print(f"html: {html}\nmarkdown: {markdown}")
    return EXIT_OK


def cmd_path(args: argparse.Namespace) -> int:
    print(bundled(args.folder))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-infer", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    clis = suite_clis()

    def suites_add_arguments(p: argparse.ArgumentParser, command: str) -> None:
        for part in clis.values():
            part.add_arguments(p, command)

    p = sub.add_parser("merge", help="combine result files (one per CI job) into one matrix")
    p.add_argument("inputs", nargs="+", metavar="FILE|DIR")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser(
        "compare",
        help=(
            "compare a candidate with a baseline; exit 1 on a regression, 2 when nothing (or not "
            "everything) could be"
            " compared: a side whose server never became ready, a file without tests, an invalid "
            "measurement"
        ),
    )
    p.add_argument("baseline", type=Path)
    p.add_argument("candidate", type=Path)
    p.add_argument(
        "--pair",
        action="append",
        default=[],
        metavar="B=C",
        help="pair target B of the baseline with C of the candidate",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=ALPHA,
        help=f"significance level for timing changes (default {ALPHA})",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="write the candidate with the gate's verdict in it",
    )
    p.add_argument("--markdown", type=Path, metavar="FILE", help="write the comparison as Markdown")
    suites_add_arguments(p, "compare")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("report", help="re-render HTML, Markdown and benchmark JSON from results")
    p.add_argument(
        "inputs", nargs="+", metavar="FILE|DIR", help="one results file, or several to merge first"
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="DIR",
        help="folder for the reports (default: the file's folder)",
    )
    p.add_argument("--title", default="pytest-infer")
    p.add_argument(
        "--no-step-summary", action="store_true", help="do not append to $GITHUB_STEP_SUMMARY"
    )
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "history",
        help="each version against the one before it, as the gate compares them, and the trends",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="FILE|DIR",
        help="one results file per version (or folders of them)",
    )
    p.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")
    p.add_argument("--title", default="pytest-infer history")
    suites_add_arguments(p, "history")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser(
        "path",
        help='where the bundled suites, or a folder a suite bundles, are: pytest "$(pytest-infer '
        'path suites)"',
    )
    folders = [folder for part in clis.values() for folder in part.folders()]
    p.add_argument("folder", choices=("suites", *folders))
    p.set_defaults(func=cmd_path)
    for part in clis.values():
        part.commands(sub)
    # watch, bisect, site: vendor regression tracking (pytest_infer/vendor)
    add_vendor_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except InferError as exc:  # bad input: a file, a rule, a suite's argument
        print(f"pytest-infer {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

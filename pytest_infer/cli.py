"""``pytest-infer``: what happens outside a test run.

- ``merge FILE|DIR... -o OUT``: combine the results of many CI jobs into one matrix.
- ``compare BASELINE CANDIDATE``: what changed; exit 1 on a regression (the gate).
- ``calibrate FILE|DIR... -o OUT``: how far timing moves between sessions of one version on this machine,
  for ``compare --calibration`` (docs/timing-across-sessions.md).
- ``report FILE``: re-render HTML, Markdown and pytest-benchmark JSON from a results file.
- ``history FILE|DIR... -o OUT``: a trend across versions (vendor regression tracking).
- ``path suites|slo``: where the bundled suites and profiles are, for ``pytest "$(pytest-infer path suites)"``.

Exit codes: 0 fine, 1 the gate found regressions, 2 bad input (a missing, cut-short
or foreign file, a bad rule).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .gating.compare import compare
from .gating.drift import SAFETY, CalibrationError, DriftCalibration, calibrate
from .gating.rules import RuleError, parse_rules
from .gating.significance import ALPHA
from .outcomes import InferError
from .paths import bundled
from .reporting.terminal import render_gate, render_summary, render_written
from .results.model import ResultsFileError, SessionResults, atomic_write_text, combine

EXIT_OK, EXIT_REGRESSION, EXIT_USAGE = 0, 1, 2


class CliError(InferError):
    pass


def result_files(inputs: Sequence[str]) -> list[Path]:
    """Files as given; for a folder, every ``*.json`` below it that is a results document (by name or content)."""
    files: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.json") if p.name == "results.json" or _looks_like_results(p))
            if not found:
                raise CliError(f"{path}: no results files in this folder")
            files += found
        else:
            files.append(path)
    return files


def _looks_like_results(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as fh:
            return '"schema_version"' in fh.read(200)
    except OSError:
        return False


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
    print(f"merged {len(merged.environment['parts'])} files, {len(merged.targets)} targets -> {args.output}")
    return EXIT_OK


def _pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        b, sep, c = item.partition("=")
        if not sep or not b or not c:
            raise CliError(f"--pair {item!r} is not BASELINE_TARGET=CANDIDATE_TARGET")
        pairs[b] = c
    return pairs


def _rules(text: str | None) -> tuple:
    try:
        return parse_rules(text) if text else ()
    except RuleError as exc:
        raise CliError(f"--fail-on: {exc}") from None


def _drift(path: Path | None) -> DriftCalibration | None:
    try:
        return DriftCalibration.read(path) if path else None
    except CalibrationError as exc:
        raise CliError(f"--calibration: {exc}") from None


def cmd_calibrate(args: argparse.Namespace) -> int:
    try:
        parts = [(str(p), SessionResults.read(p)) for p in result_files(args.inputs)]
        drift = calibrate(parts, safety=args.safety, target=args.target)
    except CalibrationError as exc:
        raise CliError(str(exc)) from None
    drift.write(args.output)
    for key, figures in sorted(drift.figures.items()):
        shown = [
            f"{m} {d.bound_pct:g}%"
            for m, d in sorted(figures.items(), key=lambda i: str(i[0]))
            if m.name in DRIFT_SHOWN
        ]
        print(f"{key}: {', '.join(shown) if shown else f'{len(figures)} figures'}")
    print(
        f"{len(drift.sessions)} sessions; tolerated drift = largest move between two sessions x {drift.safety:g}"
        f" -> {args.output}"
    )
    return EXIT_OK


DRIFT_SHOWN = ("output_tokens_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "tpot_p50_ms", "e2e_p50_ms")


def cmd_compare(args: argparse.Namespace) -> int:
    rules = _rules(args.fail_on)
    drift = _drift(args.calibration)
    baseline, candidate = SessionResults.read(args.baseline), SessionResults.read(args.candidate)
    gate = compare(baseline, candidate, rules, pairs=_pairs(args.pair), alpha=args.alpha, drift=drift)
    _print(render_gate(gate))
    if args.output:
        candidate.gate = {"baseline": str(args.baseline), **gate.to_dict()}
        candidate.write(args.output)
        print(f"candidate with the gate's verdict -> {args.output}")
    if args.markdown:
        from .reporting.markdown import render_markdown

        atomic_write_text(args.markdown, render_markdown(candidate, gate, "pytest-infer upgrade gate"))
    if gate.failed:
        return EXIT_REGRESSION
    return EXIT_USAGE if not gate.pairs or gate.unmeasured else EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from .reporting.outputs import gate_of, write_renderings

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
    from .reporting.history import build_history, render_history, render_markdown, terminal_lines

    parts = [(str(p), SessionResults.read(p)) for p in result_files(args.inputs)]
    merged, history = build_history(parts, _rules(args.fail_on), _drift(args.calibration))
    html, markdown = args.output / "history.html", args.output / "summary.md"
    atomic_write_text(html, render_history(merged, history, args.title))
    atomic_write_text(
        markdown, render_markdown(history, args.title, link=os.environ.get("PYTEST_INFER_REPORT_URL", ""))
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

    p = sub.add_parser("merge", help="combine result files (one per CI job) into one matrix")
    p.add_argument("inputs", nargs="+", metavar="FILE|DIR")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser(
        "compare",
        help=(
            "compare a candidate with a baseline; exit 1 on a regression, 2 when nothing (or not everything) could be"
            " compared"
        ),
    )
    p.add_argument("baseline", type=Path)
    p.add_argument("candidate", type=Path)
    p.add_argument("--fail-on", metavar="RULES", help="SLO figures that gate, e.g. ttft_p99:10%%,output_tps:5%%")
    p.add_argument(
        "--pair",
        action="append",
        default=[],
        metavar="B=C",
        help="pair target B of the baseline with C of the candidate",
    )
    p.add_argument(
        "--alpha", type=float, default=ALPHA, help=f"significance level for timing changes (default {ALPHA})"
    )
    p.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help=(
            "drift between sessions on this machine (pytest-infer calibrate): timing from separate sessions "
            "gates beyond it; without it, such timing is listed, not gated"
        ),
    )
    p.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write the candidate with the gate's verdict in it"
    )
    p.add_argument("--markdown", type=Path, metavar="FILE", help="write the comparison as Markdown")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "calibrate",
        help=(
            "how far timing moves between sessions of one server version on this machine: "
            "the drift compare --calibration tolerates across sessions"
        ),
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="FILE|DIR",
        help="results of at least 3 sessions of one server version, on the gate's machine",
    )
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    p.add_argument(
        "--safety", type=float, default=SAFETY, help=f"the largest move seen is multiplied by this (default {SAFETY:g})"
    )
    p.add_argument("--target", help="the target to calibrate, where a file holds several")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("report", help="re-render HTML, Markdown and benchmark JSON from results")
    p.add_argument("inputs", nargs="+", metavar="FILE|DIR", help="one results file, or several to merge first")
    p.add_argument(
        "-o", "--output", type=Path, metavar="DIR", help="folder for the reports (default: the file's folder)"
    )
    p.add_argument("--title", default="pytest-infer")
    p.add_argument("--no-step-summary", action="store_true", help="do not append to $GITHUB_STEP_SUMMARY")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "history", help="each version against the one before it, as the gate compares them, and the trends"
    )
    p.add_argument("inputs", nargs="+", metavar="FILE|DIR", help="one results file per version (or folders of them)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")
    p.add_argument(
        "--fail-on",
        metavar="RULES",
        help="SLO figures marked as regressions, as for compare (default: every figure's significance test alone)",
    )
    p.add_argument("--title", default="pytest-infer history")
    p.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="drift between sessions (pytest-infer calibrate), as for compare",
    )
    p.set_defaults(func=cmd_history)

    p = sub.add_parser(
        "path", help='where the bundled suites or SLO profiles are: pytest "$(pytest-infer path suites)" ...'
    )
    p.add_argument("folder", choices=("suites", "slo"))
    p.set_defaults(func=cmd_path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ResultsFileError, CliError) as exc:
        print(f"pytest-infer {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

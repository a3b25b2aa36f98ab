"""The SLO suite's part of the ``pytest-infer`` command (``Suite.cli`` names ``CLI``): ``--fail-on``
and ``--calibration`` for ``compare`` and ``history``, and ``calibrate``, which measures how far
timing moves between sessions of one version on this machine (docs/timing-across-sessions.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..results.model import SessionResults, result_files
from ..suite import SuiteCli
from .drift import SAFETY, CalibrationError, DriftCalibration, calibrate
from .rules import RuleError, parse_rules
from .settings import SloSettings

DRIFT_SHOWN = (
    "output_tokens_per_s",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "itl_p50_ms",
    "tpot_p50_ms",
    "e2e_p50_ms",
)


class SloCli(SuiteCli):
    """``--fail-on`` and ``--calibration`` for ``compare`` and ``history``, ``calibrate``, the
    profiles' folder.
    """

    def add_arguments(self, parser: argparse.ArgumentParser, command: str) -> None:
        if command == "compare":
            parser.add_argument(
                "--fail-on",
                metavar="RULES",
                help="SLO figures that gate, e.g. ttft_p99:10%%,output_tps:5%%",
            )
            parser.add_argument(
                "--calibration",
                type=Path,
                metavar="FILE",
                help=(
                    "drift between sessions on this machine (pytest-infer calibrate): timing from "
                    "separate sessions "
                    "gates beyond it; without it, such timing is listed, not gated"
                ),
            )
        elif command == "history":
            parser.add_argument(
                "--fail-on",
                metavar="RULES",
                help=(
                    "SLO figures marked as regressions, as for compare (default: every figure's "
                    "significance test"
                    " alone)"
                ),
            )
            parser.add_argument(
                "--calibration",
                type=Path,
                metavar="FILE",
                help="drift between sessions (pytest-infer calibrate), as for compare",
            )

    def settings(self, args: argparse.Namespace) -> SloSettings:
        """The gate's settings from ``--fail-on`` and ``--calibration``; a bad rule or file raises,
        naming its flag.
        """

        try:
            rules = parse_rules(args.fail_on) if args.fail_on else ()
        except RuleError as exc:
            raise RuleError(f"--fail-on: {exc}") from None
        try:
            drift = DriftCalibration.read(args.calibration) if args.calibration else None
        except CalibrationError as exc:
            raise CalibrationError(f"--calibration: {exc}") from None
        return SloSettings(rules, drift)

    def folders(self) -> tuple[str, ...]:
        """The bundled folders ``pytest-infer path`` names: the SLO profiles (``--slo=NAME`` reads
        them).
        """
        return ("slo",)

    def commands(self, subparsers: argparse._SubParsersAction) -> None:
        p = subparsers.add_parser(
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
            help=(
                "results of at least 3 sessions of one server version, on the gate's machine "
                "(sessions of another"
                " framework, version, model or machine are refused)"
            ),
        )
        p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
        p.add_argument(
            "--safety",
            type=float,
            default=SAFETY,
            help=f"the largest move seen is multiplied by this (default {SAFETY:g})",
        )
        p.add_argument("--target", help="the target to calibrate, where a file holds several")
        p.set_defaults(func=cmd_calibrate)


CLI = SloCli()


def cmd_calibrate(args: argparse.Namespace) -> int:

    parts = [(str(p), SessionResults.read(p)) for p in result_files(args.inputs)]
    drift = calibrate(parts, safety=args.safety, target=args.target)
    drift.write(args.output)
    for key, figures in sorted(drift.figures.items()):
        shown = [
            f"{m} {d.bound_pct:g}%"
            for m, d in sorted(figures.items(), key=lambda i: str(i[0]))
            if m.name in DRIFT_SHOWN
        ]
        print(f"{key}: {', '.join(shown) if shown else f'{len(figures)} figures'}")
    print(
        f"{len(drift.sessions)} sessions; tolerated drift = largest move between two sessions x "
        f"{drift.safety:g}"
        f" -> {args.output}"
    )
    return 0

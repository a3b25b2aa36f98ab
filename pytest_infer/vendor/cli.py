"""The vendor service's commands, added to ``pytest-infer`` by ``add_commands``: ``watch``,
``bisect``, ``site``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from packaging.version import Version

from ..paths import DEFAULT_MODEL
from .bisect import bisect_releases, summary
from .engines import ENGINES, VendorError, engine
from .index import releases
from .site import render_site
from .store import Store
from .watch import INSTALLER, SUITES, EngineRunner, watch

HISTORY = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "vendor-history"


def _runner(args: argparse.Namespace, store: Store, keep: bool = True) -> EngineRunner:
    """The history's own suites and model unless given; given ones that differ from the stored are
    refused (the gate would compare a release's tests with tests its predecessor never ran)."""
    stored = store.run_settings()
    given = {"suites": args.suites, "model": args.model}
    for key, value in given.items():
        if value is not None and key in stored and stored[key] != value:
            raise VendorError(
                f"{store.folder} was run with {key} {stored[key]}, not {value}: start another "
                "--history"
            )
    chosen = {"suites": list(SUITES), "model": DEFAULT_MODEL, **stored}
    chosen |= {k: v for k, v in given.items() if v is not None}
    if keep:  # watch: the history's first release fixes them; bisect writes nothing to the history
        store.keep_run_settings(chosen)
    return EngineRunner(
        engine(args.engine),
        suites=chosen["suites"],
        model=chosen["model"],
        installer=args.installer,
    )


def cmd_watch(args: argparse.Namespace) -> int:
    e = engine(args.engine)
    started = time.monotonic()
    available = args.versions or releases(e.package, args.pip_arg)
    store = Store(args.history, e.name)
    work = args.work or Path(tempfile.mkdtemp(prefix=f"pytest-infer-watch-{e.name}-"))
    done = watch(e, store, _runner(args, store), available, work, newest=args.newest)
    if not done:
        print(f"{e.name}: every release on the index since {e.oldest} is in {store.folder}")
    if args.site:
        render_site(args.history, args.site)
        print(f"site: {args.site / 'index.html'}")
    print(
        f"watch {e.name}: {len(done)} release(s) in {time.monotonic() - started:.0f} s; runs under "
        f"{work}"
    )
    return 0 if all(x.judged for x in done) else 1


def cmd_bisect(args: argparse.Namespace) -> int:
    e = engine(args.engine)
    good_v, bad_v = Version(args.good), Version(args.bad)
    listed = args.versions or releases(e.package, args.pip_arg)
    versions = [v for v in listed if good_v <= Version(v) <= bad_v]
    if not versions or versions[0] != args.good or versions[-1] != args.bad:
        raise VendorError(
            f"{args.good} and {args.bad} must both be releases of {e.package}, GOOD first"
        )
    work = args.work or Path(tempfile.mkdtemp(prefix=f"pytest-infer-bisect-{e.name}-"))
    started = time.monotonic()
    store = Store(args.history, e.name)
    result, ends_run = bisect_releases(
        args.check, versions, store, _runner(args, store, keep=False), work
    )
    result.visits[:0] = ends_run
    for line in summary(e.name, args.check, result):
        print(line)
    if (
        e.source
        and result.last_good
        and result.first_bad
        and result.last_good.commit
        and result.first_bad.commit
    ):
        print(f"changes: {e.source}/compare/{result.last_good.commit}...{result.first_bad.commit}")
    print(
        f"bisect: {len(result.visits)} release(s) visited in {time.monotonic() - started:.0f} s; "
        f"runs under {work}"
    )
    return 0 if result.exact else 1


def cmd_site(args: argparse.Namespace) -> int:
    sites = render_site(args.history, args.output)
    print(
        f"site: {args.output / 'index.html'} "
        f"({', '.join(s.engine.name for s in sites) or 'no engine history'})"
    )
    return 0


def _common(p: argparse.ArgumentParser, runs: bool) -> None:
    p.add_argument(
        "--history", type=Path, default=HISTORY, metavar="DIR", help="the stored histories"
    )
    if not runs:
        return
    p.add_argument("engine", choices=sorted(ENGINES))
    p.add_argument(
        "--versions", nargs="+", metavar="V", help="these releases instead of the package index's"
    )
    p.add_argument(
        "--pip-arg", action="append", default=[], help="an argument for pip index (an --index-url)"
    )
    p.add_argument(
        "--suites", nargs="+", help=f"bundled suites to run (default: the history's, else {SUITES})"
    )
    p.add_argument("--model", help=f"built-in model (default: the history's, else {DEFAULT_MODEL})")
    p.add_argument(
        "--installer",
        type=Path,
        default=INSTALLER,
        help="installs ENGINE-VERSION (install-engines.sh)",
    )
    p.add_argument(
        "--work",
        type=Path,
        metavar="DIR",
        help="where each run's full results go (default: a temp dir)",
    )


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "watch", help="judge every release of an engine the stored history lacks, and store it"
    )
    _common(p, runs=True)
    p.add_argument("--newest", type=int, metavar="N", help="only the newest N missing releases")
    p.add_argument("--site", type=Path, metavar="DIR", help="then render the site into DIR")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser(
        "bisect", help="the first release where a check regressed, by halving the releases"
    )
    _common(p, runs=True)
    p.add_argument("good")
    p.add_argument("bad")
    p.add_argument(
        "--check", required=True, help="the check's id, as the results and the gate name it"
    )
    p.set_defaults(func=cmd_bisect)

    p = sub.add_parser("site", help="render the stored vendor histories as a static site")
    p.add_argument("output", type=Path, metavar="DIR")
    _common(p, runs=False)
    p.set_defaults(func=cmd_site)

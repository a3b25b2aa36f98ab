"""Where one null-server session of tests/core/test_null_servers.py spends its time: every bundled suite against the
fake server's null modes and the independently written null servers (half of them, as one of the test's sessions
does), as a user runs them, under cProfile. Prints the session's wall time and the functions with the most own time.

    python benchmarks/profile_null_session.py [--top 15] [--out prof.out]
"""

from __future__ import annotations

import argparse
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "core")]

import null_servers  # noqa: E402
import test_null_servers as spec  # noqa: E402

from pytest_infer.testing.fakeserver import NULL_MODES, FakeServer  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--out", type=Path, default=None, help="keep the profile here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        urls = {f"fake-{mode}": stack.enter_context(FakeServer(make())).base_url for mode, make in NULL_MODES.items()}
        urls |= {f"wsgi-{mode}": stack.enter_context(null_servers.serving(mode)) for mode in null_servers.MODES}
        folder = Path(tmp)
        for suite in spec.SUITES:
            shutil.copytree(ROOT / "suites" / suite, folder / suite, ignore=shutil.ignore_patterns("__pycache__"))
        (folder / "stall.yaml").write_text(spec.STALL)
        (folder / "profile.yaml").write_text(
            spec.PROFILE + "".join(f"  {m}:\n{spec.POINT}" for m in ("tiny", "fake-model"))
        )
        out = args.out.resolve() if args.out else folder / "prof.out"
        argv = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "pytest", *spec.SUITES, *spec.OPTIONS,
                *(f"--infer-endpoint={name}={urls[name]}" for name in spec.SERVERS[0::2])]  # fmt: skip
        started = time.perf_counter()
        run = subprocess.run(argv, cwd=folder, capture_output=True, text=True)
        print(f"session: {time.perf_counter() - started:.1f} s wall; {run.stdout.strip().splitlines()[-1]}")
        pstats.Stats(str(out)).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A fake package index and a fake installer/runner for the vendor service: releases and their results as a test
chooses them, no network, no engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from results_factory import session

from pytest_infer.results.model import SessionResults
from pytest_infer.vendor.watch import Done

BROKEN = "chat.stop_strings"
LOG = "WARN srv  stop string handling: skipping 'B' (tokenizer has no piece)"


def release(version: str, outcomes: dict[str, str] | None = None) -> SessionResults:
    """A transformers serve release's results; a failing test carries a curl line and the server's log lines."""
    results = session(
        version, target="transformers", framework="transformers", outcomes=outcomes, seed=1
    )
    for test in results.tests:
        if test.outcome == "failed":
            test.extra["server_log"] = LOG
        elif test.outcome == "passed":
            test.extra["evidence"] = (
                f"{test.check}: the answer ended at the stop string " + "x" * 1000
            )
    return results


@dataclass
class FakeRunner:
    """Installs fail for ``broken`` releases (with a pip-like log); runs return ``runs[version]``."""

    runs: dict[str, SessionResults]
    broken: set[str] = field(default_factory=set)
    installed: list[str] = field(default_factory=list)
    ran: list[tuple[str, str | None]] = field(default_factory=list)

    def install(self, version: str) -> Done:
        self.installed.append(version)
        if version in self.broken:
            return Done(
                False,
                f"Collecting transformers=={version}\nERROR: No matching distribution found",
                2.0,
            )
        return Done(True, "installed", 1.0)

    def run(
        self, version: str, out: Path, select: str | None = None
    ) -> tuple[SessionResults | None, Done]:
        self.ran.append((version, select))
        if version not in self.runs:  # a server that died at start-up, as the plugin logs it
            (out / "servers").mkdir(parents=True, exist_ok=True)
            (out / "servers" / "transformers.log").write_text(
                "ModuleNotFoundError: No module named 'requests'\n"
            )
        return self.runs.get(version), Done(version in self.runs, "1 failed, 4 passed", 3.0)

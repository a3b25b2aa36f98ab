"""What installs and runs one release: the protocol ``watch`` and ``bisect`` drive
(``watch.EngineRunner`` is the real one: ``install-engines.sh`` and ``pytest`` as child processes;
the tests drive a fake one)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..results.model import SessionResults


@dataclass(slots=True)
class Done:
    """One child process's end: whether it succeeded, its output's tail, its wall time."""

    ok: bool
    log: str
    wall_s: float


class Runner(Protocol):
    def install(self, version: str) -> Done: ...

    def run(
        self, version: str, out: Path, select: str | None = None
    ) -> tuple[SessionResults | None, Done]: ...

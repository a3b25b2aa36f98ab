"""A stored vendor history: per engine a folder (``benchmarks/results/vendor-history/<engine>/``)
holding ``history.json``, one entry per release tried (judged, or why not: an install or a run that
failed, with its log tail), and each judged release's results, compacted and gzipped
(``<version>.json.gz``), so the history stays small in the repository and every verdict can be drawn
again from it by the gate as it stands."""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from ..results.model import SessionResults, atomic_write_text
from .engines import VendorError

INDEX = "history.json"
JUDGED, INSTALL_FAILED, RUN_FAILED = "judged", "install failed", "run failed"
LOG_TAIL = 3000  # characters of an install's or a run's log kept with a failed entry
EVIDENCE = 300  # characters of a pass's evidence kept: what it judged, not every byte it saw


@dataclass(slots=True)
class Entry:
    version: str  # the package's release
    state: str  # JUDGED, INSTALL_FAILED, RUN_FAILED
    label: str = ""  # the version its server reported (llama.cpp's bNNNN), as the results name it
    commit: str = ""  # the engine's source commit, where its server reports one (llama.cpp)
    file: str = ""  # the results, beside history.json
    log_tail: str = ""  # why an install or a run failed
    wall_s: float | None = None  # install and run, as measured
    # the gate's verdict against the judged release before it, when this entry was added
    verdict: str = ""
    before: str = ""  # that release
    counts: dict[str, int] = field(default_factory=dict)
    when: str = ""  # UTC, ISO 8601

    @property
    def judged(self) -> bool:
        return self.state == JUDGED


def compact(results: SessionResults) -> dict[str, Any]:
    """What a history keeps of a run: every test's outcome, message, reproducer and server log, a
    pass's evidence cut short, and every suite's table (the gate compares them); the environment's
    listing of packages left out."""
    data = results.to_dict()
    env = data.get("environment") or {}
    env.pop("packages", None)
    for test in data["tests"]:
        extra = test.get("extra") or {}
        if "evidence" in extra:
            extra["evidence"] = str(extra["evidence"])[:EVIDENCE]
    return data


class Store:
    """One engine's stored history."""

    def __init__(self, root: Path, engine: str) -> None:
        self.folder = Path(root) / engine

    def _read(self) -> dict[str, Any]:
        path = self.folder / INDEX
        if not path.exists():
            return {"entries": []}
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or not isinstance(data["entries"], list):
                raise TypeError("no list of entries")
            return data
        except (ValueError, KeyError, TypeError) as exc:
            raise VendorError(f"{path}: not a vendor history ({exc})") from exc

    def entries(self) -> list[Entry]:
        try:
            return sorted(
                (Entry(**e) for e in self._read()["entries"]), key=lambda e: Version(e.version)
            )
        except (ValueError, TypeError) as exc:
            raise VendorError(f"{self.folder / INDEX}: not a vendor history ({exc})") from exc

    def run_settings(self) -> dict[str, Any]:
        """What every release of this history was run with (``suites``, ``model``): a new release is
        run the same way, since the gate compares two releases test by test, and a test one side did
        not run is no verdict."""
        return {k: v for k, v in self._read().items() if k != "entries"}

    def keep_run_settings(self, settings: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write({**self._read(), **settings})

    def versions(self) -> set[str]:
        """Every release tried, judged or not: a release that failed to install is not retried by
        itself.
        """
        return {e.version for e in self.entries()}

    def judged(self) -> list[Entry]:
        return [e for e in self.entries() if e.judged]

    def results(self, entry: Entry) -> SessionResults:
        path = self.folder / entry.file
        try:
            return SessionResults.from_dict(json.loads(gzip.decompress(path.read_bytes())))
        except OSError as exc:
            raise VendorError(f"{path}: {exc}") from exc

    def parts(self) -> list[tuple[str, SessionResults]]:
        """``(release, results)`` of every judged release, oldest first, as ``build_history`` takes
        them.
        """
        return [(e.version, self.results(e)) for e in self.judged()]

    def add(self, entry: Entry, results: SessionResults | None = None) -> None:
        """Record a release (replacing an earlier entry of it); a judged one with its results."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if results is not None:
            entry.file = f"{entry.version}.json.gz"
            raw = json.dumps(compact(results), separators=(",", ":"), sort_keys=True).encode()
            tmp = self.folder / f".{entry.file}.tmp"
            tmp.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
            tmp.replace(self.folder / entry.file)
        kept = [e for e in self.entries() if e.version != entry.version] + [entry]
        kept.sort(key=lambda e: Version(e.version))
        self._write({**self._read(), "entries": [asdict(e) for e in kept]})

    def _write(self, data: dict[str, Any]) -> None:
        atomic_write_text(self.folder / INDEX, json.dumps(data, indent=1) + "\n")

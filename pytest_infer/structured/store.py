"""The reproducer store: failures found so far, one JSON file in the report directory.

The next run (and the next framework version) replays every stored schema
before generating new ones, and records per target whether it still fails.
Written under a file lock and atomically, so xdist workers and cut-short runs
never leave a half-written file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

FILE_NAME = "structured-reproducers.json"
SWEEP_DIR = "structured-sweeps"
VERSION = 1


def write_sweep(report_dir: Path, target: str, path_name: str, rows: list[dict[str, Any]]) -> Path:
    """One JSON line per distinct schema of a sweep, in order: what two runs with one seed must
    agree on.
    """
    out = Path(report_dir) / SWEEP_DIR / f"{target}-{path_name}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    )
    return out


def entry_id(path: str, signature: str, schema: Any) -> str:
    text = json.dumps([path, signature, schema], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(slots=True)
class ReproducerStore:
    path: Path

    @classmethod
    def in_dir(cls, report_dir: Path) -> ReproducerStore:
        return cls(Path(report_dir) / FILE_NAME)

    def load(self) -> list[dict[str, Any]]:
        """Stored entries; an unreadable file is reported, never silently replaced."""
        if not self.path.exists():
            return []
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(
                f"{self.path}: not a readable reproducer file ({exc}); move it away to start afresh"
            ) from exc
        if (
            not isinstance(data, dict)
            or data.get("version") != VERSION
            or not isinstance(data.get("reproducers"), list)
        ):
            raise ValueError(
                f"{self.path}: not a pytest-infer reproducer file of version {VERSION}"
            )
        return data["reproducers"]

    def for_path(self, path_name: str) -> list[dict[str, Any]]:
        return [e for e in self.load() if e.get("path") == path_name]

    def record(
        self,
        reproducer: dict[str, Any],
        *,
        target: str,
        version: str | None,
        minimal: bool,
        flaky: bool,
        note: str = "",
    ) -> dict[str, Any]:
        """Add a failure (or refresh it) with who found it; returns the stored entry."""
        entry = {
            **reproducer,
            "id": entry_id(reproducer["path"], reproducer["signature"], reproducer["schema"]),
            "found_by": {
                "target": target,
                "version": version,
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            "minimal": minimal,
            "flaky": flaky,
            "note": note,
            "replays": {},
        }
        with self._locked() as entries:
            old = next((e for e in entries if e.get("id") == entry["id"]), None)
            if old is not None:
                entry["replays"] = old.get("replays", {})
                entry["found_by"] = old.get("found_by", entry["found_by"])
                entries.remove(old)
            entries.append(entry)
        return entry

    def record_replay(
        self, entry_id_: str, *, target: str, version: str | None, signature: str
    ) -> None:
        """Remember what a stored reproducer does on this target now (still failing, or fixed)."""
        with self._locked() as entries:
            for entry in entries:
                if entry.get("id") == entry_id_:
                    entry.setdefault("replays", {})[target] = {
                        "version": version,
                        "signature": signature,
                        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    }

    class _Session:
        def __init__(self, store: ReproducerStore) -> None:
            self.store = store
            self.lock = FileLock(str(store.path) + ".lock")

        def __enter__(self) -> list[dict[str, Any]]:
            self.lock.acquire(timeout=60)
            try:
                self.entries = self.store.load()
            except BaseException:
                self.lock.release()
                raise
            return self.entries

        def __exit__(self, exc_type: object, *rest: object) -> None:
            try:
                if exc_type is None:
                    self.store._write(self.entries)
            finally:
                self.lock.release()

    def _locked(self) -> ReproducerStore._Session:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return ReproducerStore._Session(self)

    def _write(self, entries: list[dict[str, Any]]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(
                    {"version": VERSION, "reproducers": entries}, fh, indent=1, ensure_ascii=False
                )
                fh.write("\n")
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise

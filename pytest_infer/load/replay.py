"""Replay of a recorded trace: arrival times, token lengths and shared prompt blocks from a file.

The format is Mooncake's trace JSONL (the FAST'25 traces, ``kvcache-ai/Mooncake``
``FAST25-release/traces``; AIPerf's ``mooncake_trace`` dataset type and Dynamo's data
generator read the same), one JSON object per line:

- ``timestamp``: the arrival, in ms from the trace's start (non-decreasing; equal is simultaneous);
- ``input_length``: prompt tokens (integer >= 1);
- ``output_length``: tokens to generate (integer >= 1);
- ``hash_ids`` (optional): the prompt's blocks of ``block_tokens`` tokens (512 in Mooncake's
  traces), in order; requests listing the same id at the start of theirs share that block of prompt.

Other keys (``session_id`` ...) are ignored; blank lines are skipped. Each hash id becomes the
same seeded words in every request that lists it, so the server's prefix cache sees the sharing
the trace recorded; the last block is cut (or unique words added) to meet ``input_length``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .prompts import Calibration, seeded_words

MOONCAKE_BLOCK_TOKENS = 512


class TraceError(ValueError):
    """A trace file that cannot be replayed; the message names the file and the line."""


@dataclass(frozen=True, slots=True)
class TraceRequest:
    offset_ms: float  # from the trace's first request
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...] = ()


def _count(entry: dict, key: str, where: str) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TraceError(f"{where}: {key} must be an integer >= 1, not {value!r}")
    return value


def parse_trace(text: str, source: str = "trace") -> tuple[TraceRequest, ...]:
    """The requests of a Mooncake-format JSONL text; raises TraceError naming the line."""
    out: list[TraceRequest] = []
    first: float | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{n}"
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise TraceError(f"{where}: not JSON: {exc}") from exc
        if not isinstance(entry, dict):
            raise TraceError(f"{where}: a trace line is a JSON object, not {type(entry).__name__}")
        stamp = entry.get("timestamp")
        if (
            isinstance(stamp, bool)
            or not isinstance(stamp, (int, float))
            or not math.isfinite(stamp)
        ):
            raise TraceError(f"{where}: timestamp (ms) must be a number, not {stamp!r}")
        first = stamp if first is None else first
        if out and stamp - first < out[-1].offset_ms:
            raise TraceError(
                f"{where}: timestamp {stamp:g} is before the previous line's: the trace must be in "
                "arrival order"
            )
        hash_ids = entry.get("hash_ids", [])
        if not isinstance(hash_ids, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) for h in hash_ids
        ):
            raise TraceError(f"{where}: hash_ids must be a list of integers")
        out.append(
            TraceRequest(
                float(stamp - first),
                _count(entry, "input_length", where),
                _count(entry, "output_length", where),
                tuple(hash_ids),
            )
        )
    if not out:
        raise TraceError(f"{source}: no requests in the trace")
    return tuple(out)


@lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int) -> tuple[TraceRequest, ...]:
    return parse_trace(Path(path).read_text(), path)


def read_trace(path: str | Path) -> tuple[TraceRequest, ...]:
    """The trace file's requests (read once per version of the file); raises TraceError."""
    try:
        return _read(str(path), Path(path).stat().st_mtime_ns)
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from exc


def gaps_ns(trace: tuple[TraceRequest, ...], speedup: float = 1.0) -> list[int]:
    """Each request's wait after the one before (the first's after the start), the offsets divided
    by ``speedup``.
    """
    offsets = [int(r.offset_ms * 1e6 / speedup) for r in trace]
    return [b - a for a, b in zip([0, *offsets], offsets)]


class TracePrompts:
    """Prompt text for trace requests: block ``h`` is the same words wherever it appears."""

    def __init__(
        self,
        calibration: Calibration,
        block_tokens: int = MOONCAKE_BLOCK_TOKENS,
        seed: int | str = 0,
    ) -> None:
        self.calibration, self.seed = calibration, seed
        self.block_words = max(1.0, block_tokens / calibration.tokens_per_word)

    def _block(self, h: int) -> list[str]:
        return seeded_words(f"block-{self.seed}-{h}", self.block_words).split()

    def prompt(self, i: int, request: TraceRequest) -> str:
        want = max(1, round(self.calibration.words_for(request.input_length)))
        words = [w for h in request.hash_ids for w in self._block(h)][:want]
        # no hash_ids, or fewer blocks than the length: this request's own words
        if len(words) < want:
            words += seeded_words(f"trace-{self.seed}-{i}", want - len(words)).split()
        return " ".join(words)

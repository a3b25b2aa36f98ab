"""What the load client records about one request: raw timestamps, nothing derived.

Every time is ``time.perf_counter_ns()`` (CLOCK_MONOTONIC on Linux, so it is
comparable across processes on one host: the client benchmark relies on that).
Metrics are computed later, from these records only, by ``pytest_infer.slo.metrics``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(slots=True)
class RequestTrace:
    """One streamed request, as the client saw it.

    ``sent_ns`` is t0: taken just before the request's first byte is written.
    ``event_ns[i]`` is when the i-th output-carrying SSE event arrived (the time the
    socket read that delivered it returned, before any parsing), and
    ``event_tokens[i]`` how many tokens it carried. Role-only and empty events are
    not output: they only move ``first_byte_ns``.
    """

    index: int
    phase: str = "measured"
    intended_ns: int | None = None  # open loop: when the schedule wanted it sent
    sent_ns: int = 0
    first_byte_ns: int | None = None
    event_ns: list[int] = field(default_factory=list)
    event_tokens: list[int] = field(default_factory=list)
    end_ns: int | None = None
    done: bool = False  # the stream ended with ``data: [DONE]``
    status: int | None = None
    error: str | None = None
    usage_completion_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return (
            self.status == 200
            and self.error is None
            and not self.cancelled
            and self.end_ns is not None
        )

    @property
    def client_tokens(self) -> int:
        return sum(self.event_tokens)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

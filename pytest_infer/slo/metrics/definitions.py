"""Per-request metrics, exactly as defined in docs (performance-slos.md), from a RequestTrace.

All times in milliseconds, measured from t0 (just before the request's first byte
was written):
- TTFB: t0 -> first byte of the response body (any event, role-only included).
- TTFT: t0 -> first SSE event carrying generated output; a role-only chunk is not output.
- ITL: the gaps between successive output-carrying events. Per event: one gap per
  event. Per token: an event carrying k tokens contributes k gaps of gap/k.
- TPOT: (E2E - TTFT) / (output_tokens - 1); undefined (None) for one-token outputs.
- E2E: t0 -> ``[DONE]`` (or the end of the body when the server never sent it).
- Output tokens: the server's ``usage.completion_tokens``; the client's own count
  (sum of per-event token counts) is kept to cross-check it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...load.trace import RequestTrace

TOKEN_MISMATCH_SHARE = 0.02  # report client vs server token counts that differ by more than 2%


@dataclass(slots=True)
class RequestMetrics:
    ok: bool
    ttfb_ms: float | None = None
    ttft_ms: float | None = None
    e2e_ms: float | None = None
    tpot_ms: float | None = None
    itl_event_ms: list[float] = field(default_factory=list)
    itl_token_ms: list[float] = field(default_factory=list)
    output_tokens: int = 0
    client_tokens: int = 0
    usage_tokens: int | None = None
    schedule_lag_ms: float | None = None
    done: bool = False
    error: str | None = None
    # what it was computed from, for figures of what the trace alone records
    trace: RequestTrace | None = None

    @property
    def token_mismatch(self) -> bool:
        """Client and server disagree on the output length by more than 2%."""
        if self.usage_tokens is None:
            return False
        return abs(self.client_tokens - self.usage_tokens) > TOKEN_MISMATCH_SHARE * max(
            self.usage_tokens, 1
        )


def _ms(ns: int) -> float:
    return ns / 1e6


def request_metrics(trace: RequestTrace) -> RequestMetrics:
    m = RequestMetrics(
        ok=trace.ok and bool(trace.event_ns), done=trace.done, error=trace.error, trace=trace
    )
    if trace.intended_ns is not None and trace.sent_ns:
        m.schedule_lag_ms = _ms(trace.sent_ns - trace.intended_ns)
    if trace.first_byte_ns is not None:
        m.ttfb_ms = _ms(trace.first_byte_ns - trace.sent_ns)
    m.client_tokens = trace.client_tokens
    m.usage_tokens = trace.usage_completion_tokens
    m.output_tokens = (
        trace.usage_completion_tokens
        if trace.usage_completion_tokens is not None
        else m.client_tokens
    )
    if not m.ok:
        if m.error is None:
            m.error = (
                "no output"
                if trace.ok
                else "cancelled"
                if trace.cancelled
                else f"status {trace.status}"
            )
        return m
    times, counts = trace.event_ns, trace.event_tokens
    m.ttft_ms = _ms(times[0] - trace.sent_ns)
    m.e2e_ms = _ms(trace.end_ns - trace.sent_ns)  # type: ignore[operator]
    for i in range(1, len(times)):
        gap = _ms(times[i] - times[i - 1])
        m.itl_event_ms.append(gap)
        k = counts[i]
        m.itl_token_ms.extend([gap / k] * k)
    if m.output_tokens > 1:
        m.tpot_ms = (m.e2e_ms - m.ttft_ms) / (m.output_tokens - 1)
    return m

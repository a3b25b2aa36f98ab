"""Client against server: the load run's counts and TTFTs must agree with the server's own metrics.

The server's figures (``load.server_metrics``) cover the same requests as the client's traces
of the run (warm-up, measured and cool-down: the scrapes sit before the first and after the
drain), so they are compared request for request. A disagreement beyond the tolerance below
makes the load point's measurement invalid, with the reason, like the client-lag rules: either
the client mismeasured (a starved client stamps first tokens late), or the server was serving
someone else as well, or its metrics are wrong; in none of these cases is the figure trustworthy.

The tolerance, and why:

- **Counts** (finished requests, prompt tokens, output tokens) must be equal, give or take the
  requests whose fate the client does not know: those that failed, were cancelled or reported
  no usage. Each such request may or may not have been counted by the server, so it moves the
  request count by at most one and a token count by at most the largest per-request count the
  client saw. Every other request was sent after the first scrape and ended before the last
  (the last scrape waits for the server's counter to catch up), so nothing else may differ.
- **TTFT**: the server stamps a request's first token before the client can read it, and
  stamps its arrival after the client sent it, so each client TTFT is at least the server's.
  With ``S(b)`` the server's count of first tokens at or below a bucket bound ``b`` and ``C(t)``
  the client's count of TTFTs at or below ``t``, for every finite bound:

  - ``C(b - EARLY_SLACK_MS) <= S(b) + k``: the server may not be slower than the client saw;
    ``EARLY_SLACK_MS`` (5 ms) covers two processes' clock readings (a server may stamp arrival
    with the wall clock, which can be slewed) and the order in which the stamps are taken.
  - ``S(b) <= C(b + late(b)) + k``, ``late(b) = max(LATE_MS, LATE_SHARE * b)``: the client may be
    later than the server by what the server does not time: reading and parsing the HTTP
    request, the chat template and tokenization before arrival is stamped, detokenizing and
    writing the first event after the first token, the loopback hop, and the client's own
    reading. On an idle host that is a few ms; under load on the same cores the server's HTTP
    front end competes with its engine, hence the fixed ``LATE_MS`` floor and the share that
    scales with the latency itself. A client whose loop lags by more than that is the case
    the check exists for.
  - ``k = unsure + max(1, ceil(TTFT_SHARE * n))``: a few requests (2 %, at least one) may fall
    outside, for the odd scheduler hiccup on either side, plus the requests of unknown fate.

  The server's count of observations must equal the client's TTFT count within ``unsure``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...load.server_metrics import ServerFigures
from ...load.trace import RequestTrace
from .definitions import request_metrics

EARLY_SLACK_MS = 5.0
LATE_MS = 50.0
LATE_SHARE = 0.5
TTFT_SHARE = 0.02


@dataclass(slots=True)
class CrossCheck:
    """The comparison of one load run: what each side counted, and each disagreement beyond
    tolerance.
    """

    client: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    compared: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": not self.problems,
            "compared": self.compared,
            "problems": self.problems,
            "client": self.client,
            "tolerance": {
                "early_slack_ms": EARLY_SLACK_MS,
                "late_ms": LATE_MS,
                "late_share": LATE_SHARE,
                "ttft_share": TTFT_SHARE,
            },
        }


def _count(sorted_ms: list[float], at_most_ms: float) -> int:
    return bisect_right(sorted_ms, at_most_ms)


def cross_check(server: ServerFigures, traces: Sequence[RequestTrace]) -> CrossCheck:
    """Compare the server's figures with the client's traces of the same run (all phases)."""
    out = CrossCheck()
    if server.error:
        return out
    done = [
        t
        for t in traces
        if t.status == 200 and t.error is None and not t.cancelled and t.end_ns is not None
    ]
    unsure = len(traces) - len(done)
    prompts = [t.usage_prompt_tokens for t in done]
    outputs = [
        t.usage_completion_tokens if t.usage_completion_tokens is not None else t.client_tokens
        for t in done
    ]
    ttfts = sorted(m.ttft_ms for m in map(request_metrics, done) if m.ok and m.ttft_ms is not None)
    out.client = {
        "requests": len(traces),
        "completed": len(done),
        "unsure": unsure,
        "ttft_count": len(ttfts),
    }

    def counts(key: str, server_value: float | None, client_value: int, slack: float) -> None:
        if server_value is None:
            return
        out.compared.append(key)
        out.client[key] = client_value
        if abs(server_value - client_value) > slack:
            allowed = f" (+-{slack:g} for the {unsure} requests of unknown fate)" if slack else ""
            out.problems.append(
                f"server metrics disagree: the server counted {server_value:g} "
                f"{key.replace('_', ' ')}, the client"
                f" {client_value}{allowed}"
            )

    counts("requests", server.requests, len(done), unsure)
    if all(p is not None for p in prompts):
        known = [p for p in prompts if p is not None]
        counts("prompt_tokens", server.prompt_tokens, sum(known), unsure * max(known, default=0))
    counts("output_tokens", server.output_tokens, sum(outputs), unsure * max(outputs, default=0))
    hist = server.ttft
    if hist is None or not ttfts:
        return out
    out.compared.append("ttft")
    n = len(ttfts)
    if abs(hist.count - n) > unsure:
        out.problems.append(
            f"server metrics disagree: the server's TTFT histogram holds {hist.count:g} requests, "
            f"the client timed {n}"
        )
        return out
    k = unsure + max(1, math.ceil(TTFT_SHARE * n))
    # "early"/"late" -> the bucket where the two disagree most, and why
    worst: dict[str, tuple[float, str]] = {}

    def disagree(side: str, gap: float, why: str) -> None:
        if gap > k and (side not in worst or gap > worst[side][0]):
            worst[side] = (gap, why)

    for bound, at_or_below in zip(hist.bounds, hist.cumulative):
        if math.isinf(bound):
            continue
        b_ms = bound * 1e3
        client_early = _count(ttfts, b_ms - EARLY_SLACK_MS)
        disagree(
            "early",
            client_early - at_or_below,
            (
                f"server metrics disagree: the client saw {client_early} of {n} first tokens "
                "within "
                f"{b_ms - EARLY_SLACK_MS:g} ms, the server's TTFT histogram puts only "
                f"{at_or_below:g} "
                "at or below "
                f"{b_ms:g} ms (it cannot be slower than the client)"
            ),
        )
        allow = max(LATE_MS, LATE_SHARE * b_ms)
        client_late = _count(ttfts, b_ms + allow)
        disagree(
            "late",
            at_or_below - client_late,
            (
                f"server metrics disagree: the server's TTFT histogram puts {at_or_below:g} of {n} "
                "first tokens at "
                f"or below {b_ms:g} ms, the client saw only {client_late} within {b_ms + allow:g} "
                "ms "
                "(more than "
                f"{allow:g} ms later than the server: the client lagged?)"
            ),
        )
    out.problems += [worst[side][1] for side in ("early", "late") if side in worst]
    return out

"""One hostile request, everyone's latency: a valid but expensive request sent into a steady light load.

The light load is the load package's open loop at a near-fixed rate (gamma arrivals of a high shape); the
hostile request goes out ``before_s`` into it, from another thread, and is cut off (its connection closed) after
``hostile_timeout_s``. Each light request's TTFT counts from when the schedule meant to send it, so a request the
client could not send on time is late too. The figure is the stall: the worst TTFT of the light requests sent while
the hostile one ran (none: the first one after it) less the median TTFT of those sent before it (0 when less).
Recovery: the requests sent after it are back within ``recovery_factor`` x the median before (plus
``recovery_slack_s``).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from ..client.endpoint import Endpoint
from ..load.patterns import LoadSpec, Workload, run_load
from ..load.prompts import calibrate
from ..load.trace import RequestTrace

LIMITS_FILE = Path(__file__).with_name("stall.yaml")
MAX_N = 16
STOP_STRINGS = 2000


@dataclass(frozen=True, slots=True)
class StallLimits:
    """The light load, the hostile request's time, and the limits (``stall.yaml``; ``--security-stall=PATH``)."""

    rate: float = 2.0
    input_tokens: int = 16
    output_tokens: int = 8
    before_s: float = 3.0
    hostile_timeout_s: float = 6.0
    after_s: float = 3.0
    stall_limit_s: float = 2.0
    recovery_factor: float = 3.0
    recovery_slack_s: float = 0.5

    @classmethod
    def load(cls, path: str | Path = LIMITS_FILE) -> StallLimits:
        data = yaml.safe_load(Path(path).read_text()) or {}
        known = set(cls.__dataclass_fields__)
        if not isinstance(data, dict) or (unknown := set(data) - known):
            raise ValueError(
                f"{path}: unknown keys {sorted(unknown) if isinstance(data, dict) else data!r}; valid keys:"
                f" {', '.join(sorted(known))}"
            )
        values: dict[str, Any] = {
            k: float(v) if k not in ("input_tokens", "output_tokens") else int(v) for k, v in data.items()
        }
        if any(v <= 0 for v in values.values()):
            raise ValueError(f"{path}: every value must be positive")
        return cls(**values)


def _chat(model: str, content: str = "Tell me a story.", **params: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": content}], **params}


def compile_bomb() -> dict[str, Any]:
    """A valid, satisfiable schema that is costly to compile: 300 required properties, each an enum of 40 strings, and a
    bounded-repetition pattern (the structured suite's "huge" and "deep" corpus cases, combined and scaled)."""
    enum = [f"value-{i:03d}" for i in range(40)]
    props: dict[str, Any] = {f"p{i}": {"enum": enum} for i in range(300)}
    props["tail"] = {"type": "string", "pattern": "^([a-z0-9]{1,32}-){0,64}[a-z]{1,16}$"}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


# kind -> (what it is, body builder(model, context length, structured-output fields for a schema))
HOSTILE: dict[str, tuple[str, Callable[[str, int, Callable[[dict], dict]], dict[str, Any]]]] = {
    "grammar-bomb": (
        "a schema that is costly to compile (300 enum properties and a bounded-repetition pattern)",
        lambda m, c, schema: _chat(m, max_tokens=8, **schema(compile_bomb())),
    ),
    "n-x-max-tokens": (
        f"n={MAX_N} choices of the context's worth of tokens each",
        lambda m, c, schema: _chat(m, n=MAX_N, max_tokens=max(16, c - 64), temperature=1.0),
    ),
    "many-stop-strings": (
        f"{STOP_STRINGS} stop strings",
        lambda m, c, schema: _chat(
            m, stop=[f"zq{i:05d}xv" for i in range(STOP_STRINGS)], max_tokens=max(16, min(512, c - 64))
        ),
    ),
    "long-prompt": (
        "a prompt of half to all of the context",
        lambda m, c, schema: _chat(m, content="a " * max(16, c // 2 - 32), max_tokens=1),
    ),
}


def response_format(schema: dict) -> dict[str, Any]:
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "bomb", "schema": schema}}}


@dataclass(slots=True)
class Hostile:
    kind: str
    status: int | None = None
    error: str = ""
    start_ns: int = 0
    end_ns: int = 0
    cut_off: bool = False

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9

    def describe(self) -> str:
        if self.cut_off:
            return f"still running after {self.seconds:.1f}s (cut off)"
        return f"{'HTTP ' + str(self.status) if self.status else self.error} in {self.seconds:.1f}s"


def _send_hostile(endpoint: Endpoint, body: dict[str, Any], out: Hostile, timeout: float) -> None:
    out.start_ns = time.perf_counter_ns()
    try:
        with endpoint.http(timeout=timeout) as client:
            out.status = client.post("/v1/chat/completions", json=body).status_code
    except httpx.TimeoutException:
        out.cut_off = True
    except httpx.HTTPError as exc:
        out.error = type(exc).__name__
    out.end_ns = time.perf_counter_ns()


def ttft_s(trace: RequestTrace) -> float | None:
    """Seconds from when the schedule meant to send it to its first output; None: it never gave any."""
    if not trace.ok or not trace.event_ns:
        return None
    return (trace.event_ns[0] - (trace.intended_ns or trace.sent_ns)) / 1e9


@dataclass(slots=True)
class Stall:
    """One hostile kind's measurement; ``verdict`` is passed, failed or inconclusive, ``why`` says on what."""

    kind: str
    hostile: str = ""
    before: list[float] = field(default_factory=list)
    during: list[float | None] = field(default_factory=list)
    after: list[float | None] = field(default_factory=list)
    stall_s: float | None = None
    recovered: bool | None = None
    verdict: str = "inconclusive"
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 3)

        return {
            "hostile": self.hostile,
            "before_median_s": r(statistics.median(self.before)) if self.before else None,
            "during_s": [r(x) for x in self.during],
            "after_median_s": r(_median(self.after)),
            "stall_s": r(self.stall_s),
            "recovered": self.recovered,
            "verdict": self.verdict,
            "why": self.why,
        }


def _median(values: list[float | None]) -> float | None:
    ok = [v for v in values if v is not None]
    return statistics.median(ok) if ok else None


def judge(kind: str, traces: list[RequestTrace], hostile: Hostile, limits: StallLimits) -> Stall:
    """Split the light requests at the hostile one's start and end and judge the stall and the recovery."""
    out = Stall(kind, hostile.describe())
    timed = [(t.intended_ns or t.sent_ns, ttft_s(t)) for t in traces if t.phase == "measured"]
    out.before = [x for at, x in timed if at < hostile.start_ns and x is not None]
    failed_before = sum(1 for at, x in timed if at < hostile.start_ns and x is None)
    if len(out.before) < 2 or failed_before:
        out.why = (
            f"the light load did not run before the hostile request ({len(out.before)} answered, {failed_before}"
            " failed)"
        )
        return out
    out.during = [x for at, x in timed if hostile.start_ns <= at <= hostile.end_ns]
    later = [x for at, x in timed if at > hostile.end_ns]
    shown = "sent while it ran" if out.during else "the first sent after it"
    affected = out.during or later[:1]
    if not affected:
        out.why = "no light request was sent during or after the hostile request"
        return out
    base = statistics.median(out.before)
    if base > limits.stall_limit_s:
        out.why = (
            f"the light load alone queues on this server (median TTFT {base * 1000:.0f} ms before the hostile request,"
            f" over the {limits.stall_limit_s * 1000:.0f} ms limit): lower its rate (--security-stall) to measure a"
            " stall"
        )
        return out
    stall = out.stall_s = (
        float("inf") if None in affected else max(0.0, max(v for v in affected if v is not None) - base)
    )
    out.after = later[1:] if not out.during else later
    after = _median(out.after)
    out.recovered = after is not None and after <= max(limits.recovery_factor * base, base + limits.recovery_slack_s)
    figures = (
        f"hostile request {hostile.describe()}; light requests' TTFT median {base * 1000:.0f} ms before, "
        f"worst of {len(affected)} {shown} {_ms(stall + base)}, after {_ms(after)} (of {len(out.after)})"
    )
    problems = []
    if stall > limits.stall_limit_s:
        problems.append(f"stalled the others by {_ms(stall)} (limit {limits.stall_limit_s * 1000:.0f} ms)")
    if not out.recovered:
        problems.append("the server did not come back to its earlier latency")
    out.verdict = "failed" if problems else "passed"
    out.why = "; ".join([*problems, figures])
    return out


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "none answered"
    return "no answer" if seconds == float("inf") else f"{seconds * 1000:.0f} ms"


def measure(endpoint: Endpoint, kind: str, body: dict[str, Any], limits: StallLimits) -> Stall:
    """Run the light load, send ``body`` into it, and judge (every request bounded by the endpoint's timeout).

    One light request alone comes first: a server that gives it no first output cannot show a stall, and the
    measurement would only spend its whole window finding that out."""
    with endpoint.http() as sync:
        calibration = calibrate(sync, "chat", endpoint.model)
    workload = Workload(
        api="chat", input_tokens=limits.input_tokens, output_tokens=limits.output_tokens, ignore_eos=False
    )
    alone = run_load(
        endpoint, LoadSpec(requests=1, warmup_requests=0, cooldown="cancel"), workload, calibration=calibration
    ).traces
    if not alone or ttft_s(alone[0]) is None:
        said = f"HTTP {alone[0].status}, {alone[0].error or 'no output'}" if alone else "not sent"
        return Stall(
            kind, "not sent", why=f"a light request alone got no first output ({said}): no stall can be measured"
        )
    spec = LoadSpec(
        mode="poisson",
        rate=limits.rate,
        burstiness=50.0,
        requests=None,
        warmup_requests=1,
        duration_s=limits.before_s + limits.hostile_timeout_s + limits.after_s,
        cooldown="cancel",
        drain_timeout_s=30.0,
    )
    hostile = Hostile(kind)
    runs: list[Any] = []
    loader = threading.Thread(
        target=lambda: runs.append(run_load(endpoint, spec, workload, calibration=calibration)), daemon=True
    )
    loader.start()
    time.sleep(limits.before_s + 1.0 / limits.rate)  # the warm-up request, then before_s of measured ones
    _send_hostile(endpoint, body, hostile, limits.hostile_timeout_s)
    loader.join(limits.before_s + limits.hostile_timeout_s + limits.after_s + endpoint.timeout + 60)
    if not runs:
        return Stall(kind, hostile.describe(), why="the light load did not finish")
    return judge(kind, runs[0].traces, hostile, limits)

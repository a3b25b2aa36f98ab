"""One hostile request, everyone's latency: a valid but expensive request sent into a steady light
load.

The light load is the load package's open loop at a near-fixed rate (gamma arrivals of a high
shape); the hostile request goes out ``before_s`` into it, from another thread, and is cut off (its
connection closed) after ``hostile_timeout_s``. Each light request's TTFT counts from when the
schedule meant to send it, so a request the client could not send on time is late too. The figure is
the stall: the worst TTFT of the light requests in flight while the hostile one ran (none: the first
one sent after it, judged only when the hostile request took less than the limit) less the median
TTFT of those settled before it (0 when less). Recovery: the requests sent after it are back within
``recovery_factor`` x the median before (plus ``recovery_slack_s``). A light request's first token
is not all it waits for: those already streaming when the hostile request began, and those that met
it, are judged by their worst gap between two tokens (``gap_limit_s``) and their whole answer
(``e2e_limit_s``), each less the median of the requests that had ended before it.

What the hostile request got is judged first: every request here is valid, so a 5xx (to it or to a
light request), a dropped connection or an HTTP 200 that is no completion fails; a refusal that no
light request met is not exercised (nothing ran, nothing was stalled), never a pass. A kind whose
cost is its schema (``SCHEMAS``: the grammar bomb) passes only where its answer conforms to that
schema (or, cut at the token limit, still can): a server that takes the schema and applies none
never compiled the costly grammar, and is not exercised.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import yaml

from ..client.answers import CHAT, completion_problem, error_message
from ..client.endpoint import Endpoint
from ..load.patterns import LoadSpec, Workload, run_load
from ..load.prompts import calibrate
from ..load.trace import RequestTrace
from ..outcomes import Outcome

LIMITS_FILE = Path(__file__).with_name("stall.yaml")
MAX_N = 16
STOP_STRINGS = 2000


@dataclass(frozen=True, slots=True)
class StallLimits:
    """The light load, the hostile request's time, and the limits: the bundled ``stall.yaml``
    holds every value (no defaults here, so there is one place for them), a file named by
    ``--security-stall=PATH`` any of them.
    """

    rate: float
    input_tokens: int
    output_tokens: int
    before_s: float
    hostile_timeout_s: float
    after_s: float
    stall_limit_s: float
    # a streaming light request's worst gap between tokens, less the median before
    gap_limit_s: float
    # a light request's whole answer, less the median before: its TTFT and gaps together
    e2e_limit_s: float
    recovery_factor: float
    recovery_slack_s: float

    @classmethod
    def load(cls, path: str | Path = LIMITS_FILE) -> StallLimits:
        data = yaml.safe_load(Path(path).read_text()) or {}
        known = set(cls.__dataclass_fields__)
        if not isinstance(data, dict) or (unknown := set(data) - known):
            raise ValueError(
                f"{path}: unknown keys {sorted(unknown) if isinstance(data, dict) else data!r}; "
                "valid keys:"
                f" {', '.join(sorted(known))}"
            )
        values: dict[str, Any] = {
            k: float(v) if k not in ("input_tokens", "output_tokens") else int(v)
            for k, v in data.items()
        }
        if any(v <= 0 for v in values.values()):
            raise ValueError(f"{path}: every value must be positive")
        if Path(path) == LIMITS_FILE:
            if missing := known - set(values):
                raise ValueError(f"{path}: the bundled file lacks {sorted(missing)}")
            return cls(**values)
        # a file of some keys: the bundled file's values for the others, as its comments say
        return replace(cls.load(), **values)


def _chat(model: str, content: str = "Tell me a story.", **params: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": content}], **params}


def compile_bomb() -> dict[str, Any]:
    """A valid, satisfiable schema that is costly to compile: 300 required properties, each an enum
    of 40 strings, and a bounded-repetition pattern (the structured suite's "huge" and "deep" corpus
    cases, combined and scaled)."""
    enum = [f"value-{i:03d}" for i in range(40)]
    props: dict[str, Any] = {f"p{i}": {"enum": enum} for i in range(300)}
    props["tail"] = {"type": "string", "pattern": "^([a-z0-9]{1,32}-){0,64}[a-z]{1,16}$"}
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


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
            m,
            stop=[f"zq{i:05d}xv" for i in range(STOP_STRINGS)],
            max_tokens=max(16, min(512, c - 64)),
        ),
    ),
    "long-prompt": (
        "a prompt of half to all of the context",
        lambda m, c, schema: _chat(m, content="a " * max(16, c // 2 - 32), max_tokens=1),
    ),
}


# kind -> the schema its answer must conform to: judged only where the server applied it (a server
# that takes a schema and applies none never compiles the costly grammar, and its quick prose shows
# nothing of that cost)
SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {"grammar-bomb": compile_bomb}

# Why an answer (its text, its finish_reason) does not conform to a schema, None where it does or,
# cut at the token limit, still can: the caller's judge (the bundled suite passes the structured
# suite's classifier)
Conformance = Callable[[dict[str, Any], "str | None", "str | None"], "str | None"]


def response_format(schema: dict) -> dict[str, Any]:
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "bomb", "schema": schema},
        }
    }


# What became of a hostile request that, valid as it is, got a 5xx, a dropped connection or no
# completion: the request's fate, not a test's outcome.
REQUEST_FAILED = "failed"


@dataclass(slots=True)
class Hostile:
    """What became of the hostile request: ``outcome`` is answered (a chat completion), refused (a
    4xx), failed (a 5xx, a dropped connection, or HTTP 200 that is no completion: the request is
    valid) or cut off (still running when the client gave up on it)."""

    kind: str
    status: int | None = None
    error: str = ""  # the transport error that ended it, if one did
    said: str = ""  # a refusal's or a failure's message, or why a 2xx is no completion
    start_ns: int = 0
    end_ns: int = 0
    cut_off: bool = False
    content: str | None = None  # an answer's text and finish_reason: what shows its schema applied
    finish_reason: str | None = None
    # why its answer shows no schema applied (None: no schema to confirm; "": confirmed)
    unapplied: str | None = None

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9

    @property
    def outcome(self) -> str:
        if self.cut_off:
            return "cut off"
        if self.status is not None and 400 <= self.status < 500:
            return "refused"
        if self.status is not None and 200 <= self.status < 300 and not self.said:
            return "answered"
        return REQUEST_FAILED

    def describe(self) -> str:
        if self.cut_off:
            return f"still running after {self.seconds:.1f}s (cut off)"
        answer = f"HTTP {self.status}" if self.status is not None else self.error
        said = f": {self.said[:160]!r}" if self.said else ""
        return f"{self.outcome} ({answer}{said}) in {self.seconds:.2f}s"


def _send_hostile(endpoint: Endpoint, body: dict[str, Any], out: Hostile, timeout: float) -> None:
    out.start_ns = time.perf_counter_ns()
    try:
        with endpoint.http(timeout=timeout) as client:
            resp = client.post(CHAT, json=body)
            out.status = resp.status_code
            if resp.status_code < 400:
                out.said = completion_problem(CHAT, resp.status_code, resp.text) or ""
                # a chat completion: its first choice's text, for the schema it was asked
                if not out.said:
                    choice = resp.json()["choices"][0]
                    out.content, out.finish_reason = (
                        (choice.get("message") or {}).get("content"),
                        choice.get("finish_reason"),
                    )
            else:
                out.said = error_message(resp.text)
    except httpx.TimeoutException:
        out.cut_off = True
    except httpx.HTTPError as exc:
        out.error = type(exc).__name__
    out.end_ns = time.perf_counter_ns()


def schema_unapplied(hostile: Hostile, schema: dict[str, Any], conforms: Conformance) -> str:
    """Why the hostile request's answer shows no schema applied ("" where it conforms, or can still,
    cut at the limit): an answer that was not had (cut off, refused, failed) shows nothing either.
    """
    if hostile.outcome != "answered":
        return f"no answer came to show it was applied ({hostile.describe()})"
    text = hostile.content or ""
    if not text.strip():
        return f"the answer is empty (finish_reason {hostile.finish_reason!r})"
    why = conforms(schema, text, hostile.finish_reason)
    return f"{why}: {text[:80]!r}" if why else ""


def ttft_s(trace: RequestTrace) -> float | None:
    """Seconds from when the schedule meant to send it to its first output; None: it never gave
    any.
    """
    if not trace.ok or not trace.event_ns:
        return None
    return (trace.event_ns[0] - _start(trace)) / 1e9


def _start(trace: RequestTrace) -> int:
    return trace.intended_ns or trace.sent_ns


def _settled(trace: RequestTrace) -> float:
    """When a light request stopped waiting: its first output, else its end (never: infinity)."""
    if ttft_s(trace) is not None:
        return trace.event_ns[0]
    return trace.end_ns if trace.end_ns is not None else float("inf")


@dataclass(slots=True)
class Stall:
    """One hostile kind's measurement; ``verdict`` is passed, failed, not_exercised (the server
    refused the hostile request before any light request met it: nothing ran to stall them) or
    inconclusive; ``why`` says on what."""

    kind: str
    hostile: str = ""
    outcome: str = ""  # the hostile request's (Hostile.outcome)
    hostile_s: float | None = None
    before: list[float] = field(default_factory=list)
    # the light requests in flight while it ran
    during: list[float | None] = field(default_factory=list)
    after: list[float | None] = field(default_factory=list)
    stall_s: float | None = None
    # light requests already streaming when it began: judged by their gaps and whole answers
    streaming: int = 0
    gap_stall_s: float | None = None
    e2e_stall_s: float | None = None
    recovered: bool | None = None
    verdict: str = Outcome.INCONCLUSIVE
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 3)

        return {
            "hostile": self.hostile,
            "hostile_outcome": self.outcome,
            "hostile_s": r(self.hostile_s),
            "before_median_s": r(statistics.median(self.before)) if self.before else None,
            "overlapping": len(self.during),
            "during_s": [r(x) for x in self.during],
            "after_median_s": r(_median(self.after)),
            "stall_s": r(self.stall_s),
            "streaming": self.streaming,
            "gap_stall_s": r(self.gap_stall_s),
            "e2e_stall_s": r(self.e2e_stall_s),
            "recovered": self.recovered,
            "verdict": self.verdict,
            "why": self.why,
        }


def worst_gap_s(trace: RequestTrace) -> float:
    """The longest wait between two outputs of a light request that answered (0 for an answer in one
    output); infinity for one that never finished (cut off, dropped, cancelled at the end of the
    load)."""
    if not trace.ok:
        return float("inf")
    return max((b - a for a, b in zip(trace.event_ns, trace.event_ns[1:])), default=0) / 1e9


def e2e_s(trace: RequestTrace) -> float:
    """Seconds from when the schedule meant to send it to its end; infinity for one that never
    finished.
    """
    return (
        (trace.end_ns - _start(trace)) / 1e9
        if trace.ok and trace.end_ns is not None
        else float("inf")
    )


def _median(values: list[float | None]) -> float | None:
    ok = [v for v in values if v is not None]
    return statistics.median(ok) if ok else None


def _unanswered(traces: list[RequestTrace]) -> str:
    """What the light requests that got no first output got instead: ``HTTP 503 x2,
    ReadTimeout``.
    """
    said = Counter(
        f"HTTP {t.status}" if t.status and t.status != 200 else t.error or "no output"
        for t in traces
    )
    return ", ".join(f"{what} x{n}" if n > 1 else what for what, n in said.items())


def judge(kind: str, traces: list[RequestTrace], hostile: Hostile, limits: StallLimits) -> Stall:
    """Split the light requests into those settled before the hostile one started, those in flight
    while it ran and those sent after it ended; judge the answers, the stall and the recovery.

    Every request here is valid, so a 5xx to any of them (or a hostile one dropped, or answered with
    no completion) fails; a refused hostile request that no light request met ran nothing: not
    exercised, never a pass. A pass names what it judged: how long the hostile request ran, how many
    light requests overlapped it, their worst latency."""
    out = Stall(kind, hostile.describe(), hostile.outcome, hostile.seconds)
    light = [t for t in traces if t.phase == "measured"]
    errors = [t for t in light if t.status is not None and t.status >= 500]
    hostile_failed = hostile.outcome == REQUEST_FAILED
    if errors or hostile_failed:
        problems = []
        if hostile_failed:
            problems.append(f"the hostile request, a valid one, {hostile.describe()}")
        if errors:
            problems.append(
                f"{len(errors)} of {len(light)} light requests got a server error "
                f"({_unanswered(errors)})"
            )
        out.verdict, out.why = Outcome.FAILED, "; ".join(problems)
        return out
    settled_before = [
        t for t in light if _start(t) < hostile.start_ns and _settled(t) < hostile.start_ns
    ]
    out.before = [x for t in settled_before if (x := ttft_s(t)) is not None]
    failed_before = len(settled_before) - len(out.before)
    if len(out.before) < 2 or failed_before:
        out.why = (
            f"the light load did not run before the hostile request ({len(out.before)} answered, "
            f"{failed_before}"
            " failed)"
        )
        return out
    base = statistics.median(out.before)
    if base > limits.stall_limit_s:
        out.why = (
            f"the light load alone queues on this server (median TTFT {base * 1000:.0f} ms before "
            "the hostile request,"
            f" over the {limits.stall_limit_s * 1000:.0f} ms limit): lower its rate "
            "(--security-stall) to measure a"
            " stall"
        )
        return out
    overlapping = [t for t in light if t not in settled_before and _start(t) <= hostile.end_ns]
    later = [t for t in light if _start(t) > hostile.end_ns]
    out.during = [ttft_s(t) for t in overlapping]
    if not overlapping:
        if hostile.outcome == "refused":
            out.verdict = Outcome.NOT_EXERCISED
            out.why = (
                "the server refused the hostile request before any light request met it "
                f"({hostile.describe()}): it"
                " never ran, so it stalled nothing"
            )
            return out
        if hostile.seconds >= limits.stall_limit_s or not later:
            out.why = (
                "no light request was in flight while the hostile request ran "
                f"({hostile.describe()}): raise the"
                " light load's rate (--security-stall) to measure a stall"
            )
            return out
    limit = limits.stall_limit_s * 1000
    if overlapping:
        affected, met = overlapping, f"{len(overlapping)} light requests in flight while it ran"
    # answered sooner than the limit: it could hold none back past it; the first after shows what it
    # left
    else:
        affected = later[:1]
        met = (
            f"no light request in flight while it ran (it took under the {limit:.0f} ms limit); "
            "the first after it"
        )
    worst = [ttft_s(t) for t in affected]
    stall = out.stall_s = (
        float("inf") if None in worst else max(0.0, max(x for x in worst if x is not None) - base)
    )
    # the light requests already streaming when it began, and those that met it, judged after their
    # first output too: against the requests that had ended before it began (0 where none had)
    streaming = [t for t in settled_before if t.end_ns is None or t.end_ns >= hostile.start_ns]
    ended = [t for t in settled_before if t not in streaming and t.ok]
    # those with no first output: TTFT's
    judged = [t for t in (*streaming, *affected) if ttft_s(t) is not None]
    out.streaming = len(streaming)
    base_gap = statistics.median(map(worst_gap_s, ended)) if ended else 0.0
    base_e2e = statistics.median(map(e2e_s, ended)) if ended else 0.0
    gap = out.gap_stall_s = max(0.0, max(map(worst_gap_s, judged), default=0.0) - base_gap)
    whole = out.e2e_stall_s = max(0.0, max(map(e2e_s, judged), default=0.0) - base_e2e)
    out.after = [ttft_s(t) for t in (later if overlapping else later[1:])]
    after = _median(out.after)
    out.recovered = after is not None and after <= max(
        limits.recovery_factor * base, base + limits.recovery_slack_s
    )
    unanswered = [t for t in affected if ttft_s(t) is None]
    figures = (
        f"hostile request {hostile.describe()}; {met}: worst TTFT {_ms(stall + base)}"
        + (
            f" ({len(unanswered)} got no first output: {_unanswered(unanswered)})"
            if unanswered
            else ""
        )
        + f" against a median of {base * 1000:.0f} ms before; {len(judged)} light requests "
        "streaming while it ran"
        f" ({len(streaming)} already when it began): worst gap between tokens "
        f"{_ms(gap + base_gap)} against"
        f" {base_gap * 1000:.0f} ms, worst whole answer {_ms(whole + base_e2e)} against "
        f"{base_e2e * 1000:.0f} ms"
        f" (medians of the {len(ended)} that ended before it); after it {_ms(after)} (median of "
        f"{len(out.after)})"
    )
    problems = []
    if stall > limits.stall_limit_s:
        problems.append(f"stalled the others by {_ms(stall)} (limit {limit:.0f} ms)")
    if gap > limits.gap_limit_s:
        problems.append(
            f"held a streaming light request's next token back by {_ms(gap)} (limit "
            f"{limits.gap_limit_s * 1000:.0f} ms)"
        )
    if whole > limits.e2e_limit_s:
        problems.append(
            f"made a light request's whole answer {_ms(whole)} longer (limit "
            f"{limits.e2e_limit_s * 1000:.0f} ms)"
        )
    if not out.recovered:
        problems.append("the server did not come back to its earlier latency")
    out.verdict = Outcome.FAILED if problems else Outcome.PASSED
    out.why = "; ".join([*problems, figures])
    if out.verdict == Outcome.PASSED and hostile.unapplied:  # no answer shows it ran: no pass
        out.verdict = Outcome.NOT_EXERCISED
        out.why = (
            f"the answer does not conform to the hostile request's schema ({hostile.unapplied}): "
            "the server took the"
            f" schema and it applied none, so the costly grammar never ran; {figures}"
        )
    return out


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "none answered"
    return "no answer" if seconds == float("inf") else f"{seconds * 1000:.0f} ms"


def measure(
    endpoint: Endpoint,
    kind: str,
    body: dict[str, Any],
    limits: StallLimits,
    conforms: Conformance | None = None,
) -> Stall:
    """Run the light load, send ``body`` into it, and judge (every request bounded by the endpoint's
    timeout).

    One light request alone comes first: a server that gives it no first output cannot show a stall,
    and the measurement would only spend its whole window finding that out. A kind whose cost is a
    schema (``SCHEMAS``) passes only where ``conforms`` confirms its answer follows the schema;
    without a judge it cannot pass."""
    with endpoint.http() as sync:
        calibration = calibrate(sync, "chat", endpoint.model)
    workload = Workload(
        api="chat",
        input_tokens=limits.input_tokens,
        output_tokens=limits.output_tokens,
        ignore_eos=False,
    )
    alone = run_load(
        endpoint,
        LoadSpec(requests=1, warmup_requests=0, cooldown="cancel"),
        workload,
        calibration=calibration,
    ).traces
    if not alone or ttft_s(alone[0]) is None:
        said = f"HTTP {alone[0].status}, {alone[0].error or 'no output'}" if alone else "not sent"
        return Stall(
            kind,
            "not sent",
            why=f"a light request alone got no first output ({said}): no stall can be measured",
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
        target=lambda: runs.append(run_load(endpoint, spec, workload, calibration=calibration)),
        daemon=True,
    )
    loader.start()
    # the warm-up request, then before_s of measured ones
    time.sleep(limits.before_s + 1.0 / limits.rate)
    _send_hostile(endpoint, body, hostile, limits.hostile_timeout_s)
    if kind in SCHEMAS:
        hostile.unapplied = (
            schema_unapplied(hostile, SCHEMAS[kind](), conforms)
            if conforms is not None
            else "no judge of its schema was given"
        )
    loader.join(limits.before_s + limits.hostile_timeout_s + limits.after_s + endpoint.timeout + 60)
    if not runs:
        return Stall(kind, hostile.describe(), why="the light load did not finish")
    return judge(kind, runs[0].traces, hostile, limits)

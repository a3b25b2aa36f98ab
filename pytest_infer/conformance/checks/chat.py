"""Chat completions, non-streamed: fields, n, finish_reason, token limits, usage, stop, seed,
ranges, logprobs, JSON.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import jsonschema

from ...outcomes import NotExercised
from ..context import CheckContext, Exchange, object_or_empty
from ..failures import Inconclusive, trim
from ..registry import check
from .models import judge_model_names

SPEC = "openai-openapi CreateChatCompletionResponse"
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call")
LIMIT = 8
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 12}},
    "required": ["answer"],
    "additionalProperties": False,
}


def greedy(ctx: CheckContext, **params: Any) -> tuple[Exchange, dict[str, Any]]:
    """A temperature-0 answer: what a deterministic client request looks like."""
    ex = ctx.chat(**{"max_tokens": LIMIT, "temperature": 0, **params})
    return ex, ctx.expect_json_object(ex, "a chat completion")


def choices_of(data: dict[str, Any]) -> list[Any]:
    choices = data.get("choices")
    return choices if isinstance(choices, list) else []


def choice_of(data: dict[str, Any], index: int = 0) -> dict[str, Any]:
    choices = choices_of(data)
    return object_or_empty(choices[index]) if len(choices) > index else {}


def content_of(data: dict[str, Any], index: int = 0) -> Any:
    return object_or_empty(choice_of(data, index).get("message")).get("content")


REASONING = ("reasoning", "reasoning_content")  # vLLM renamed reasoning_content to reasoning


def generated_of(data: dict[str, Any], index: int = 0) -> str | None:
    """All a choice generated, reasoning and content: a reasoning model cut at max_tokens answers
    content null, and two such answers agree only if their reasoning does. None where neither is a
    string."""
    message = object_or_empty(choice_of(data, index).get("message"))
    reasoning = next((message[k] for k in REASONING if isinstance(message.get(k), str)), None)
    texts = [t for t in (reasoning, message.get("content")) if isinstance(t, str)]
    return "".join(texts) if texts else None


def shown(value: Any, limit: int = 60) -> str:
    """A value short enough for a line of evidence."""
    return (
        trim(value, limit)
        if isinstance(value, str)
        else trim(json.dumps(value, default=repr), limit)
    )


@check(
    "chat.fields",
    "a chat completion has id, object, created, model, choices, usage",
    reference=SPEC,
)
def fields(ctx: CheckContext) -> str:
    """Clients log ``id``, key caches on it, and read ``usage`` for billing."""
    ex, data = greedy(ctx)
    problems = []
    if not isinstance(data.get("id"), str) or not data.get("id"):
        problems.append(f"id is {data.get('id')!r}, not a non-empty string")
    if data.get("object") != "chat.completion":
        problems.append(f"object is {data.get('object')!r}")
    if not isinstance(data.get("created"), int) or isinstance(data.get("created"), bool):
        problems.append(f"created is {data.get('created')!r}, not an integer")
    if not isinstance(data.get("model"), str) or not data.get("model"):
        problems.append(f"model is {data.get('model')!r}")
    if not isinstance(data.get("choices"), list) or not data["choices"]:
        problems.append("choices is not a non-empty list")
    elif not isinstance(content_of(data), str):
        problems.append("choices[0].message.content is not a string")
    elif object_or_empty(choice_of(data).get("message")).get("role") != "assistant":
        problems.append("choices[0].message.role is not 'assistant'")
    if not isinstance(data.get("usage"), dict):
        problems.append("usage is missing")
    ctx.expect(
        not problems,
        "id, object='chat.completion', integer created, model, choices[].message, usage",
        f"{'; '.join(problems)}: {ex.text}",
        ex,
    )
    return (
        f"id {shown(data['id'], 30)}, object 'chat.completion', created, model, "
        f"{len(data['choices'])} choice(s),"
        f" content {shown(content_of(data))}, usage"
    )


@check(
    "chat.model",
    "the answer and every chunk of its stream name the model asked for (or an alias /v1/models "
    "lists): model is"
    " required in each",
    reference=f"{SPEC} (model); CreateChatCompletionStreamResponse (model)",
)
def model(ctx: CheckContext) -> str:
    """Clients, proxies and their logs attribute an answer by ``model``: another name there bills
    the wrong model.
    """
    ex, data = greedy(ctx)
    stream = ctx.chat_stream(max_tokens=LIMIT, temperature=0)
    chunks = ctx.expect_stream(stream, "a streamed chat")
    return judge_model_names(
        ctx, "chat", (ex, data), (stream, [c.get("model") for c in chunks]), required=True
    )


@check(
    "chat.n",
    "n=2 gives two choices with index 0 and 1",
    reference=f"{SPEC} (n); LMDeploy PR #4841",
    needs=("n",),
)
def n_choices(ctx: CheckContext) -> str:
    """Best-of-n sampling in clients indexes ``choices`` by ``n``."""
    ex = ctx.offered("n", ctx.chat(max_tokens=LIMIT, temperature=1.0, n=2, seed=7))
    data = ctx.expect_json_object(ex, "n=2")
    indices = [object_or_empty(c).get("index") for c in choices_of(data)]
    ctx.expect(
        indices == [0, 1],
        "2 choices with index [0, 1]",
        f"{len(indices)} choice(s) with index {indices}",
        ex,
    )
    return "n=2: 2 choices with index [0, 1]"


@check(
    "chat.finish-reason",
    "finish_reason is one of the documented values",
    reference=f"{SPEC} (finish_reason); TGI PR #2344",
)
def finish_reason(ctx: CheckContext) -> str:
    """Clients branch on ``finish_reason``; an unknown value falls through every branch."""
    ex, data = greedy(ctx)
    reasons = [object_or_empty(c).get("finish_reason") for c in choices_of(data)]
    ctx.expect(
        reasons and all(r in FINISH_REASONS for r in reasons),
        f"finish_reason in {FINISH_REASONS}",
        reasons,
        ex,
    )
    return f"finish_reason {reasons} of {len(reasons)} choice(s)"


def _limit_problems(data: dict[str, Any], limit: int) -> list[str]:
    choice = choice_of(data)
    used = object_or_empty(data.get("usage")).get("completion_tokens")
    problems = []
    if not isinstance(used, int):
        return [f"usage.completion_tokens is {used!r}"]
    if used > limit:
        problems.append(f"completion_tokens {used} > the limit {limit}")
    if used == limit and choice.get("finish_reason") != "length":
        problems.append(
            f"the limit was reached but finish_reason is {choice.get('finish_reason')!r}"
        )
    if choice.get("finish_reason") == "length" and used < limit:
        problems.append(f"finish_reason 'length' after {used} of {limit} tokens")
    return problems


def limit_reached(data: dict[str, Any], limit: int, ex: Exchange) -> None:
    """A real model may end its answer by itself before the limit: then no limit was hit, and what a
    server says when one is hit was not judged."""
    used = object_or_empty(data.get("usage")).get("completion_tokens")
    if isinstance(used, int) and used < limit and choice_of(data).get("finish_reason") != "length":
        raise Inconclusive(
            f"the model ended by itself after {used} of {limit} tokens, so the limit was never "
            f"reached: {ex.curl}"
        )


@check(
    "chat.max-tokens",
    "max_tokens caps the completion and hitting it gives finish_reason 'length'",
    reference=f"{SPEC} (max_tokens)",
)
def max_tokens(ctx: CheckContext) -> str:
    """A client that sees 'stop' for a cut answer shows a truncated answer as complete."""
    ex, data = greedy(ctx, max_tokens=5)
    problems = _limit_problems(data, 5)
    ctx.expect(
        not problems,
        "completion_tokens <= 5 and finish_reason 'length' when 5 are used",
        f"{'; '.join(problems)}: {ex.text}",
        ex,
    )
    limit_reached(data, 5, ex)
    return (
        f"max_tokens=5: completion_tokens {data['usage']['completion_tokens']}, finish_reason"
        f" {choice_of(data).get('finish_reason')!r}"
    )


@check(
    "chat.max-completion-tokens",
    "max_completion_tokens behaves exactly as max_tokens",
    reference="openai-openapi (max_completion_tokens replaces the deprecated max_tokens); "
    "vllm#19861; TGI#2925",
)
def max_completion_tokens(ctx: CheckContext) -> str:
    """Current SDK examples and o-series clients send only ``max_completion_tokens``."""
    _old_ex, old = greedy(ctx, max_tokens=5)
    body = ctx.chat_body(temperature=0, max_completion_tokens=5)
    ex = ctx.post("/v1/chat/completions", body)
    new = ctx.expect_json_object(ex, "max_completion_tokens=5")
    problems = _limit_problems(new, 5)
    ctx.expect(
        not problems,
        "completion_tokens <= 5 and finish_reason 'length'",
        f"{'; '.join(problems)}: {ex.text}",
        ex,
    )
    limit_reached(new, 5, ex)
    before = generated_of(old)
    ctx.agree(
        before,
        generated_of(new),
        f"the same text (reasoning and content) as max_tokens=5 at temperature 0: {before!r}",
        ex,
    )
    return (
        f"max_completion_tokens=5: completion_tokens {new['usage']['completion_tokens']}, the text "
        "of max_tokens=5:"
        f" {shown(before)}"
    )


@check(
    "chat.usage",
    "usage.total_tokens == prompt_tokens + completion_tokens",
    reference="openai-openapi CompletionUsage",
)
def usage(ctx: CheckContext) -> str:
    """Billing and rate limiting add these numbers up."""
    ex, data = greedy(ctx)
    u = data.get("usage") or {}
    values = (
        [u.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")]
        if isinstance(u, dict)
        else []
    )
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    ctx.expect(
        len(ints) == 3 and ints[0] > 0 and ints[0] + ints[1] == ints[2],
        "integer prompt_tokens > 0, completion_tokens, and total_tokens = their sum",
        u,
        ex,
    )
    return f"usage {ints[0]} + {ints[1]} = {ints[2]} tokens"


def token_texts(ctx: CheckContext, text_params: dict[str, Any]) -> tuple[str, list[str] | None]:
    """The greedy text, and its tokens where the server gives logprobs (to place a stop across a
    boundary).
    """
    ex = ctx.chat(**{"max_tokens": 24, "temperature": 0, "logprobs": True, **text_params})
    if not ex.ok:
        ex = ctx.chat(**{"max_tokens": 24, "temperature": 0, **text_params})
    data = ctx.expect_json_object(ex, "a greedy completion")
    entries = object_or_empty(choice_of(data).get("logprobs")).get("content") or None
    tokens = (
        [object_or_empty(e).get("token", "") for e in entries]
        if isinstance(entries, list)
        else None
    )
    tokens = (
        tokens if tokens and all(isinstance(t, str) for t in tokens) else None
    )  # malformed logprobs: place the stop by the text
    return content_of(data) or "", tokens


def stop_across_tokens(text: str, tokens: list[str] | None) -> tuple[str, int] | None:
    """A stop string that spans a token boundary in the middle of ``text``, and where it first
    occurs.
    """
    if tokens and "".join(tokens) == text:
        pos = 0
        for i, tok in enumerate(tokens[:-1]):
            pos += len(tok)
            if pos >= 4 and tok and tokens[i + 1]:
                stop = tok[-2:] + tokens[i + 1][:2]
                if stop.strip() and len(stop) >= 2:
                    return stop, text.find(stop)
    if len(text) >= 12:
        stop = text[6:10]
        return (stop, text.find(stop)) if stop.strip() else None
    return None


def stop_case(ctx: CheckContext) -> tuple[str, str, str]:
    """(greedy text, stop string, expected text) for the stop checks."""
    text, tokens = token_texts(ctx, {})
    found = stop_across_tokens(text, tokens)
    if found is None:
        raise Inconclusive(f"the greedy answer {text!r} is too short to place a stop string in")
    stop, at = found
    return text, stop, text[:at]


@check(
    "chat.stop",
    "a stop string spanning token boundaries ends the text before it, with finish_reason 'stop'",
    reference=f"{SPEC} (stop); vllm#3574, vllm#3672, TGI#1724",
)
def stop(ctx: CheckContext) -> str:
    """Agents use stop strings as delimiters; a leaked delimiter breaks their parser."""
    text, stop_string, expected = stop_case(ctx)
    ex = ctx.chat(max_tokens=24, temperature=0, stop=[stop_string])
    data = ctx.expect_json_object(ex, f"stop={stop_string!r}")
    got, reason = content_of(data), choice_of(data).get("finish_reason")
    ctx.expect(
        got == expected and reason == "stop",
        f"{expected!r} with finish_reason 'stop' (the greedy text {text!r} cut before "
        f"{stop_string!r})",
        {"content": got, "finish_reason": reason},
        ex,
    )
    return (
        f"stop {stop_string!r} cut the greedy text {shown(text)} to {shown(got)}, "
        "finish_reason 'stop'"
    )


@check(
    "chat.seed",
    "the same seed at the same temperature gives the same output",
    reference=f"{SPEC} (seed)",
    needs=("seed",),
)
def seed(ctx: CheckContext) -> str:
    """Evaluation pipelines rely on seeds to reproduce a sample."""
    first = ctx.offered("seed", ctx.chat(max_tokens=12, temperature=1.0, seed=4242))
    second = ctx.chat(max_tokens=12, temperature=1.0, seed=4242)
    a, b = (
        generated_of(ctx.expect_json_object(first, "seed=4242")),
        generated_of(ctx.expect_json_object(second, "seed=4242")),
    )
    ctx.agree(a, b, f"the same text twice for seed 4242: {a!r}", second)
    # a real model sure of its next words writes them under any seed: then two equal answers show
    # nothing of the seed
    other = ctx.chat(max_tokens=12, temperature=1.0, seed=4243)
    c = generated_of(ctx.expect_json_object(other, "seed=4243"))
    if c == a:
        raise Inconclusive(
            f"seed 4243 gave the same text as seed 4242 ({a!r}): sampling at temperature 1 showed "
            "no effect of the"
            f" seed, so their agreement judges nothing: {other.curl}"
        )
    return (
        "2 answers for seed 4242 at temperature 1, reasoning and content identical: "
        f"{shown(a)}; seed 4243: {shown(c)}"
    )


RANGES: dict[str, dict[str, Any]] = {
    "temperature=2.5": {"temperature": 2.5},
    "temperature=-1": {"temperature": -1},
    "top_p=1.5": {"top_p": 1.5},
    "n=0": {"n": 0},
    "top_logprobs=21": {"logprobs": True, "top_logprobs": 21},
    "seed=2**64": {"seed": 2**64},
}


@check(
    "chat.parameter-ranges",
    "out-of-range temperature, top_p, n, top_logprobs, seed get 400",
    reference=f"{SPEC} (parameter bounds)",
)
def parameter_ranges(ctx: CheckContext) -> str:
    """A silently clamped parameter is a client bug nobody notices."""
    ctx.control(ctx.chat(max_tokens=2), "a chat of 2 tokens with every parameter in range")
    wrong = []
    statuses = []
    last = None
    for name, params in RANGES.items():
        ex = ctx.chat(max_tokens=2, **params)
        statuses.append(ex.status)
        if ex.status not in (400, 422):
            wrong.append(f"{name} -> HTTP {ex.status}: {ex.text[:120]}")
            last = last or ex
    ctx.expect(
        not wrong, f"HTTP 400 (or 422) for each of {', '.join(RANGES)}", "; ".join(wrong), last
    )
    return f"HTTP {statuses} for {', '.join(RANGES)}; HTTP 200 for the same chat in range"


# logprobs computed in low precision: a tie with the top alternative is still the top
GREEDY_SLACK = 1e-4


def logprob_problems(entries: Any, content: str, k: int) -> list[str]:
    """What is wrong with the logprobs of a temperature-0 answer: each entry's shape, its bytes the
    UTF-8 of its token, its top_logprobs most likely first and led by the token picked (greedy picks
    the most likely), and the tokens joining to ``content``."""
    if not isinstance(entries, list) or not entries:
        return [f"logprobs.content is {entries!r}, not a list of token entries"]
    problems = []
    for i, e in enumerate(entries):
        if (
            not isinstance(e, dict)
            or not isinstance(e.get("token"), str)
            or not isinstance(e.get("logprob"), (int, float))
        ):
            problems.append(f"entry {i} lacks token/logprob: {e!r}")
            break
        if e["logprob"] > 0 or math.isnan(e["logprob"]):
            problems.append(f"entry {i} logprob {e['logprob']} > 0")
        if "bytes" not in e or not (e["bytes"] is None or isinstance(e["bytes"], list)):
            problems.append(f"entry {i} bytes is {e.get('bytes', 'missing')!r}")
        elif (
            isinstance(e["bytes"], list)
            and "\ufffd" not in e["token"]
            and e["bytes"] != list(e["token"].encode())
        ):
            problems.append(
                f"entry {i} bytes {e['bytes']} are not the UTF-8 of its token {e['token']!r}"
            )
        top = e.get("top_logprobs")
        if not isinstance(top, list) or len(top) != k:
            problems.append(
                f"entry {i} has {len(top) if isinstance(top, list) else top!r} top_logprobs, not "
                f"{k}"
            )
        elif any(
            not isinstance(t, dict)
            or not isinstance(t.get("logprob"), (int, float))
            or t["logprob"] > 0
            for t in top
        ):
            problems.append(f"entry {i} top_logprobs malformed: {top!r}")
        elif (ranked := [t["logprob"] for t in top]) != sorted(ranked, reverse=True):
            problems.append(f"entry {i} top_logprobs are not the most likely first: {ranked}")
        elif top and e["logprob"] < top[0]["logprob"] - GREEDY_SLACK:
            problems.append(
                f"entry {i} token {e['token']!r} (logprob {e['logprob']}) is not the most likely "
                "at temperature 0:"
                f" {top[0]!r}"
            )
        if problems:
            break
    if (
        not problems and (joined := "".join(e["token"] for e in entries)) != content
    ):  # every entry checked: each token a string
        problems.append(f"tokens join to {joined!r}, not the content {content!r}")
    return problems


def logprobs_content(data: dict[str, Any]) -> Any:
    """``choices[0].logprobs.content``, or the logprobs value itself where it is not an object (to
    show it).
    """
    logprobs = choice_of(data).get("logprobs")
    return logprobs.get("content") if isinstance(logprobs, dict) else logprobs


@check(
    "chat.logprobs",
    "logprobs have the chat shape, each <= 0, k top_logprobs led by the greedy token, tokens "
    "joining to the content",
    reference="openai-openapi ChatCompletionTokenLogprob; vllm#3179, vllm#4795",
    needs=("logprobs",),
)
def logprobs(ctx: CheckContext) -> str:
    """Confidence scoring and classification clients read ``logprobs.content``."""
    ctx.offered("logprobs", ctx.chat(max_tokens=2, logprobs=True, top_logprobs=3))
    ex, data = greedy(ctx, logprobs=True, top_logprobs=3)
    problems = logprob_problems(logprobs_content(data), content_of(data) or "", 3)
    ctx.expect(
        not problems,
        "logprobs.content: [{token, logprob <= 0, bytes, top_logprobs (3)}] joining to the content",
        f"{'; '.join(problems)}",
        ex,
    )
    return (
        f"{len(logprobs_content(data))} token entries, each with logprob <= 0, bytes and 3 "
        "top_logprobs, joining to"
        f" {shown(content_of(data))}"
    )


@check(
    "chat.logprobs-without-top",
    "logprobs=true works without top_logprobs (then each top_logprobs is empty)",
    reference="openai-openapi (top_logprobs is optional); vllm#4795",
    needs=("logprobs",),
)
def logprobs_without_top(ctx: CheckContext) -> str:
    """The SDK sends ``logprobs=True`` alone; requiring ``top_logprobs`` breaks it."""
    ctx.offered("logprobs", ctx.chat(max_tokens=2, logprobs=True))
    ex, data = greedy(ctx, logprobs=True)
    problems = logprob_problems(logprobs_content(data), content_of(data) or "", 0)
    ctx.expect(not problems, "logprobs.content with empty top_logprobs", "; ".join(problems), ex)
    return (
        f"{len(logprobs_content(data))} token entries with empty top_logprobs, joining to "
        f"{shown(content_of(data))}"
    )


# 4-byte characters, several tokens each in a real vocabulary; a real model writes them back
MULTIBYTE = [{"role": "user", "content": "Repeat exactly: 𠀋𠀋 𪚥𪚥 𠀋𠀋 𪚥𪚥"}]


def _incomplete_utf8(tail: bytes) -> bool:
    """``tail`` is the start of one UTF-8 character cut off at the limit (a text drops it, its
    tokens' bytes not).
    """
    try:
        tail.decode()
    except UnicodeDecodeError:
        return 0 < len(tail) < 4
    return not tail


@check(
    "chat.logprobs-multibyte",
    "on characters of several tokens, logprobs have one entry per billed token and their bytes "
    "join to the content",
    reference="openai-openapi ChatCompletionTokenLogprob (bytes: characters represented by "
    "multiple tokens)",
    needs=("logprobs",),
)
def logprobs_multibyte(ctx: CheckContext) -> str:
    """Perplexity and scoring clients sum every token's logprob and rebuild text from ``bytes``; an
    entry per character instead of per token drops the other tokens' logprobs. ASCII answers never
    show it."""
    ctx.offered("logprobs", ctx.chat(max_tokens=2, logprobs=True))
    ex, data = greedy(ctx, messages=MULTIBYTE, max_tokens=12, logprobs=True)
    content = content_of(data) or ""
    wide = ctx.nonempty(
        sorted({ch for ch in content if ord(ch) > 0x7F}), "non-ASCII character in the answer", ex
    )
    entries = logprobs_content(data)
    ctx.expect(
        isinstance(entries, list) and all(isinstance(e, dict) for e in entries),
        "logprobs.content: a list of token entries",
        entries,
        ex,
    )
    billed = object_or_empty(data.get("usage")).get("completion_tokens")
    ctx.expect(
        len(entries) == billed,
        f"one logprobs entry per generated token ({billed}, usage.completion_tokens)",
        f"{len(entries)} entries: {shown([e.get('token') for e in entries], 200)}",
        ex,
    )
    pieces = [e.get("bytes") for e in entries]
    ctx.expect(
        all(
            b is None
            or (isinstance(b, list) and all(isinstance(x, int) and 0 <= x < 256 for x in b))
            for b in pieces
        ),
        "each entry's bytes a list of integers 0-255, or null",
        shown(pieces, 200),
        ex,
    )
    known = sum(b is not None for b in pieces)
    if not known:
        raise Inconclusive(
            f"every logprobs entry has bytes: null ({len(entries)} entries): nothing shows whether "
            "their bytes join to"
            f" the content's UTF-8: {ex.curl}"
        )
    text = content.encode()
    ctx.expect(
        _bytes_join(pieces, text),
        f"the entries' bytes joining to the UTF-8 of the content {content!r}"
        + (
            f" (a null entry standing for any bytes: {len(pieces) - known} of {len(pieces)})"
            if known < len(pieces)
            else ""
        ),
        " + ".join(
            "null" if b is None else bytes(b).decode("utf-8", "backslashreplace") for b in pieces
        ),
        ex,
    )
    nulls = (
        f" ({known} of {len(pieces)} entries with bytes, the others null)"
        if known < len(pieces)
        else ""
    )
    return (
        f"{len(entries)} entries for {billed} tokens of {shown(content)} ({len(wide)} non-ASCII "
        "characters), their"
        f" bytes joining to its UTF-8{nulls}"
    )


def _bytes_join(pieces: list[Any], text: bytes) -> bool:
    """Do the entries' bytes join to ``text``, plus the start of one character cut off at the limit
    (a text drops it, its tokens' bytes not)? A null entry (no bytes representation, which the API
    allows) stands for any bytes, so one null entry judges nothing of the others less: they must
    still fall in order around it."""
    runs: list[bytes | None] = []  # the known bytes of consecutive entries, None for a null entry
    for piece in pieces:
        if piece is None:
            runs.append(None)
        elif runs and (last := runs[-1]) is not None:
            runs[-1] = last + bytes(piece)
        else:
            runs.append(bytes(piece))
    tail = runs[-1] if runs and runs[-1] is not None else b""
    for cut in range(min(3, len(tail)) + 1):
        if cut and not _incomplete_utf8(tail[-cut:]):
            continue
        kept = [*runs[:-1], tail[: len(tail) - cut]] if tail else runs
        pattern = b"".join(b"(?s:.*)" if run is None else re.escape(run) for run in kept)
        if re.fullmatch(pattern, text):
            return True
    return False


@check(
    "chat.logprobs-off",
    "logprobs=false gives logprobs: null",
    reference="openai-openapi (choices[].logprobs nullable)",
)
def logprobs_off(ctx: CheckContext) -> str:
    """Clients test ``choice.logprobs is None`` to know whether they asked for them."""
    ex, data = greedy(ctx, logprobs=False)
    answered = [c for c in choices_of(data) if isinstance(object_or_empty(c).get("message"), dict)]
    got = [
        c.get("logprobs") for c in ctx.nonempty(answered, "choice with a message in the answer", ex)
    ]
    ctx.expect(all(v is None for v in got), "logprobs null (or absent) in every choice", got, ex)
    return f"logprobs null in {len(got)} answered choice(s) of logprobs=false"


def not_json_start(data: dict[str, Any]) -> bool:
    """Constrained output begins with '{'; anything else is unconstrained, however long it ran."""
    return not str(content_of(data) or "").lstrip().startswith("{")


@check(
    "chat.json-object",
    "response_format json_object gives parseable JSON",
    reference="openai-openapi ResponseFormatJsonObject",
    needs=("response_format",),
)
def json_object(ctx: CheckContext) -> str:
    """JSON mode is a contract: the client calls ``json.loads`` on the content without a guard."""
    messages = [{"role": "user", "content": "Describe a cat as a JSON object."}]
    json_object = {"type": "json_object"}
    ex = ctx.seeded(
        lambda s: ctx.post(
            "/v1/chat/completions",
            ctx.chat_body(
                messages=messages,
                max_tokens=64,
                temperature=0.8,
                seed=s,
                response_format=json_object,
            ),
        ),
        "response_format",
        not_json_start,
    )
    data = ctx.expect_json_object(ex, "response_format json_object")
    text = content_of(data) or ""
    try:
        value = json.loads(text)
    except ValueError as exc:
        ctx.fail("content that json.loads accepts", f"{exc}: {text!r}", ex)
    ctx.expect(isinstance(value, dict), "a JSON object", text, ex)
    return f"json_object: content parses to an object with {len(value)} key(s): {shown(text)}"


@check(
    "chat.json-schema",
    "response_format json_schema gives output that validates against the schema",
    reference="openai-openapi ResponseFormatJsonSchema",
    needs=("response_format",),
)
def json_schema(ctx: CheckContext) -> str:
    """Structured outputs are parsed straight into typed objects
    (``client.beta.chat.completions.parse``).
    """
    rf = {
        "type": "json_schema",
        "json_schema": {"name": "person", "schema": SCHEMA, "strict": True},
    }
    messages = [{"role": "user", "content": "Give a person as JSON."}]
    ex = ctx.seeded(
        lambda s: ctx.post(
            "/v1/chat/completions",
            ctx.chat_body(
                messages=messages, max_tokens=64, temperature=0.8, seed=s, response_format=rf
            ),
        ),
        "response_format",
        not_json_start,
    )
    data = ctx.expect_json_object(ex, "response_format json_schema")
    text = content_of(data) or ""
    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except (ValueError, jsonschema.ValidationError) as exc:
        ctx.fail(
            f"content valid against {json.dumps(SCHEMA)}",
            f"{str(exc).splitlines()[0]}: {text!r}",
            ex,
        )
    return f"json_schema: content valid against the schema: {shown(text)}"


@check(
    "chat.json-schema-missing",
    "response_format json_schema without a schema gets 400, not 500",
    reference="openai-openapi ResponseFormatJsonSchema (json_schema.name required); LMDeploy#2771",
    needs=("response_format",),
)
def json_schema_missing(ctx: CheckContext) -> str:
    """A malformed request is the client's error and must say so."""
    whole = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}}
    ctx.control(
        ctx.chat(max_tokens=4, response_format=whole),
        "response_format json_schema with its schema",
        feature="response_format",
    )
    ex = ctx.chat(max_tokens=4, response_format={"type": "json_schema"})
    ctx.expect_client_error(ex, "response_format json_schema without json_schema")
    return f"HTTP {ex.status} for json_schema without a schema; HTTP 200 with one"


def _json_object(data: dict[str, Any]) -> bool:
    """A JSON object, or the start of one cut off at max_tokens."""
    text = content_of(data)
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return choice_of(data).get("finish_reason") == "length"


# field -> (request parameters, what the answer shows when the field was applied, given the greedy
# control answer)
REQUEST_FIELDS: dict[str, tuple[dict[str, Any], Any]] = {
    "max_completion_tokens": (
        {"max_completion_tokens": 2},
        lambda d, c: (
            _count(used := object_or_empty(d.get("usage")).get("completion_tokens", 99))
            and used <= 2
        ),
    ),
    # n > 1 needs sampling
    "n": ({"n": 2, "temperature": 1.0}, lambda d, c: len(d.get("choices") or []) == 2),
    "logprobs": (
        {"logprobs": True},
        lambda d, c: (choice_of(d).get("logprobs") or None) is not None,
    ),
    "response_format": ({"response_format": {"type": "json_object"}}, lambda d, c: _json_object(d)),
    "temperature": ({"temperature": 2.0}, lambda d, c: content_of(d) != content_of(c)),
    "top_p": ({"temperature": 2.0, "top_p": 1e-9}, lambda d, c: content_of(d) == content_of(c)),
    "frequency_penalty": ({"frequency_penalty": 2.0}, lambda d, c: content_of(d) != content_of(c)),
    "presence_penalty": ({"presence_penalty": 2.0}, lambda d, c: content_of(d) != content_of(c)),
}
# long enough for the greedy text to repeat a token, which the penalties then change
FIELD_TOKENS = 24


@check(
    "chat.request-fields",
    "each documented request field is applied or refused, never accepted and ignored",
    reference=f"{SPEC} (request body); openai-conformance.md (silently ignored parameters)",
    severity="warning",
)
def request_fields(ctx: CheckContext) -> str:
    """A field a server takes with 200 and does not apply is a setting the client believes in and
    never got; a new version that stops applying one breaks clients with no error anywhere."""
    _, control = greedy(ctx, max_tokens=FIELD_TOKENS)
    statuses: dict[str, str] = {}
    ignored = []
    last = None
    for name, (params, applied) in REQUEST_FIELDS.items():
        ex = ctx.chat(**{"max_tokens": FIELD_TOKENS, "temperature": 0, **params})
        if 400 <= ex.status < 500:
            statuses[name] = "refused"
            continue
        data = ex.data if ex.status == 200 else None
        statuses[name] = (
            "error"
            if not isinstance(data, dict)
            else "honoured"
            if applied(data, control)
            else "ignored"
        )
        if statuses[name] != "honoured":
            ignored.append(
                f"{json.dumps(params)} -> HTTP {ex.status}, {statuses[name]}: {ex.text[:160]}"
            )
            last = last or ex
    if ctx.request_fields is not None:
        ctx.request_fields("POST /v1/chat/completions", statuses)
    ctx.expect(
        not ignored,
        f"each of {', '.join(REQUEST_FIELDS)} applied (or refused with a 4xx)",
        "; ".join(ignored),
        last,
    )
    return "; ".join(f"{name} {status}" for name, status in statuses.items())


# about 540 tokens: whole cache blocks
CACHE_PROMPT = "The quick brown fox jumps over the lazy dog. " * 12


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@check(
    "chat.usage-details",
    "usage's prompt_tokens_details.cached_tokens (and completion_tokens_details.reasoning_tokens) "
    "are counts within the"
    " totals, and a repeated long prompt reports cached tokens",
    reference=f"{SPEC} (CompletionUsage: prompt_tokens_details, completion_tokens_details)",
    severity="warning",
)
def usage_details(ctx: CheckContext) -> str:
    """Cost dashboards bill cached tokens at a discount; a count outside the total, or none on an
    obvious cache hit, misprices every request."""
    answers = [
        greedy(ctx, messages=[{"role": "user", "content": CACHE_PROMPT}], max_tokens=4)
        for _ in range(2)
    ]
    usages = [object_or_empty(data.get("usage")) for _, data in answers]
    if all(
        u.get("prompt_tokens_details") is None and u.get("completion_tokens_details") is None
        for u in usages
    ):
        raise NotExercised(
            "the server reports no prompt_tokens_details or completion_tokens_details (vLLM:"
            " --enable-prompt-tokens-details)"
        )
    for (ex, _), usage in zip(answers, usages):
        prompt_details, completion_details = (
            usage.get("prompt_tokens_details"),
            usage.get("completion_tokens_details"),
        )
        if prompt_details is not None:
            cached = (
                prompt_details.get("cached_tokens")
                if isinstance(prompt_details, dict)
                else prompt_details
            )
            ctx.expect(
                _count(cached)
                and _count(usage.get("prompt_tokens"))
                and cached <= usage["prompt_tokens"],
                "cached_tokens: a count within prompt_tokens",
                usage,
                ex,
            )
        if completion_details is not None:
            reasoning = (
                completion_details.get("reasoning_tokens", 0)
                if isinstance(completion_details, dict)
                else completion_details
            )
            ctx.expect(
                _count(reasoning)
                and _count(usage.get("completion_tokens"))
                and reasoning <= usage["completion_tokens"],
                "reasoning_tokens: a count within completion_tokens",
                usage,
                ex,
            )
    repeat = usages[1].get("prompt_tokens_details")
    if isinstance(repeat, dict):
        ctx.expect(
            repeat["cached_tokens"] > 0,
            "cached_tokens > 0 for a ~540-token prompt sent a second time (prefix caching)",
            usages[1],
            answers[1][0],
        )
    details = [
        {
            k: u[k]
            for k in ("prompt_tokens_details", "completion_tokens_details")
            if u.get(k) is not None
        }
        for u in usages
    ]
    return (
        f"usage details of 2 answers to one long prompt, within their totals: {shown(details, 160)}"
    )

"""Legacy completions: fields, prompt lists x n, echo, integer logprobs, streamed deltas."""

from __future__ import annotations

from ..context import CheckContext
from ..registry import check
from .chat import shown
from .models import judge_model_names

SPEC = "openai-openapi CreateCompletionResponse"
PROMPT = "Once upon a time"


@check(
    "completions.fields",
    "a completion has id, object 'text_completion', created, choices[].text, usage",
    reference=SPEC,
    needs=("completions",),
)
def fields(ctx: CheckContext) -> str:
    """Evaluation harnesses (lm-eval) still drive servers through /v1/completions."""
    ex = ctx.offered("completions", ctx.completion(max_tokens=8, temperature=0))
    data = ctx.expect_json_object(ex, "a completion")
    problems = []
    if not isinstance(data.get("id"), str) or not data.get("id"):
        problems.append(f"id is {data.get('id')!r}")
    if data.get("object") != "text_completion":
        problems.append(f"object is {data.get('object')!r}")
    if not isinstance(data.get("created"), int):
        problems.append(f"created is {data.get('created')!r}")
    choices = data.get("choices")
    if (
        not isinstance(choices, list)
        or not choices
        or not isinstance(choices[0], dict)
        or not isinstance(choices[0].get("text"), str)
    ):
        problems.append("choices[0].text is not a string")
    usage = data.get("usage")
    u = usage if isinstance(usage, dict) else {}
    if (
        not all(
            isinstance(u.get(k), int)
            for k in ("prompt_tokens", "completion_tokens", "total_tokens")
        )
        or u["prompt_tokens"] + u["completion_tokens"] != u["total_tokens"]
    ):
        problems.append(f"usage {u} does not add up")
    ctx.expect(
        not problems,
        "id, object='text_completion', integer created, choices[].text, usage that adds up",
        f"{'; '.join(problems)}: {ex.text}",
        ex,
    )
    return (
        f"id, object 'text_completion', created, text {shown(data['choices'][0]['text'])}, usage "
        f"{u['prompt_tokens']} +"
        f" {u['completion_tokens']} = {u['total_tokens']}"
    )


@check(
    "completions.prompt-list-n",
    "a list of 2 prompts with n=2 gives 4 choices indexed 0..3",
    reference=f"{SPEC} (prompt: array; n)",
    needs=("completions", "prompt_list", "n"),
)
def prompt_list_n(ctx: CheckContext) -> str:
    """Batch scoring sends prompt lists and maps results back by ``index``."""
    ctx.offered("completions", ctx.completion(max_tokens=2))
    ctx.offered("prompt_list", ctx.completion(prompt=["The sky is", "The sea is"], max_tokens=2))
    ex = ctx.offered(
        "n",
        ctx.completion(
            prompt=["The sky is", "The sea is"], n=2, max_tokens=4, temperature=1.0, seed=3
        ),
    )
    data = ctx.expect_json_object(ex, "prompt list x n")
    indices = sorted(
        (c.get("index") if isinstance(c, dict) else c for c in data.get("choices") or []), key=str
    )
    ctx.expect(indices == [0, 1, 2, 3], "choices with index 0, 1, 2, 3", indices, ex)
    return "2 prompts x n=2: 4 choices with index 0, 1, 2, 3"


@check(
    "completions.echo",
    "echo=true returns the prompt followed by the completion",
    reference=f"{SPEC} (echo)",
    needs=("completions", "echo"),
)
def echo(ctx: CheckContext) -> str:
    """Perplexity scoring echoes the prompt to read its logprobs."""
    ctx.offered("completions", ctx.completion(max_tokens=2))
    ex = ctx.offered("echo", ctx.completion(echo=True, max_tokens=4, temperature=0))
    data = ctx.expect_json_object(ex, "echo=true")
    first = (data.get("choices") or [{}])[0]
    text = first.get("text") if isinstance(first, dict) else None
    ctx.expect(
        isinstance(text, str) and text.startswith(PROMPT) and len(text) > len(PROMPT),
        f"text starting with the prompt {PROMPT!r}, then more",
        text,
        ex,
    )
    return f"echo=true: the prompt, then {shown(str(text)[len(PROMPT) :])}"


@check(
    "completions.logprobs",
    "integer logprobs gives {tokens, token_logprobs, top_logprobs, text_offset} of equal length",
    reference="openai-openapi CreateCompletionResponse.choices[].logprobs",
    needs=("completions", "logprobs"),
)
def logprobs(ctx: CheckContext) -> str:
    """Scoring scripts zip these four lists; a length mismatch silently misaligns them."""
    ctx.offered("completions", ctx.completion(max_tokens=2))
    ex = ctx.offered("logprobs", ctx.completion(logprobs=2, max_tokens=6, temperature=0))
    data = ctx.expect_json_object(ex, "logprobs=2")
    choice = (data.get("choices") or [{}])[0]
    choice = choice if isinstance(choice, dict) else {}
    lp = choice.get("logprobs") or {}
    keys = ("tokens", "token_logprobs", "top_logprobs", "text_offset")
    ctx.expect(
        isinstance(lp, dict) and all(isinstance(lp.get(k), list) for k in keys),
        f"logprobs with list fields {keys}",
        lp,
        ex,
    )
    lengths = {k: len(lp[k]) for k in keys}
    ctx.expect(
        len(set(lengths.values())) == 1 and lengths["tokens"] > 0,
        "four lists of one (non-zero) length",
        lengths,
        ex,
    )
    bad = [
        v
        for v in lp["token_logprobs"]
        if v is not None and (not isinstance(v, (int, float)) or v > 0)
    ]
    ctx.expect(not bad, "token_logprobs <= 0", bad, ex)
    too_many = [
        t for t in lp["top_logprobs"] if t is not None and (not isinstance(t, dict) or len(t) > 3)
    ]
    ctx.expect(
        not too_many, "top_logprobs: dicts of at most logprobs+1 = 3 entries", too_many[:3], ex
    )
    offsets = lp["text_offset"]
    ctx.expect(
        all(isinstance(o, int) for o in offsets) and offsets == sorted(offsets),
        "non-decreasing text_offset",
        offsets,
        ex,
    )
    ctx.expect(
        all(isinstance(t, str) for t in lp["tokens"])
        and "".join(lp["tokens"]) == choice.get("text"),
        f"tokens joining to the text {choice.get('text')!r}",
        lp["tokens"],
        ex,
    )
    return (
        f"logprobs=2: 4 lists of {lengths['tokens']} entries, token_logprobs <= 0, offsets in "
        "order, tokens joining to"
        f" {shown(choice.get('text'))}"
    )


@check(
    "completions.stream",
    "a streamed completion sends text deltas equal to the non-streamed text, then [DONE]",
    reference=f"{SPEC} (stream)",
    needs=("completions",),
)
def stream(ctx: CheckContext) -> str:
    """Streaming clients append each ``text``; a cumulative text repeats the answer."""
    whole = ctx.offered("completions", ctx.completion(max_tokens=12, temperature=0))
    plain = ctx.expect_json_object(whole, "a completion")
    first = (plain.get("choices") or [{}])[0]
    expected = ctx.nonempty(
        first.get("text") if isinstance(first, dict) else None,
        "text in the non-streamed completion to compare",
        whole,
    )
    ex = ctx.stream(
        "/v1/completions",
        {"model": ctx.model, "prompt": PROMPT, "max_tokens": 12, "temperature": 0},
    )
    chunks = ctx.expect_stream(ex, "a streamed completion")
    objects = {c.get("object") for c in chunks}
    ctx.expect(
        objects == {"text_completion"},
        "object 'text_completion' in every chunk",
        sorted(map(str, objects)),
        ex,
    )
    text = "".join(
        (ch.get("text") or "") if isinstance(ch, dict) else str(ch)
        for c in chunks
        for ch in c.get("choices") or []
    )
    ctx.expect(text == expected, f"deltas joining to the non-streamed text {expected!r}", text, ex)
    ctx.expect_framing(ex, "a streamed completion")
    return (
        f"{len(chunks)} chunks of object 'text_completion' joining to the non-streamed text "
        f"{shown(expected)}, then"
        " [DONE]"
    )


@check(
    "completions.model",
    "the completion and every chunk of its stream name the model asked for (or an alias "
    "/v1/models lists)",
    reference=f"{SPEC} (model)",
    needs=("completions",),
)
def model(ctx: CheckContext) -> str:
    """Harnesses record the model each score came from by the answer's ``model``."""
    ex = ctx.offered("completions", ctx.completion(max_tokens=8, temperature=0))
    data = ctx.expect_json_object(ex, "a completion")
    stream = ctx.stream(
        "/v1/completions", {"model": ctx.model, "prompt": PROMPT, "max_tokens": 8, "temperature": 0}
    )
    chunks = ctx.expect_stream(stream, "a streamed completion")
    return judge_model_names(
        ctx, "completions", (ex, data), (stream, [c.get("model") for c in chunks])
    )

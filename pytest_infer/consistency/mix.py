"""Every request keeps its own parameters: one batch of requests of distinct settings, each also
sent alone.

The batch mixes two requests per setting (different seeds at temperature > 0, stop strings,
``max_tokens``, ``logit_bias`` on one only, logprobs on one only, ``n`` = 3 beside ``n`` = 1, two
JSON schemas, a named tool choice beside ``none``), all different from each other, so parameters
moved to the wrong request change some answer. Each request is sent alone twice first: the control.
A check that expects the batched answer to equal the alone one needs the alone answer to be
reproducible (else inconclusive), and a setting the server does not apply alone cannot be judged
under batching (not exercised).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jsonschema

from ..client.http import InferClient
from ..outcomes import Outcome
from .kit import Answer, send, send_together, tokenize

PROMPT = "Write a short story about a lighthouse keeper."
MAX_TOKENS = 12
SHORT = 3  # max_tokens of the short one of the two max_tokens requests
BIAS_TEXT = "Z"  # the text whose token logit_bias pushes to the top on one request
SCHEMAS = {
    "schema-a": {
        "type": "object",
        "properties": {"city": {"const": "Paris"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "schema-b": {
        "type": "object",
        "properties": {"count": {"const": 3}},
        "required": ["count"],
        "additionalProperties": False,
    },
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Returns the {what}.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
    for name, what in (("get_weather", "weather in a city"), ("get_time", "local time in a city"))
]
CHECKS = ("seeds", "stop", "max_tokens", "logit_bias", "logprobs", "n", "schemas", "tool_choice")


class Verdict(NamedTuple):
    """A check's outcome (passed, failed, inconclusive, not exercised or unsupported) and why."""

    outcome: Outcome
    message: str


def _chat(model: str, **params: Any) -> dict:
    return {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": MAX_TOKENS,
        **params,
    }


def requests(model: str, plain_text: str, bias_token: int | None) -> dict[str, dict]:
    """The batch, by name. The stop strings are cut from ``plain_text`` (the greedy answer alone),
    so both fire, at different places; the biased request exists only where the server tokenized
    ``BIAS_TEXT``."""
    cut = len(plain_text)
    stops = (plain_text[cut // 3 : cut // 3 + 2], plain_text[2 * cut // 3 : 2 * cut // 3 + 2])
    out = {
        "seed-a": _chat(model, temperature=1.0, seed=11),
        "seed-b": _chat(model, temperature=1.0, seed=22),
        "stop-a": _chat(model, temperature=0, stop=[stops[0]]),
        "stop-b": _chat(model, temperature=0, stop=[stops[1]]),
        "max-a": _chat(model, temperature=0, max_tokens=SHORT),
        "max-b": _chat(model, temperature=0, max_tokens=MAX_TOKENS - 1),
        "plain": _chat(model, temperature=0),
        "lp-on": _chat(
            model, temperature=0, max_tokens=MAX_TOKENS - 2, logprobs=True, top_logprobs=2
        ),
        "lp-off": _chat(model, temperature=0, max_tokens=MAX_TOKENS - 3),
        "n-3": _chat(model, temperature=1.0, seed=33, n=3),
        "n-1": _chat(model, temperature=1.0, seed=44),
        **{
            name: _chat(
                model,
                temperature=0,
                max_tokens=32,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": name.replace("-", "_"), "schema": s},
                },
            )
            for name, s in SCHEMAS.items()
        },
        "tool-a": _chat(
            model,
            temperature=0,
            max_tokens=48,
            tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "get_time"}},
        ),
        "tool-b": _chat(
            model, temperature=0, max_tokens=MAX_TOKENS + 1, tools=TOOLS, tool_choice="none"
        ),
    }
    if bias_token is not None:
        out["bias"] = _chat(
            model, temperature=0, max_tokens=MAX_TOKENS + 2, logit_bias={str(bias_token): 100}
        )
    return out


@dataclass
class Mix:
    """The batch's answers: each request alone, alone again, and inside the batch; what the server
    tokenized.
    """

    alone: dict[str, Answer]
    again: dict[str, Answer]
    batched: dict[str, Answer]
    bias_token: int | None

    def judge(self, check: str) -> Verdict:
        return JUDGES[check](self)


def run_mix(client: InferClient) -> Mix:
    """The probe (the plain greedy answer alone, whose text gives the stop strings), each request
    alone twice, then all of them at once."""
    model = client.model
    probe = send(client, _chat(model, temperature=0))
    bias_token = next(iter(tokenize(client, BIAS_TEXT) or []), None)
    bodies = requests(model, probe.text(), bias_token)
    alone = {name: send(client, body) for name, body in bodies.items()}
    again = {name: send(client, body) for name, body in bodies.items()}
    batched = dict(zip(bodies, send_together(client, list(bodies.values()))))
    return Mix(alone, again, batched, bias_token)


def _texts(answer: Answer) -> list[str]:
    return [answer.text(i) for i in range(len(answer.choices))]


def _controls(mix: Mix, names: tuple[str, ...], reproducible: bool) -> Verdict | None:
    """None when each named request was answered alone (and, where ``reproducible``, the same twice)
    and in the batch; else the verdict that stops the check."""
    for name in names:
        alone = mix.alone[name]
        if alone.problem is not None:
            return Verdict(
                Outcome.NOT_EXERCISED,
                f"{name} alone was not answered ({alone.problem}): the server does not take it "
                "alone, so whether it "
                f"keeps it apart in a batch is not judged\nreproduce: {alone.reproducer}",
            )
        if reproducible and _texts(alone) != _texts(mix.again[name]):
            return Verdict(
                Outcome.INCONCLUSIVE,
                f"{name} alone twice gave two answers ({_texts(alone)!r:.200} then "
                f"{_texts(mix.again[name])!r:.200}): "
                "it is not reproducible alone, so the batch cannot be held to it\nreproduce: "
                f"{alone.reproducer}",
            )
    for name in names:
        batched = mix.batched[name]
        if batched.problem is not None:
            return Verdict(
                Outcome.FAILED,
                f"{name} in the batch was not answered ({batched.problem}), though alone it was"
                f"\nreproduce (alone): {batched.reproducer}",
            )
    return None


def _same_as_alone(mix: Mix, names: tuple[str, ...], setting: str) -> Verdict:
    """Each named request's batched answer equals its alone answer, choice by choice."""
    wrong = [
        f"{name}: alone {_texts(mix.alone[name])!r:.200}, in the batch "
        f"{_texts(mix.batched[name])!r:.200}"
        for name in names
        if _texts(mix.alone[name]) != _texts(mix.batched[name])
    ]
    if wrong:
        return Verdict(
            Outcome.FAILED,
            f"{setting}: {len(wrong)} of {len(names)} requests answered differently in the batch "
            "than alone "
            f"(their {setting} reached another request, or none): "
            + "; ".join(wrong)
            + f"\nreproduce (alone): {mix.alone[names[0]].reproducer}",
        )
    return Verdict(
        Outcome.PASSED,
        f"{setting}: {len(names)} requests each gave its own alone answer in a batch of "
        f"{len(mix.batched)}: " + "; ".join(f"{n} {_texts(mix.batched[n])!r:.60}" for n in names),
    )


def _seeds(mix: Mix) -> Verdict:
    names = ("seed-a", "seed-b")
    if (stop := _controls(mix, names, reproducible=True)) is not None:
        return stop
    if _texts(mix.alone["seed-a"]) == _texts(mix.alone["seed-b"]):
        return Verdict(
            Outcome.INCONCLUSIVE,
            "seeds 11 and 22 give one answer alone: a swap of seeds would not show",
        )
    return _same_as_alone(mix, names, "seed")


def _stop(mix: Mix) -> Verdict:
    names = ("stop-a", "stop-b")
    if (stop := _controls(mix, names, reproducible=True)) is not None:
        return stop
    for name in names:
        strings = mix.alone[name].body.get("stop") or []
        if not all(strings) or mix.alone[name].finish_reason() != "stop":
            return Verdict(
                Outcome.NOT_EXERCISED,
                f"{name} alone did not end on its stop string {strings!r} (finish_reason "
                f"{mix.alone[name].finish_reason()!r}): the server does not apply it alone (or the "
                "plain answer gave "
                "no text to cut a stop string from)",
            )
    if mix.alone["stop-a"].text() == mix.alone["stop-b"].text():
        return Verdict(
            Outcome.INCONCLUSIVE,
            "both stop strings cut the answer at one place alone: a swap would not show",
        )
    found = _same_as_alone(mix, names, "stop strings")
    ended = [n for n in names if mix.batched[n].finish_reason() != "stop"]
    if found.outcome == Outcome.PASSED and ended:
        return Verdict(
            Outcome.FAILED,
            f"stop strings: {ended} did not end on their stop string in the batch",
        )
    return found


def _max_tokens(mix: Mix) -> Verdict:
    names = ("max-a", "max-b")
    if (stop := _controls(mix, names, reproducible=True)) is not None:
        return stop
    for name in names:
        limit = mix.alone[name].body["max_tokens"]
        if (
            mix.alone[name].completion_tokens() != limit
            or mix.alone[name].finish_reason() != "length"
        ):
            return Verdict(
                Outcome.NOT_EXERCISED,
                f"{name} alone did not run to its max_tokens {limit} (usage.completion_tokens "
                f"{mix.alone[name].completion_tokens()!r}, finish_reason "
                f"{mix.alone[name].finish_reason()!r}): the "
                "model ended first, or the server does not count",
            )
    wrong = [
        f"{n}: max_tokens {mix.batched[n].body['max_tokens']}, completion_tokens "
        f"{mix.batched[n].completion_tokens()}"
        for n in names
        if mix.batched[n].completion_tokens() != mix.batched[n].body["max_tokens"]
    ]
    if wrong:
        return Verdict(Outcome.FAILED, "max_tokens: in the batch " + "; ".join(wrong))
    return _same_as_alone(mix, names, "max_tokens")


def _logit_bias(mix: Mix) -> Verdict:
    if mix.bias_token is None:
        return Verdict(
            Outcome.UNSUPPORTED,
            f"the server's tokenize route gave no token id of {BIAS_TEXT!r}: logit_bias needs "
            "one, so it is not sent",
        )
    names = ("bias", "plain")
    if (stop := _controls(mix, names, reproducible=True)) is not None:
        return stop
    biased, plain = mix.alone["bias"].text(), mix.alone["plain"].text()
    if biased == plain or BIAS_TEXT not in biased:
        return Verdict(
            Outcome.NOT_EXERCISED,
            f"logit_bias +100 on the token of {BIAS_TEXT!r} ({mix.bias_token}) changed nothing "
            f"alone ({biased!r:.80} "
            f"against {plain!r:.80} without it): the server does not apply it alone\nreproduce: "
            f"{mix.alone['bias'].reproducer}",
        )
    return _same_as_alone(mix, names, "logit_bias")


def _logprobs_shape(answer: Answer) -> str:
    entries = answer.logprobs()
    if entries is None:
        return "none"
    tops = {len(e.get("top_logprobs") or []) for e in entries}
    return f"{len(entries)} tokens, top {sorted(tops)}"


def _logprobs(mix: Mix) -> Verdict:
    names = ("lp-on", "lp-off")
    if (stop := _controls(mix, names, reproducible=False)) is not None:
        return stop
    want = {
        "lp-on": lambda a: (
            bool(a.logprobs()) and all(len(e.get("top_logprobs") or []) == 2 for e in a.logprobs())
        ),
        "lp-off": lambda a: a.logprobs() is None,
    }
    alone = {n: _logprobs_shape(mix.alone[n]) for n in names}
    if not all(want[n](mix.alone[n]) for n in names):
        return Verdict(
            Outcome.NOT_EXERCISED,
            f"alone, logprobs (top 2) on one request and none on the other came back as {alone}: "
            "the server does "
            "not give what was asked alone",
        )
    batched = {n: _logprobs_shape(mix.batched[n]) for n in names}
    if not all(want[n](mix.batched[n]) for n in names):
        return Verdict(
            Outcome.FAILED,
            f"logprobs: in the batch the two requests got {batched}, alone {alone}",
        )
    return Verdict(
        Outcome.PASSED,
        f"logprobs: in a batch of {len(mix.batched)}, the request that asked got {batched['lp-on']}"
        ", the one that did not got none",
    )


def _n(mix: Mix) -> Verdict:
    names = ("n-3", "n-1")
    if (stop := _controls(mix, names, reproducible=True)) is not None:
        return stop
    counts = {n: len(mix.alone[n].choices) for n in names}
    if counts != {"n-3": 3, "n-1": 1}:
        return Verdict(
            Outcome.NOT_EXERCISED,
            f"alone, n=3 and n=1 gave {counts} choices: the server does not apply n alone",
        )
    batched = {n: len(mix.batched[n].choices) for n in names}
    if batched != counts:
        return Verdict(Outcome.FAILED, f"n: in the batch n=3 and n=1 gave {batched} choices")
    return _same_as_alone(mix, names, "n")


def _schema_errors(text: str, schema: dict) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return f"not JSON: {text!r:.80}"
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        return f"{exc.message:.120}"
    return None


def _schemas(mix: Mix) -> Verdict:
    names = ("schema-a", "schema-b")
    if (stop := _controls(mix, names, reproducible=False)) is not None:
        return stop
    other = {"schema-a": "schema-b", "schema-b": "schema-a"}
    for name in names:
        if (why := _schema_errors(mix.alone[name].text(), SCHEMAS[name])) is not None:
            return Verdict(
                Outcome.NOT_EXERCISED,
                f"{name} alone broke its own schema ({why}): the server does not apply the schema "
                "alone (the "
                "structured suite judges that), so cross-talk under batching is not "
                "judged\nreproduce: "
                f"{mix.alone[name].reproducer}",
            )
    wrong = []
    for name in names:
        text = mix.batched[name].text()
        if (why := _schema_errors(text, SCHEMAS[name])) is not None:
            wrong.append(f"{name} broke its own schema in the batch ({why})")
        elif _schema_errors(text, SCHEMAS[other[name]]) is None:
            wrong.append(f"{name}'s answer {text!r:.80} is valid against {other[name]} too")
    if wrong:
        reproducer = mix.alone[names[0]].reproducer
        return Verdict(
            Outcome.FAILED,
            "schemas: " + "; ".join(wrong) + f"\nreproduce (alone): {reproducer}",
        )
    return Verdict(
        Outcome.PASSED,
        f"schemas: in a batch of {len(mix.batched)}, each of two requests met its own schema and "
        "not the other's: " + "; ".join(f"{n} {mix.batched[n].text()!r:.60}" for n in names),
    )


def _called(answer: Answer) -> list[str]:
    calls = (answer.choice().get("message") or {}).get("tool_calls") or []
    return [str((c.get("function") or {}).get("name")) for c in calls if isinstance(c, dict)]


def _tool_choice(mix: Mix) -> Verdict:
    names = ("tool-a", "tool-b")
    want = {"tool-a": ["get_time"], "tool-b": []}
    # a forced call's message may carry no content: judged by its calls, not as a completion
    for name in names:
        if mix.alone[name].status != 200 or not mix.alone[name].choices:
            return Verdict(
                Outcome.NOT_EXERCISED,
                f"{name} alone was not answered ({mix.alone[name].problem}): the server does not "
                "take its tool "
                f"choice alone\nreproduce: {mix.alone[name].reproducer}",
            )
    alone = {n: _called(mix.alone[n]) for n in names}
    if alone != want:
        return Verdict(
            Outcome.NOT_EXERCISED,
            f"alone, tool_choice get_time and none called {alone}: the server does not apply the "
            "tool choice alone",
        )
    batched = {
        n: _called(mix.batched[n]) if mix.batched[n].status == 200 else mix.batched[n].problem
        for n in names
    }
    if batched != want:
        return Verdict(
            Outcome.FAILED,
            f"tool_choice: in the batch, get_time and none called {batched}\nreproduce (alone): "
            f"{mix.alone['tool-a'].reproducer}",
        )
    return Verdict(
        Outcome.PASSED,
        f"tool_choice: in a batch of {len(mix.batched)}, the request naming get_time called it and"
        " the one with none called nothing",
    )


JUDGES: dict[str, Callable[[Mix], Verdict]] = {
    "seeds": _seeds,
    "stop": _stop,
    "max_tokens": _max_tokens,
    "logit_bias": _logit_bias,
    "logprobs": _logprobs,
    "n": _n,
    "schemas": _schemas,
    "tool_choice": _tool_choice,
}

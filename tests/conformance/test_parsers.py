"""The parser checks on the fake server, which forces text as vLLM does and parses it as hermes and a <think>
reasoning parser do: each check passes on it with evidence, fails on the deviation it exists for, is "not
drivable" where nothing can be forced, and earns no pass against the null modes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from pytest_infer import conformance
from pytest_infer.adapters.base import Parsers
from pytest_infer.adapters.sglang import SGLangAdapter
from pytest_infer.adapters.vllm import VLLMAdapter
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.conformance.scripts import (
    Call,
    Scripting,
    literal_regex,
    reasoning_script,
    tool_script,
)
from pytest_infer.outcomes import NotExercised
from pytest_infer.testing.fakeserver import (
    MODEL,
    NULL_MODES,
    REASONING_PARSER,
    TOOL_PARSER,
    Deviation,
    FakeServer,
    forced_text,
)

from .deviations import CHAT, _choice

CHECKS = sorted(c.id for c in conformance.REGISTRY if c.id.startswith("parsers."))
TOOL_CHECKS = [c for c in CHECKS if c.startswith("parsers.tool-")]


VLLM_FORCING = VLLMAdapter().forced_text_fields


def scripting(
    tool: str | None = TOOL_PARSER, reasoning: str | None = REASONING_PARSER, force=VLLM_FORCING
) -> Scripting:
    return Scripting(tool, reasoning, force, "fake")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@pytest.fixture
def make_ctx(server: FakeServer) -> Iterator[Callable[..., conformance.CheckContext]]:
    made: list[conformance.CheckContext] = []

    def make(deviation: Deviation | None = None, **kwargs) -> conformance.CheckContext:
        server.set_deviation(deviation)
        server.forget()
        made.append(
            conformance.CheckContext(
                Endpoint(server.base_url, MODEL, timeout=10),
                framework="fake",
                scripting=scripting(**kwargs),
            )
        )
        return made[-1]

    yield make
    server.set_deviation(None)
    for ctx in made:
        ctx.close()


def test_literal_regex_is_read_back_as_the_text_it_forces() -> None:
    """The escaper and the fake's reader agree on every character a script holds (markup, JSON, controls)."""
    text = '<tool_call>\n{"a": [1, {"b": "x.y*z?"}], "c": "\\\\ \t é 東京 $^|()"}\n</tool_call>'
    assert forced_text({"structured_outputs": {"regex": literal_regex(text)}}) == text


def test_each_parser_format_is_the_documented_one() -> None:
    """Spot checks against the formats in each parser's documentation."""
    calls = (Call("f", {"a": 1, "b": True}),)
    assert (
        tool_script("hermes", calls).text
        == '<tool_call>\n{"name": "f", "arguments": {"a": 1, "b": true}}\n</tool_call>'
    )
    assert tool_script("pythonic", calls).text == "[f(a=1, b=True)]"
    assert (
        tool_script("llama3_json", calls * 2).text
        == '{"name": "f", "parameters": {"a": 1, "b": true}}; {"name": "f", "parameters": {"a": 1, "b": true}}'
    )
    assert (
        tool_script("mistral", calls).text
        == '[TOOL_CALLS][{"name": "f", "arguments": {"a": 1, "b": true}}]'
    )
    assert (
        tool_script("qwen3_coder", calls).text
        == "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\ntrue\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert reasoning_script("deepseek_r1", "r", "c").text == "<think>r</think>c"


@pytest.mark.parametrize("check_id", CHECKS)
def test_passes_with_evidence_on_a_correct_parser(check_id: str, make_ctx) -> None:
    evidence = conformance.REGISTRY[check_id].func(make_ctx())
    assert isinstance(evidence, str) and evidence.startswith(("hermes: ", "qwen3: ")), evidence


def _stream_args(change: Callable[[str], str]) -> Deviation:
    """Rewrite each streamed arguments fragment."""

    def events(path: str, body: dict, evs: list) -> list:
        for ev in evs:
            for ch in ev.get("choices", []) if isinstance(ev, dict) else []:
                for frag in (ch.get("delta") or {}).get("tool_calls") or []:
                    if (frag.get("function") or {}).get("arguments"):
                        frag["function"]["arguments"] = change(frag["function"]["arguments"])
        return evs

    return Deviation(events=events)


def _answered(change: Callable[[dict, dict], None]) -> Deviation:
    def response(path: str, body: dict, resp: dict) -> dict:
        if path == CHAT and forced_text(body) is not None:
            change(body, _choice(resp))
        return resp

    return Deviation(response=response)


def _args(change: Callable[[str], str]) -> Callable[[dict, dict], None]:
    def apply(body: dict, choice: dict) -> None:
        for call in choice["message"].get("tool_calls") or []:
            call["function"]["arguments"] = change(call["function"]["arguments"])

    return apply


def _merge_streamed_indices(path: str, body: dict, evs: list) -> list:
    for ev in evs:
        for ch in ev.get("choices", []) if isinstance(ev, dict) else []:
            for frag in (ch.get("delta") or {}).get("tool_calls") or []:
                frag["index"] = 0
    return evs


def _leak_think(path: str, body: dict, evs: list) -> list:
    """Each reasoning delta replaced by a '<think>' content delta."""
    for ev in evs:
        delta = ev["choices"][0]["delta"] if isinstance(ev, dict) and ev["choices"] else {}
        if "reasoning" in delta:
            delta.pop("reasoning")
            delta["content"] = "<think>"
    return evs


def _rename_streamed_reasoning(path: str, body: dict, evs: list) -> list:
    for ev in evs:
        delta = ev["choices"][0]["delta"] if isinstance(ev, dict) and ev["choices"] else {}
        if "reasoning" in delta:
            delta["reasoning_content"] = delta.pop("reasoning")
    return evs


def _invent_call(body: dict, choice: dict) -> None:
    if body.get("tools"):
        choice["message"]["tool_calls"] = [
            {
                "id": "call_x",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            }
        ]
        choice["finish_reason"] = "tool_calls"


def _hold_back_text(body: dict, choice: dict) -> None:
    """A parser that keeps plain text back (it runs under tool_choice 'auto', not 'none')."""
    if (
        body.get("tools")
        and body.get("tool_choice", "auto") == "auto"
        and not choice["message"].get("tool_calls")
    ):
        choice["message"]["content"] = None


def _invent_call_from_text(body: dict, choice: dict) -> None:
    if not choice["message"].get("tool_calls") and body.get("tool_choice") == "auto":
        _invent_call(body, choice)


def _leave_call_as_text(body: dict, choice: dict) -> None:
    if body.get("tools"):
        choice.update(
            finish_reason="stop", message={"role": "assistant", "content": forced_text(body)}
        )


def _keep_markup(body: dict, choice: dict) -> None:
    if "reasoning" in choice["message"]:
        choice["message"]["content"] = forced_text(body)


def _swallow_answer(body: dict, choice: dict) -> None:
    message = choice["message"]
    if "reasoning" in message:
        message.update(reasoning=message["reasoning"] + str(message["content"]), content=None)


def _drop_second_call(body: dict, choice: dict) -> None:
    if len(choice["message"].get("tool_calls") or []) > 1:
        choice["message"]["tool_calls"].pop()


def _parse_anyway(body: dict, choice: dict) -> None:
    if body.get("tool_choice") == "none":
        _invent_call(body, choice)


def _refuse_tool_results(path: str, body: dict):
    roles = [m.get("role") for m in body.get("messages") or []]
    return (
        (
            400,
            {
                "error": {
                    "message": "tool role not supported",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        )
        if "tool" in roles
        else None
    )


CALL_CHECKS = [
    "parsers.tool-single",
    "parsers.tool-parallel",
    "parsers.tool-nested",
    "parsers.tool-escapes",
    "parsers.tool-after-result",
]
DEVIATIONS: dict[str, tuple[Deviation, list[str]]] = {
    "streamed arguments lose their opening brace": (
        _stream_args(lambda a: a.removeprefix("{")),
        CALL_CHECKS,
    ),
    "answered arguments cut at the first closing brace": (
        _answered(_args(lambda a: a[: a.index("}") + 1])),
        ["parsers.tool-nested"],
    ),
    "a tab in an argument doubled into backslash-t": (
        _answered(_args(lambda a: a.replace("\\t", "\\\\t"))),
        ["parsers.tool-escapes"],
    ),
    "non-ASCII lost to '?'": (
        _stream_args(lambda a: a.encode("ascii", "replace").decode()),
        ["parsers.tool-escapes"],
    ),
    "parallel calls merged into one index in the stream": (
        Deviation(events=_merge_streamed_indices),
        ["parsers.tool-parallel"],
    ),
    "the second of two calls dropped": (_answered(_drop_second_call), ["parsers.tool-parallel"]),
    "plain text held back": (_answered(_hold_back_text), ["parsers.tool-no-call"]),
    "a call invented from plain text": (
        _answered(_invent_call_from_text),
        ["parsers.tool-no-call"],
    ),
    "tool_choice none parsed anyway": (_answered(_parse_anyway), ["parsers.tool-choice-none"]),
    "a call left as text": (
        _answered(_leave_call_as_text),
        ["parsers.tool-single", "parsers.tool-parallel"],
    ),
    "a tool result refused": (
        Deviation(request=_refuse_tool_results),
        ["parsers.tool-after-result"],
    ),
    "<think> left in content": (_answered(_keep_markup), ["parsers.reasoning-split"]),
    "<think> leaks into streamed content": (
        Deviation(events=_leak_think),
        ["parsers.reasoning-stream"],
    ),
    "reasoning renamed in the stream": (
        Deviation(events=_rename_streamed_reasoning),
        ["parsers.reasoning-stream"],
    ),
    "the answer swallowed as reasoning": (_answered(_swallow_answer), ["parsers.reasoning-split"]),
}


@pytest.mark.parametrize(
    ("name", "check_id"), [(name, c) for name, (_, ids) in DEVIATIONS.items() for c in ids]
)
def test_fails_on_its_deviation(name: str, check_id: str, make_ctx) -> None:
    deviation, _ = DEVIATIONS[name]
    with pytest.raises(conformance.CheckFailure) as info:
        conformance.run(check_id, make_ctx(deviation))
    assert "reproduce: curl " in str(info.value), info.value


def test_every_check_has_a_deviation() -> None:
    assert {c for _, ids in DEVIATIONS.values() for c in ids} == set(CHECKS)


@pytest.mark.parametrize("mode", sorted(NULL_MODES))
@pytest.mark.parametrize("check_id", CHECKS)
def test_no_pass_against_a_null_server(mode: str, check_id: str, make_ctx) -> None:
    try:
        evidence = conformance.run(check_id, make_ctx(NULL_MODES[mode]()))
    except (conformance.CheckFailure, pytest.skip.Exception):
        return
    pytest.fail(f"{check_id} passed against the {mode} server: {evidence}")


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"tool": None, "reasoning": None}, "no tool parser known"),
        ({"tool": "openai", "reasoning": "granite"}, "has no script here"),
        ({"force": lambda regex, version=None: None}, "no constrained decoding"),
    ],
)
@pytest.mark.parametrize("check_id", ["parsers.tool-single", "parsers.reasoning-split"])
def test_not_drivable_says_why(check_id: str, kwargs: dict, reason: str, make_ctx) -> None:
    with pytest.raises(NotExercised) as info:
        conformance.run(check_id, make_ctx(**kwargs))
    assert "not drivable: " in str(info.value.msg)
    if "tool" in check_id or "decoding" in reason:
        assert reason.split()[-1] in str(info.value.msg) or "reasoning parser" in str(
            info.value.msg
        )


def _chat_writes_its_own(streamed_only: bool = False) -> Deviation:
    """The forcing taken on /v1/completions and dropped on the chat route (or on its streams alone): the model
    writes a short text of its own there, which ends by itself."""

    def request(path: str, body: dict):
        if (
            path == CHAT
            and "structured_outputs" in body
            and (body.get("stream") or not streamed_only)
        ):
            body["structured_outputs"] = {"regex": "ok"}
        return None

    return Deviation(request=request)


@pytest.mark.parametrize("streamed_only", [False, True], ids=["chat", "chat-streams"])
@pytest.mark.parametrize("check_id", CHECKS)
def test_a_chat_route_that_ignores_the_script_is_inconclusive(
    check_id: str, streamed_only: bool, make_ctx
) -> None:
    """Nothing parsed because nothing was written is no pass (tool_choice 'none' passed so), and a parser is not
    blamed for a script that never reached it: the control on the chat route says so."""
    if (
        streamed_only and check_id == "parsers.reasoning-split"
    ):  # judges no stream, so the streams' fault is not its
        assert conformance.run(check_id, make_ctx(_chat_writes_its_own(streamed_only))).startswith(
            "qwen3: "
        )
        return
    with pytest.raises(conformance.Inconclusive) as info:
        conformance.run(check_id, make_ctx(_chat_writes_its_own(streamed_only)))
    assert "the scripted-output control on /v1/chat/completions" in info.value.msg, info.value.msg
    assert "'ok'" in info.value.msg and "curl " in info.value.msg


@pytest.mark.parametrize("check_id", TOOL_CHECKS)
def test_a_forcing_the_server_ignores_is_inconclusive(check_id: str, make_ctx) -> None:
    """SGLang's field on a server that reads vLLM's: the model writes its own text, and the control says so."""
    with pytest.raises(
        conformance.Inconclusive, match="the forc(ing did not take|ed text did not finish)"
    ):
        conformance.run(check_id, make_ctx(force=SGLangAdapter().forced_text_fields))


def test_parser_options_parse_and_refuse_bad_input() -> None:
    assert Parsers.parse(["hermes", "reasoning:qwen3"]) == Parsers("hermes", "qwen3")
    assert Parsers.parse(["tool:pythonic"]) == Parsers("pythonic")
    for bad in (["hermes", "tool:pythonic"], ["vision:x"], ["reasoning:"]):
        with pytest.raises(ValueError, match="NAME|two tool"):
            Parsers.parse(bad)


def test_adapters_force_text_on_their_own_field() -> None:
    assert VLLMAdapter().forced_text_fields("a", "0.32.0") == {"structured_outputs": {"regex": "a"}}
    assert VLLMAdapter().forced_text_fields("a", "0.11.2") == {"guided_regex": "a"}
    # from the first token, a thinking block included (SGLang holds a grammar back until reasoning ends otherwise)
    assert SGLangAdapter().forced_text_fields("a") == {
        "regex": "a",
        "custom_params": {"__sglang_reasoning_in_grammar": True},
    }
    assert VLLMAdapter().parser_args(Parsers("hermes", "qwen3"), scripted=True) == (
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3",
        "--structured-outputs-config", json.dumps({"enable_in_reasoning": True}),
        "--default-chat-template-kwargs", json.dumps({"enable_thinking": False}),
    )  # fmt: skip
    assert "--default-chat-template-kwargs" not in VLLMAdapter().parser_args(
        Parsers("mistral", "mistral"), scripted=True
    )
    assert "--default-chat-template-kwargs" not in VLLMAdapter().parser_args(
        Parsers("hermes", "qwen3")
    )  # a real model's own


@pytest.mark.parametrize("framework", ["vllm", "sglang"])
def test_the_main_job_judges_the_parsers_the_tiny_model_is_launched_with(framework: str) -> None:
    """The README's main job names no parser: the launch and the checks' scripts both get the adapter's defaults
    (the integration lane runs the checks on them against a real vLLM)."""
    from pytest_infer.adapters import registry
    from pytest_infer.models.gemma import GEMMA
    from pytest_infer.models.tiny import TINY
    from pytest_infer.options import InferOptions
    from pytest_infer.targets import launched_parsers

    adapter, options = registry.get(framework), InferOptions(frameworks=(framework,))
    assert launched_parsers(adapter, options, TINY)[1] == Parsers("pythonic", "qwen3")
    named = launched_parsers(
        adapter, InferOptions(frameworks=(framework,), parsers=Parsers("hermes")), TINY
    )[1]
    assert named == Parsers("hermes")  # a tool parser named alone: no reasoning parser beside it
    assert (
        launched_parsers(adapter, options, GEMMA)
        == launched_parsers(adapter, options, None)
        == ((), Parsers())
    )


def test_matrix_folds_one_results_file_per_parser(tmp_path) -> None:
    """Parsers x cases, FAIL with its first line, and an unscripted engine parser listed as not drivable."""
    from pytest_infer.conformance.matrix import matrix
    from pytest_infer.results.model import SessionResults, TestRecord

    for parser, outcome, message in (
        ("tool-hermes", "passed", ""),
        ("tool-pythonic", "failed", "expected: the scripted calls\ngot: []"),
    ):
        results = SessionResults()
        results.add_test(
            TestRecord(
                f"t::{parser}", "vllm", outcome, "conformance", "parsers.tool-single", message
            )
        )
        results.add_test(
            TestRecord(
                f"t::{parser}2",
                "vllm",
                "not_exercised",
                "conformance",
                "parsers.tool-nested",
                "not exercised: not drivable: x",
            )
        )
        (tmp_path / parser).mkdir()
        results.write(tmp_path / parser / "results.json")
    text = matrix(tmp_path, [("tool", "hermes"), ("tool", "openai"), ("tool", "xlam")])
    assert "| tool parser | nested | single |" in text
    assert (
        "| hermes | not drivable | pass |" in text and "| pythonic | not drivable | FAIL |" in text
    )
    assert "Not drivable, no script for its format (tool): openai." in text
    assert "Scripted, not run here (tool): xlam." in text
    assert "- tool-pythonic / parsers.tool-single: expected: the scripted calls" in text


@pytest.mark.parametrize("check_id", TOOL_CHECKS)
def test_tool_scripts_without_a_thinking_block_where_no_reasoning_parser_expects_one(
    check_id: str, make_ctx, server: FakeServer
) -> None:
    """A tool parser alone (or with Mistral's optional [THINK]) gets the bare calls; Qwen3's gets a <think> first."""
    conformance.run(check_id, make_ctx(reasoning=None))
    assert not any(
        "<think>" in json.dumps(body) for _, path, body in server.requests if path == CHAT
    )


def test_every_parser_check_has_a_deviation_of_its_own() -> None:
    """The generic check matrix (test_mutations) leaves the parser checks to this file: none may go unproven."""
    covered = {check for _, checks in DEVIATIONS.values() for check in checks}
    assert sorted(set(CHECKS) - covered) == [] and CHECKS


def _tiny_ctx(
    server: FakeServer, deviation: Deviation | None = None, **kwargs
) -> conformance.CheckContext:
    server.set_deviation(deviation)
    server.forget()
    return conformance.CheckContext(
        Endpoint(server.base_url, MODEL, timeout=10),
        framework="fake",
        tiny=True,
        scripting=scripting(**kwargs),
    )


def test_tools_auto_on_the_tiny_model_is_a_scripted_call_with_auto_and_with_no_choice(
    server: FakeServer,
) -> None:
    """The built-in model decides nothing, so tools.auto scripts its call; both the API's ways to ask for auto count."""
    with _tiny_ctx(server) as ctx:
        evidence = conformance.run("tools.auto", ctx)
    assert "tool_choice 'auto' and none given" in evidence and "get_weather" in evidence
    choices = [
        body.get("tool_choice", "(none)")
        for _, path, body in server.requests
        if path == CHAT and body.get("tools")
    ]
    assert "auto" in choices and "(none)" in choices


def test_tools_auto_on_the_tiny_model_fails_when_auto_never_calls(server: FakeServer) -> None:
    from .proofs import MUTATIONS

    try:
        with (
            _tiny_ctx(server, MUTATIONS["tools.auto"]) as ctx,
            pytest.raises(conformance.CheckFailure, match="scripted calls"),
        ):
            conformance.run("tools.auto", ctx)
        with _tiny_ctx(server, tool=None) as ctx, pytest.raises(NotExercised, match="not drivable"):
            conformance.run("tools.auto", ctx)
    finally:
        server.set_deviation(None)


def test_a_scripted_thinking_block_asks_the_model_to_think(make_ctx, server: FakeServer) -> None:
    """A Qwen3 server with thinking off by default (the tiny model's launch) thinks only when asked, as its clients
    ask."""
    conformance.run("parsers.reasoning-split", make_ctx())
    asked = [body.get("chat_template_kwargs") for _, path, body in server.requests if path == CHAT]
    assert asked and all(k == {"enable_thinking": True} for k in asked)
    conformance.run("parsers.tool-single", make_ctx(reasoning=None))
    assert not any(
        "chat_template_kwargs" in body for _, path, body in server.requests if path == CHAT
    )

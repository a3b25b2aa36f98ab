"""Scripted model output: the exact text a model must write, forced through the engine's own
constrained decoding.

A check states the calls (or the reasoning and answer) it wants; ``tool_text`` / ``reasoning_text``
write them in the parser's documented format, ``literal_regex`` turns that text into a regex that
matches it alone, and the adapter's ``forced_text_fields`` puts the regex in the field the engine
reads. The engine's grammar forces the text; the engine's own parser then does the rest, and that is
what the checks judge. A finding on scripted output is real only if the script is what a real model
of that parser's family writes, so each format below follows its parser's documentation, and nothing
else.

Markup a parser looks for by token (``<think>``, ``<tool_call>``, ``[TOOL_CALLS]``) is an added
token in the built-in model (models/tiny_build.py ``PARSER_TOKENS``), buried at a fixed low logit; a
forced request lifts those tokens with ``logit_bias``, so that where the grammar allows ``<think>``
the model writes the one token, as a real model does, and not its characters one by one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# the regex metacharacters, and no more: xgrammar warns on an escaped ordinary character ("\\<"),
# stricter dialects refuse it
_REGEX_META = set("\\.^$|?*+()[]{}")
_REGEX_CONTROL = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
# logit_bias for a markup token: beats every character the grammar also allows there
MARKER_BIAS = 100


def literal_regex(text: str) -> str:
    """A regex that matches ``text`` and nothing else: every punctuation character escaped, controls
    spelled out.
    """
    return "".join(
        _REGEX_CONTROL.get(ch) or (f"\\{ch}" if ch in _REGEX_META else ch) for ch in text
    )


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Script:
    """The text to force, the markup tokens in it, and what the parser must make of it."""

    text: str
    markers: tuple[str, ...] = ()
    calls: tuple[Call, ...] = ()
    content: str = ""
    reasoning: str = ""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _python(value: Any) -> str:
    """A Python literal, as pythonic-format models write arguments (json's true/false/null are not
    Python).
    """
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_python(k)}: {_python(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_python, value)) + "]"
    return repr(value)


def _hermes(calls: tuple[Call, ...]) -> tuple[str, tuple[str, ...]]:
    """Hermes 2 Pro / Qwen2.5: one ``<tool_call>`` JSON object per call, each on its own lines."""
    body = "\n".join(
        f"<tool_call>\n{_json({'name': c.name, 'arguments': c.arguments})}\n</tool_call>"
        for c in calls
    )
    return body, ("<tool_call>", "</tool_call>")


def _pythonic(calls: tuple[Call, ...]) -> tuple[str, tuple[str, ...]]:
    """Llama 3.2 / Llama 4 pythonic: a Python list of calls with keyword arguments."""
    return (
        "["
        + ", ".join(
            f"{c.name}({', '.join(f'{k}={_python(v)}' for k, v in c.arguments.items())})"
            for c in calls
        )
        + "]",
        (),
    )


def _llama3_json(calls: tuple[Call, ...]) -> tuple[str, tuple[str, ...]]:
    """Llama 3.1 JSON: ``{"name", "parameters"}``; parallel calls separated by ``; `` (vLLM's
    documented form).
    """
    return "; ".join(_json({"name": c.name, "parameters": c.arguments}) for c in calls), ()


def _mistral(calls: tuple[Call, ...]) -> tuple[str, tuple[str, ...]]:
    """Mistral (tokenizer before v11): ``[TOOL_CALLS]`` then a JSON list of ``{"name",
    "arguments"}``.
    """
    return "[TOOL_CALLS]" + _json([{"name": c.name, "arguments": c.arguments} for c in calls]), (
        "[TOOL_CALLS]",
    )


def _qwen3_xml(calls: tuple[Call, ...]) -> tuple[str, tuple[str, ...]]:
    """Qwen3-Coder: ``<tool_call>`` around ``<function=NAME>`` with one ``<parameter=KEY>`` block
    per argument.
    """

    def value(v: Any) -> str:
        return v if isinstance(v, str) else _json(v)

    blocks = [
        f"<tool_call>\n<function={c.name}>\n"
        + "".join(f"<parameter={k}>\n{value(v)}\n</parameter>\n" for k, v in c.arguments.items())
        + "</function>\n</tool_call>"
        for c in calls
    ]
    return "\n".join(blocks), ("<tool_call>", "</tool_call>")


def _json_list(calls: tuple[Call, ...]) -> tuple[str, tuple[str, ...]]:
    """xLAM: a bare JSON list of ``{"name", "arguments"}``."""
    return _json([{"name": c.name, "arguments": c.arguments} for c in calls]), ()


def _phi4_mini(calls: tuple[Call, ...]) -> tuple[str, tuple[str, ...]]:
    """Phi-4-mini: ``functools`` followed by a JSON list of ``{"name", "arguments"}``."""
    return "functools" + _json([{"name": c.name, "arguments": c.arguments} for c in calls]), ()


ToolFormat = Callable[[tuple[Call, ...]], tuple[str, tuple[str, ...]]]
# parser name (vLLM's and SGLang's) -> the documented format of the models it serves
TOOL_FORMATS: dict[str, ToolFormat] = {
    "hermes": _hermes,
    "qwen25": _hermes,
    "qwen": _hermes,
    "pythonic": _pythonic,
    "llama4_pythonic": _pythonic,
    "llama3_json": _llama3_json,
    "llama4_json": _llama3_json,
    "llama3": _llama3_json,
    "mistral": _mistral,
    "qwen3_xml": _qwen3_xml,
    "qwen3_coder": _qwen3_xml,
    "xlam": _json_list,
    "phi4_mini_json": _phi4_mini,
}
# parser name -> (start, end) of the thinking block in the model's output
REASONING_FORMATS: dict[str, tuple[str, str]] = {
    "deepseek_r1": ("<think>", "</think>"),
    "deepseek-r1": ("<think>", "</think>"),
    "qwen3": ("<think>", "</think>"),
    "qwen3-thinking": ("<think>", "</think>"),
    "mistral": ("[THINK]", "[/THINK]"),
}


# reasoning parsers of models that always open with a thinking block (their parser reads unmarked
# text as reasoning)
ALWAYS_THINKS = frozenset({"deepseek_r1", "deepseek-r1", "qwen3", "qwen3-thinking"})


def not_drivable_tool(parser: str) -> str | None:
    """Why scripted output cannot drive tool parser ``parser`` (None: it can)."""
    if parser in TOOL_FORMATS:
        return None
    return (
        f"tool parser {parser!r} has no script here (scripted formats: "
        f"{', '.join(sorted(TOOL_FORMATS))})"
    )


def not_drivable_reasoning(parser: str) -> str | None:
    if parser in REASONING_FORMATS:
        return None
    return (
        f"reasoning parser {parser!r} has no script here (scripted formats: "
        f"{', '.join(sorted(REASONING_FORMATS))})"
    )


def tool_script(parser: str, calls: tuple[Call, ...], content: str = "") -> Script:
    """``content`` and then the calls, as parser ``parser``'s models write them (plain ``content``
    without calls).
    """
    if not calls:
        return Script(content, content=content)
    text, markers = TOOL_FORMATS[parser](calls)
    return Script(content + text, markers, calls, content)


def thinking_first(
    reasoning_parser: str | None, script: Script, thought: str = "The user needs a tool."
) -> Script:
    """``script`` after a thinking block where the server's reasoning parser serves models that
    always think first: a Qwen3 or DeepSeek-R1 model never answers without one, so a script without
    it is no model's output."""
    if reasoning_parser not in ALWAYS_THINKS:
        return script
    start, end = REASONING_FORMATS[reasoning_parser]
    return Script(
        f"{start}{thought}{end}{script.text}",
        (start, end, *script.markers),
        script.calls,
        script.content,
        thought,
    )


def reasoning_script(parser: str, reasoning: str, content: str) -> Script:
    start, end = REASONING_FORMATS[parser]
    return Script(
        f"{start}{reasoning}{end}{content}", (start, end), content=content, reasoning=reasoning
    )


@dataclass(frozen=True, slots=True)
class Scripting:
    """How to script this server's model: the parsers it was launched with and the request fields
    that force text.

    ``force(regex)``: the request fields that make the engine write exactly what ``regex`` matches
    (None: the engine has no such decoding). ``token_ids(text)``: the ids ``text`` tokenizes to
    (None where unknown), for the ``logit_bias`` that makes markup come as one token.
    """

    tool_parser: str | None = None
    reasoning_parser: str | None = None
    force: Callable[[str], Mapping[str, Any] | None] | None = None
    framework: str = ""
    markers: dict[str, int | None] = field(default_factory=dict)

    def forcing(self) -> str | None:
        """Why this server's output cannot be forced (None: it can)."""
        if self.force is None or self.force("a") is None:
            return (
                f"{self.framework or 'this server'} has no constrained decoding that forces a "
                "given text"
            )
        return None

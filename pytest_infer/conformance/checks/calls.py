"""The tool definitions and the streamed-call assembler that the tool checks and the parser checks
share.
"""

from __future__ import annotations

from typing import Any

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 20}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a timezone.",
        "parameters": {
            "type": "object",
            "properties": {"tz": {"type": "string", "maxLength": 20}},
            "required": ["tz"],
        },
    },
}


def assemble(chunks: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """Streamed call fragments joined per ``index`` as the SDK's accumulator does, with what breaks
    it.
    """
    calls: dict[int, dict[str, Any]] = {}
    problems = []
    for c in chunks:
        for ch in c.get("choices") or []:
            for frag in (ch.get("delta") or {}).get("tool_calls") or []:
                if not isinstance(frag, dict) or not isinstance(frag.get("function") or {}, dict):
                    problems.append(
                        f"fragment is not a call object with a function object: {frag!r}"
                    )
                    continue
                idx = frag.get("index")
                if not isinstance(idx, int):
                    problems.append(f"fragment without integer index: {frag}")
                    continue
                if idx not in calls:
                    if not frag.get("id"):
                        problems.append(f"the first fragment of call {idx} has no id: {frag}")
                    calls[idx] = {
                        "id": frag.get("id"),
                        "type": frag.get("type", "function"),
                        "function": {
                            "name": (frag.get("function") or {}).get("name"),
                            "arguments": "",
                        },
                    }
                elif frag.get("id") and frag.get("id") != calls[idx]["id"]:
                    problems.append(
                        f"call {idx} changed id from {calls[idx]['id']} to {frag['id']}"
                    )
                piece = (frag.get("function") or {}).get("arguments") or ""
                if not isinstance(piece, str):
                    problems.append(
                        f"call {idx} arguments fragment is {type(piece).__name__}, not a string: "
                        f"{frag}"
                    )
                    continue
                calls[idx]["function"]["arguments"] += piece
    return calls, problems

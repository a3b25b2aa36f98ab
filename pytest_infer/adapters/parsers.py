"""The tool-call and reasoning parsers a target runs: parsed from ``--infer-parser`` when the
options are read, so that value is here, apart from the adapters (which load when a session uses
them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Parsers:
    """The tool-call and reasoning parsers a server runs (the engine's own names; None: none, or not
    known).
    """

    tool: str | None = None
    reasoning: str | None = None

    @classmethod
    def parse(cls, specs: list[str] | tuple[str, ...]) -> Parsers:
        """``NAME`` or ``tool:NAME`` for the tool-call parser, ``reasoning:NAME`` for the reasoning
        parser.
        """
        found: dict[str, str] = {}
        for spec in specs:
            kind, _, name = spec.rpartition(":")
            kind = kind or "tool"
            if kind not in ("tool", "reasoning") or not name:
                raise ValueError(f"{spec!r}: give a parser as NAME, tool:NAME or reasoning:NAME")
            if kind in found:
                raise ValueError(f"two {kind} parsers named: {found[kind]!r} and {name!r}")
            found[kind] = name
        return cls(found.get("tool"), found.get("reasoning"))

    def __str__(self) -> str:
        return (
            ", ".join(
                f"{kind}:{name}"
                for kind, name in (("tool", self.tool), ("reasoning", self.reasoning))
                if name
            )
            or "none"
        )

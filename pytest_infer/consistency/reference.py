"""Numerics against a reference: a server's greedy continuation and its logprobs held to a
transformers forward pass.

For the built-in models the transformers engine's environment holds the reference implementation:
``reference_run.py`` continues fixed prompts greedily there and gives each step's token, logprob and
top-k. The server continues the same prompts on its completions route (no chat template between
them) with ``logprobs``. The two are compared up to their first disagreement, as vLLM's
``check_logprobs_close`` does: on agreeing tokens the largest logprob difference; at the first
disagreement whether each side's token is among the other's top-k (a near-tie) or not.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..client.answers import COMPLETIONS, completion_problem
from ..client.http import InferClient
from .table import MAX_LOGPROB_DIFF

__all__ = [
    "MAX_LOGPROB_DIFF",
    "PROMPTS",
    "agreement",
    "reference_for",
    "reference_steps",
    "server_steps",
]

SCRIPT = Path(__file__).with_name("reference_run.py")
PROMPTS = (
    "The capital of France is",
    "Once upon a time, there was a",
    "def fibonacci(n):",
    "The three primary colours are",
)
MAX_TOKENS = 16
TOP_K = 5


@dataclass(frozen=True)
class Step:
    token: str
    logprob: float
    top: tuple[str, ...]


def server_steps(client: InferClient, prompt: str) -> tuple[list[Step] | None, str, str]:
    """The server's greedy continuation of ``prompt`` on the completions route, each token's logprob
    and top-k; ``(None, why, curl)`` where it gave none."""
    body = {
        "model": client.model,
        "prompt": prompt,
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "logprobs": TOP_K,
    }
    curl = client.curl("POST", COMPLETIONS, body)
    try:
        resp = client.post(COMPLETIONS, json=body)
    except httpx.HTTPError as exc:
        return None, f"no answer: {type(exc).__name__}: {exc}", curl
    if (why := completion_problem(COMPLETIONS, resp.status_code, resp.text)) is not None:
        return None, why, curl
    lp = (resp.json()["choices"][0] or {}).get("logprobs")
    tokens = lp.get("tokens") if isinstance(lp, dict) else None
    values = lp.get("token_logprobs") if isinstance(lp, dict) else None
    tops = lp.get("top_logprobs") if isinstance(lp, dict) else None
    if not (
        isinstance(tokens, list) and isinstance(values, list) and isinstance(tops, list) and tokens
    ):
        return (
            None,
            "the answer carries no logprobs.tokens/token_logprobs/top_logprobs: "
            f"{resp.text[:200]!r}",
            curl,
        )
    steps = [
        Step(str(t), float(v), tuple(top) if isinstance(top, dict) else ())
        for t, v, top in zip(tokens, values, tops)
        if isinstance(v, (int, float))
    ]
    return steps, "", curl


def reference_steps(
    python: str, folder: Path, prompts: tuple[str, ...] = PROMPTS
) -> list[list[Step]]:
    """The reference's greedy continuation of each prompt (``reference_run.py`` under
    ``python``).
    """
    request = json.dumps({"prompts": list(prompts), "max_tokens": MAX_TOKENS, "top_k": TOP_K})
    run = subprocess.run(
        [python, str(SCRIPT), str(folder), request],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if run.returncode != 0:
        raise RuntimeError(
            f"the reference run failed (exit {run.returncode}): {run.stderr[-1500:]}"
        )
    data = json.loads(run.stdout.strip().splitlines()[-1])
    return [
        [Step(s["token"], s["logprob"], tuple(t for t, _ in s["top"])) for s in steps]
        for steps in data["steps"]
    ]


@dataclass
class Agreement:
    """One prompt: how many leading tokens agree, the largest logprob difference on them, and the
    first disagreement (server token, reference token, each among the other's top-k)."""

    compared: int = 0
    agreed: int = 0
    max_diff: float = 0.0
    disagreement: dict[str, Any] = field(default_factory=dict)

    @property
    def near_tie(self) -> bool:
        d = self.disagreement
        return bool(d) and d["server_in_reference_top"] and d["reference_in_server_top"]


def agreement(server: list[Step], reference: list[Step]) -> Agreement:
    """The two continuations compared up to their first disagreement (check_logprobs_close)."""
    found = Agreement()
    for i, (s, r) in enumerate(zip(server, reference)):
        found.compared += 1
        if s.token == r.token:
            found.agreed += 1
            found.max_diff = max(found.max_diff, abs(s.logprob - r.logprob))
            continue
        found.disagreement = {
            "position": i,
            "server": s.token,
            "reference": r.token,
            "server_in_reference_top": s.token in r.top,
            "reference_in_server_top": r.token in s.top,
        }
        break
    return found


def reference_for(model: str) -> tuple[str, Path] | str:
    """The reference's interpreter and model folder for ``model``: the transformers engine's
    environment and the built-in model as it loads it; or why there is none (a model not built in,
    no transformers environment)."""
    # lazy: building or converting a model folder is for a session that judges numerics
    from ..adapters.base import Environment
    from ..models import registry
    from ..paths import engines_dir

    builtin = registry.builtin(model)  # the served model's (a user's reference may take any model)
    if builtin is None:
        return f"{model} is not a built-in model: no reference implementation is at hand for it"
    python = engines_dir() / "transformers" / "bin" / "python"
    if not python.exists():
        return (
            f"the transformers engine's environment ({python.parent.parent}) is not installed: "
            "it is the reference"
        )
    return str(python), builtin.path("folder", Environment.from_spec(str(python.parent.parent)))

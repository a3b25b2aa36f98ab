"""Synthetic prompts of a controlled input length, optionally sharing a prefix.

The server's tokenizer is not available to the client, so the length is
calibrated against the server itself: two short non-streamed requests of known
word counts give tokens per word and the chat template's fixed overhead (from
``usage.prompt_tokens``). The measured prompt length is reported with the figures.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import httpx

from .client import CHAT_PATH, COMPLETIONS_PATH

WORDS = ["time", "year", "people", "way", "day", "man", "thing", "woman", "life", "child", "world", "school", "state", "family", "student", "group", "country", "problem", "hand", "part", "place", "case", "week", "company", "system", "program", "question", "work", "government", "number", "night", "point", "home", "water", "room", "mother", "area", "money", "story", "fact", "month", "lot", "right", "study", "book", "eye", "job", "word", "business", "issue", "side", "kind", "head", "house", "service", "friend", "father", "power", "hour", "game", "line", "end", "member", "law", "car", "city", "community", "name", "president", "team", "minute", "idea", "kid", "body", "information", "back", "parent", "face", "others", "level", "office", "door", "health", "person", "art", "war", "history", "party", "result", "change", "morning", "reason", "research", "girl", "guy", "moment", "air", "teacher", "force", "education", "river", "stone", "garden", "window", "music", "paper", "light", "market"]
# frameworks whose OpenAI server accepts ``ignore_eos`` (transformers serve rejects unknown fields)
IGNORE_EOS_FRAMEWORKS = frozenset({"vllm", "sglang", "lmdeploy", "trtllm"})
# request fields that make a framework's per-chunk token counts exact (vLLM: token ids in every chunk;
# without them a chunk that carries two tokens, e.g. after held-back partial UTF-8, counts as one)
FRAMEWORK_EXTRA_BODY: dict[str, dict[str, object]] = {"vllm": {"return_token_ids": True}}
PROBE_WORDS = (16, 80)  # small: the tiny model has a 1,024-token context of byte tokens


@dataclass(frozen=True, slots=True)
class Calibration:
    tokens_per_word: float
    overhead_tokens: float
    source: str  # "server usage" or why the fallback was used

    def words_for(self, tokens: int) -> int:
        return max(1, round((tokens - self.overhead_tokens) / self.tokens_per_word))


FALLBACK = Calibration(1.3, 0.0, "fallback (no usage from server)")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def request_body(api: str, model: str, prompt: str, max_tokens: int, *, stream: bool, ignore_eos: bool, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": 0.0}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if ignore_eos:
        body["ignore_eos"] = True
    body.update(extra or {})
    return body


def calibrate(client: httpx.Client, api: str, model: str) -> Calibration:
    """Tokens per word and template overhead, from the server's own prompt_tokens."""
    rng = random.Random(1234)
    counts = []
    for n in PROBE_WORDS:
        body = request_body(api, model, _words(rng, n), 1, stream=False, ignore_eos=False)
        try:
            resp = client.post(CHAT_PATH if api == "chat" else COMPLETIONS_PATH, json=body)
            counts.append(int(resp.json()["usage"]["prompt_tokens"]))
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return FALLBACK
    per_word = (counts[1] - counts[0]) / (PROBE_WORDS[1] - PROBE_WORDS[0])
    if per_word <= 0:
        return FALLBACK
    return Calibration(per_word, counts[0] - per_word * PROBE_WORDS[0], "server usage")


class PromptFactory:
    """Prompt ``i``: a shared prefix (same for all) then words unique to ``i`` (seeded)."""

    def __init__(self, calibration: Calibration, input_tokens: int, shared_prefix_tokens: int = 0, seed: int = 0) -> None:
        self.seed = seed
        total = calibration.words_for(input_tokens)
        prefix_words = min(total - 1, round(shared_prefix_tokens / calibration.tokens_per_word)) if shared_prefix_tokens else 0
        self.unique_words = total - prefix_words
        self.prefix = _words(random.Random(f"prefix-{seed}"), prefix_words) + " " if prefix_words else ""

    def prompt(self, i: int) -> str:
        return self.prefix + _words(random.Random(f"{self.seed}-{i}"), self.unique_words)

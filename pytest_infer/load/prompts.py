"""Synthetic prompts of a controlled input length, optionally sharing a prefix.

The server's tokenizer is not available to the client, so the length is
calibrated against the server itself, from ``usage.prompt_tokens`` of three
non-streamed requests: the word list's two halves and the whole list. Their
counts give the chat template's fixed overhead (halves minus whole) and the
mean cost of a word drawn from the list, which is what a prompt of random words
costs on average (two random probes of 16 and 80 words missed it by 16% on the
tiny model's byte-level tokenizer). The measured prompt length is reported with
the figures.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import httpx

from .client import CHAT_PATH, COMPLETIONS_PATH

WORDS = [
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "community",
    "name",
    "president",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
    "river",
    "stone",
    "garden",
    "window",
    "music",
    "paper",
    "light",
    "market",
]


@dataclass(frozen=True, slots=True)
class Calibration:
    tokens_per_word: float
    overhead_tokens: float
    source: str  # "server usage" or why the fallback was used

    def words_for(self, tokens: int) -> float:
        return max(1.0, (tokens - self.overhead_tokens) / self.tokens_per_word)


FALLBACK = Calibration(1.3, 0.0, "fallback (no usage from server)")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def seeded_words(key: str, n: float) -> str:
    """About ``n`` words drawn by a generator seeded with ``key``: the same key, the same text.

    A fractional ``n`` is met on average: the next whole count with the fraction's probability (a
    word is ~6 tokens on a byte-level tokenizer, so rounding alone missed the length by up to half
    of that).
    """
    rng = random.Random(key)
    whole = int(n)
    return _words(rng, whole + (rng.random() < n - whole))


def request_body(
    api: str,
    model: str,
    prompt: str | list[dict[str, str]],
    max_tokens: int,
    *,
    stream: bool,
    ignore_eos: bool,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A chat or completions body; ``prompt`` is the user's text, or (chat) the whole message list
    of a conversation.
    """
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": 0.0}
    if api == "chat":
        body["messages"] = (
            prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        )
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
    """Mean tokens per listed word and the template's overhead, from the server's own
    prompt_tokens.
    """
    half = len(WORDS) // 2
    counts = []
    for words in (WORDS[:half], WORDS[half:], WORDS):
        body = request_body(api, model, " ".join(words), 1, stream=False, ignore_eos=False)
        try:
            resp = client.post(CHAT_PATH if api == "chat" else COMPLETIONS_PATH, json=body)
            counts.append(int(resp.json()["usage"]["prompt_tokens"]))
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return FALLBACK
    overhead = max(0, counts[0] + counts[1] - counts[2])
    per_word = (counts[2] - overhead) / len(WORDS)
    if per_word <= 0:
        return FALLBACK
    return Calibration(per_word, overhead, "server usage")


class PromptFactory:
    """Prompt ``i``: the shared prefix (for ``share`` of the prompts) then words unique to ``i``
    (seeded).

    The prompts that carry the prefix are spread evenly: prompt ``i`` carries it when ``(i + 1) *
    share`` passes a whole number, so any run of prompts holds the share to within one. A prompt
    without it has unique words of the same total length instead.
    """

    def __init__(
        self,
        calibration: Calibration,
        input_tokens: int,
        shared_prefix_tokens: int = 0,
        seed: int | str = 0,
        share: float = 1.0,
    ) -> None:
        self.seed, self.share = seed, share
        self.calibration = calibration
        self.total_words = calibration.words_for(input_tokens)
        prefix_words = (
            min(
                int(self.total_words) - 1, round(shared_prefix_tokens / calibration.tokens_per_word)
            )
            if shared_prefix_tokens
            else 0
        )
        self.unique_words = self.total_words - prefix_words
        self.prefix = (
            _words(random.Random(f"prefix-{seed}"), prefix_words) + " " if prefix_words else ""
        )

    def carries_prefix(self, i: int) -> bool:
        return bool(self.prefix) and math.floor((i + 1) * self.share) > math.floor(i * self.share)

    def prompt(self, i: int, prefixed: bool | None = None) -> str:
        """Prompt ``i``; ``prefixed`` overrides whether it opens with the prefix (a conversation's
        first).
        """
        if prefixed is None:
            prefixed = self.carries_prefix(i)
        if prefixed and self.prefix:
            return self.prefix + seeded_words(f"{self.seed}-{i}", self.unique_words)
        return seeded_words(f"{self.seed}-{i}", self.total_words)

    def text(self, key: str, tokens: int) -> str:
        """Unique words of about ``tokens`` tokens with no template overhead: a later message of a
        conversation.
        """
        return seeded_words(
            f"{self.seed}-{key}", max(1.0, tokens / self.calibration.tokens_per_word)
        )

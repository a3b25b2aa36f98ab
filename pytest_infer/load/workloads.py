"""What request ``i`` of a load run sends: single prompts, multi-turn conversations, or a replayed
trace.

A ``Bodies`` object builds each request's body when it is sent (``body(i)``) and hears when it
ended (``ended(i)``): a conversation's next turn goes out only after its last one ended.

Multi-turn (``Workload.turns`` > 1, chat only): turn k carries the whole conversation so far, user
messages of about ``input_tokens`` each (the first opens with the shared prefix, for the
conversations ``shared_prefix_share`` picks) and between them the assistant's answers. The
answers are synthetic, seeded words of about ``output_tokens``, not the text the server
streamed: the client keeps token counts, not text, and a fixed answer makes every body the same
whatever the server says. Turn k's prompt is then turn k-1's plus one answer and one question,
which is what the prefix cache sees (the previous turn's generated tokens are not a hit). A
request continues the conversation that has waited longest since its last turn ended, or
starts a new one when none is waiting: in a closed loop each stream runs one conversation at a
time; in an open loop an arrival continues a conversation whose answer is in.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .client import CHAT_PATH, COMPLETIONS_PATH
from .prompts import Calibration, PromptFactory, request_body
from .replay import MOONCAKE_BLOCK_TOKENS, TracePrompts, read_trace


@dataclass(frozen=True, slots=True)
class Workload:
    """What each request asks for (``bodies`` builds each one)."""

    api: str = "chat"  # or "completions"
    input_tokens: int = 64  # multi-turn: each user message
    output_tokens: int = 32
    shared_prefix_tokens: int = 0
    ignore_eos: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)
    shared_prefix_share: float = (
        1.0  # of the prompts (multi-turn: of the conversations) that open with the shared prefix
    )
    turns: int = 1  # > 1: multi-turn conversations, each turn carrying the ones before
    # replay: each request's lengths and shared blocks from this trace (mode "replay")
    trace_file: str | None = None
    trace_block_tokens: int = MOONCAKE_BLOCK_TOKENS  # tokens per hash_ids block of the trace

    def __post_init__(self) -> None:
        if not 0 <= self.shared_prefix_share <= 1:
            raise ValueError("shared_prefix_share is a share of the prompts: between 0 and 1")
        if self.turns < 1:
            raise ValueError("turns must be at least 1")
        if self.turns > 1 and self.api != "chat":
            raise ValueError("multi-turn conversations are chat messages: use api chat")
        if self.trace_file and (self.turns > 1 or self.shared_prefix_tokens):
            raise ValueError(
                "a replayed trace sets each request's length and sharing: drop turns and "
                "shared_prefix_tokens"
            )

    @property
    def path(self) -> str:
        return CHAT_PATH if self.api == "chat" else COMPLETIONS_PATH


class Bodies:
    """One prompt per request: the shared prefix for ``shared_prefix_share`` of them
    (``PromptFactory``).
    """

    def __init__(
        self, workload: Workload, model: str, calibration: Calibration, seed: int | str = 0
    ) -> None:
        self.workload, self.model = workload, model
        self.prompts = PromptFactory(
            calibration,
            workload.input_tokens,
            workload.shared_prefix_tokens,
            seed=seed,
            share=workload.shared_prefix_share,
        )

    def _body(self, prompt: str | list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
        w = self.workload
        return request_body(
            w.api,
            self.model,
            prompt,
            max_tokens,
            stream=True,
            ignore_eos=w.ignore_eos,
            extra=w.extra_body,
        )

    def body(self, i: int) -> dict[str, Any]:
        return self._body(self.prompts.prompt(i), self.workload.output_tokens)

    def ended(self, i: int) -> None:
        pass


class Conversations(Bodies):
    """Multi-turn chats (see the module's notes): each request is a waiting conversation's next
    turn.
    """

    def __init__(
        self, workload: Workload, model: str, calibration: Calibration, seed: int | str = 0
    ) -> None:
        super().__init__(workload, model, calibration, seed)
        # conversations whose last turn has ended, longest-waiting first
        self.waiting: deque[int] = deque()
        self.turns_sent: dict[int, int] = {}
        self.prefixed: dict[int, bool] = {}
        self.of_request: dict[int, int] = {}
        self.started = 0

    def messages(self, conversation: int, turns: int) -> list[dict[str, str]]:
        """A started conversation up to its ``turns``-th user message."""
        out: list[dict[str, str]] = []
        for k in range(turns):
            if k:
                out.append(
                    {
                        "role": "assistant",
                        "content": self.prompts.text(
                            f"answer-{conversation}.{k}", self.workload.output_tokens
                        ),
                    }
                )
            text = (
                self.prompts.prompt(conversation, self.prefixed[conversation])
                if k == 0
                else self.prompts.text(f"user-{conversation}.{k}", self.workload.input_tokens)
            )
            out.append({"role": "user", "content": text})
        return out

    def body(self, i: int) -> dict[str, Any]:
        if self.waiting:
            conversation = self.waiting.popleft()
        else:  # named after its first request, unique across the processes of a distributed run
            conversation = i
            self.turns_sent[conversation] = 0
            # the share counts conversations
            self.prefixed[conversation] = self.prompts.carries_prefix(self.started)
            self.started += 1
        self.of_request[i] = conversation
        self.turns_sent[conversation] += 1
        return self._body(
            self.messages(conversation, self.turns_sent[conversation]), self.workload.output_tokens
        )

    def ended(self, i: int) -> None:
        conversation = self.of_request.pop(i, None)
        if conversation is None:
            return
        if self.turns_sent[conversation] < self.workload.turns:
            self.waiting.append(conversation)
        else:
            del self.turns_sent[conversation], self.prefixed[conversation]


class Replay(Bodies):
    """Request ``i`` is the trace's line ``i``: its input and output lengths, its shared blocks
    (``replay.py``).
    """

    def __init__(
        self, workload: Workload, model: str, calibration: Calibration, seed: int | str = 0
    ) -> None:
        super().__init__(workload, model, calibration, seed)
        assert workload.trace_file is not None
        self.trace = read_trace(workload.trace_file)
        self.texts = TracePrompts(calibration, workload.trace_block_tokens, seed=seed)

    def body(self, i: int) -> dict[str, Any]:
        request = self.trace[i]
        return self._body(self.texts.prompt(i, request), request.output_length)


def bodies(workload: Workload, model: str, calibration: Calibration, seed: int | str = 0) -> Bodies:
    """The body builder for this workload."""
    kind = Replay if workload.trace_file else Conversations if workload.turns > 1 else Bodies
    return kind(workload, model, calibration, seed)

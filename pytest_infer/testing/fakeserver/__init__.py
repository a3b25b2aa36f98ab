"""A small OpenAI-compatible server that is spec-correct by default and wrong on demand.

Its one purpose is to prove that each check CAN fail: a test installs a ``Deviation`` (hooks
that rewrite a request's handling, a response, or a stream's events) and asserts the check
reports exactly that deviation. It also injects faults real engines won't produce on demand
(hangs, malformed SSE, death). Text is generated deterministically, one character per token.

One module per API (``chat``, ``completions``, ``responses``, ``messages``), what they share
(``common``), the named deviations (``faults``: one factory each, entered in ``DEVIATIONS``),
and the HTTP handler that applies a deviation's hooks around them (``server``).

Run in-process (``with FakeServer() as srv``) or as a process for lifecycle tests:
``python -m pytest_infer.testing.fakeserver --port P [--fault NAME]``.
"""

from .common import (
    ALPHABET,
    CONTEXT_LENGTH,
    FINISH_REASONS,
    MARKERS,
    MESSAGES,
    MODEL,
    REASONING_PARSER,
    RESPONSES,
    TOOL_PARSER,
    TYPED_STREAMS,
    Deviation,
    ErrorReply,
    Event,
    FakeState,
    error_body,
    forced_text,
    generate_text,
    parse_reasoning,
    parse_tool_calls,
)
from .faults import (
    DEVIATIONS,
    DIE_MARKER,
    DIVERGE_KINDS,
    FAULTS,
    NULL_MODES,
    SAMPLING_KEYS,
    TRACEBACK,
    cannot_generate,
    die_after,
    die_on_marker,
    die_on_unknown_token_ids,
    diverge_in_batch,
    empty_object,
    flat_errors,
    grow_memory,
    leak_in_errors,
    not_found,
    open_route,
    perturb_logprobs,
    refuse_large,
    registered,
    shed_others,
    shuffle_parameters,
    slow_request,
    stall_others,
    stall_streams,
    unlisted_model,
    wrong_model,
)
from .server import FakeServer, Handler, main, serving_process

__all__ = [
    "ALPHABET", "CONTEXT_LENGTH", "DEVIATIONS", "DIE_MARKER", "DIVERGE_KINDS", "FAULTS",
    "FINISH_REASONS", "MARKERS", "MESSAGES", "MODEL", "NULL_MODES", "REASONING_PARSER",
    "RESPONSES", "SAMPLING_KEYS", "TOOL_PARSER", "TRACEBACK", "TYPED_STREAMS", "Deviation",
    "ErrorReply", "Event", "FakeServer", "FakeState", "Handler", "cannot_generate", "die_after",
    "die_on_marker", "die_on_unknown_token_ids", "diverge_in_batch", "empty_object",
    "error_body", "flat_errors", "forced_text", "generate_text", "grow_memory", "leak_in_errors",
    "main", "not_found", "open_route", "parse_reasoning", "parse_tool_calls", "perturb_logprobs",
    "refuse_large", "registered", "serving_process", "shed_others", "shuffle_parameters",
    "slow_request", "stall_others", "stall_streams", "unlisted_model", "wrong_model",
]  # fmt: skip

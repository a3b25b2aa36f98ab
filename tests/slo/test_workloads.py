"""Workloads of real traffic: multi-turn conversations, a prefix shared by a share of the prompts, trace replay,
and the server's prefix-cache hit share beside the latencies."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from pytest_infer.adapters import registry
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.load import LoadSpec, Workload, run_load
from pytest_infer.load.prompts import Calibration, PromptFactory
from pytest_infer.load.replay import (
    TraceError,
    TracePrompts,
    TraceRequest,
    gaps_ns,
    parse_trace,
    read_trace,
)
from pytest_infer.load.workloads import Conversations, bodies
from pytest_infer.slo.profiles import ProfileError, load_profile
from pytest_infer.slo.table import SloTable
from pytest_infer.testing.fakeserver import FakeServer

FIXED = Calibration(
    1.0, 0.0, "fixed for the test"
)  # one token per word: lengths in words are lengths in tokens
SAMPLE = Path(__file__).parent.parent / "data" / "mooncake_sample.jsonl"


def chats(srv: FakeServer) -> list[list[dict]]:
    return [
        body["messages"]
        for method, path, body in srv.requests
        if method == "POST" and path == "/v1/chat/completions"
    ]


# --- multi-turn -------------------------------------------------------------------------------


def test_turn_three_carries_turns_one_and_two_and_the_answers_between():
    talk = Conversations(Workload(turns=3, input_tokens=12, output_tokens=5), "m", FIXED)
    sent = []
    for i in range(3):
        sent.append(talk.body(i))
        talk.ended(i)
    first, second, third = (b["messages"] for b in sent)
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant", "user"]
    assert (
        third[:3] == second and third[:1] == first
    )  # each turn's prompt is the last one's plus an answer and a question
    assert [len(m["content"].split()) for m in third] == [
        12,
        5,
        12,
        5,
        12,
    ]  # questions of input_tokens, answers of output_tokens
    assert len({m["content"] for m in third}) == 5 and all(
        b["max_tokens"] == 5 and b["stream"] for b in sent
    )
    assert talk.body(3)["messages"] == talk.messages(
        3, 1
    )  # three turns done: request 3 opens a conversation (named after it)


def test_a_turn_waits_for_the_answer_before_it():
    talk = Conversations(Workload(turns=2, input_tokens=4, output_tokens=2), "m", FIXED)
    assert talk.body(0)["messages"] == talk.messages(0, 1)
    assert talk.body(1)["messages"] == talk.messages(
        1, 1
    )  # conversation 0 has no answer yet: a new one starts
    talk.ended(1)
    talk.ended(0)
    assert talk.body(2)["messages"] == talk.messages(
        1, 2
    )  # the one that has waited longest goes first
    assert talk.body(3)["messages"] == talk.messages(0, 2)


def test_multi_turn_run_sends_each_conversation_in_order():
    """Through the load client: four streams, conversations of three turns; no turn is sent before its answer is in."""
    with FakeServer() as srv:
        spec = LoadSpec(concurrency=4, requests=24, warmup_requests=0)
        run = run_load(
            Endpoint(srv.base_url, "fake-model"),
            spec,
            Workload(turns=3, input_tokens=6, output_tokens=3, ignore_eos=False),
            calibration=FIXED,
        )
    assert all(t.ok for t in run.traces)
    sent = chats(srv)
    turns = Counter((len(m) + 1) // 2 for m in sent)
    assert turns[1] >= turns[2] >= turns[3] >= turns[1] - 4  # at most four conversations unfinished
    for messages in sent:
        if len(messages) > 1:  # its previous turn went out first, with the same history
            assert messages[:-2] in sent[: sent.index(messages)]


def test_each_run_sends_fresh_prompts_unless_it_is_given_a_salt():
    """A server's prefix cache keeps an earlier run's prompts: a rerun of the same text would hit where the workload
    shares nothing."""
    texts = []
    with FakeServer() as srv:
        for salt in (None, None, "s", "s"):
            before = len(chats(srv))
            run_load(
                Endpoint(srv.base_url, "fake-model"),
                LoadSpec(requests=3, warmup_requests=0),
                Workload(input_tokens=8, output_tokens=2, ignore_eos=False),
                calibration=FIXED,
                salt=salt,
            )
            texts.append([m[0]["content"] for m in chats(srv)[before:]])
    assert all(len(t) == 3 and len(t[0].split()) == 8 for t in texts)
    assert not set(texts[0]) & set(texts[1]) and texts[2] == texts[3]


def test_shared_prefix_share_of_a_half_gives_half_the_prompts_the_same_opening():
    prompts = PromptFactory(FIXED, input_tokens=30, shared_prefix_tokens=20, share=0.5)
    texts = [prompts.prompt(i) for i in range(100)]
    openings = Counter(" ".join(t.split()[:20]) for t in texts)
    assert (
        openings.most_common(1)[0][1] == 50 and len(openings) == 51
    )  # 50 share the prefix, the other 50 are unique
    assert all(len(t.split()) == 30 for t in texts)  # the same length with or without the prefix
    assert [prompts.carries_prefix(i) for i in range(4)] == [
        False,
        True,
        False,
        True,
    ]  # spread evenly, not in a block


def test_conversations_share_the_prefix_by_conversation():
    talk = Conversations(
        Workload(
            turns=2,
            input_tokens=10,
            output_tokens=2,
            shared_prefix_tokens=6,
            shared_prefix_share=0.5,
        ),
        "m",
        FIXED,
    )
    for i in range(4):
        talk.body(i)  # four conversations, none answered yet
    opening = [talk.messages(c, 2)[0]["content"].split()[:6] for c in range(4)]
    assert opening[1] == opening[3] != opening[0] and opening[0] != opening[2]
    assert (
        talk.messages(1, 2)[2]["content"].split()[:6] != opening[1]
    )  # later questions are the conversation's own


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"turns": 2, "api": "completions"}, "chat messages"),
        ({"turns": 0}, "at least 1"),
        ({"shared_prefix_share": 1.5}, "between 0 and 1"),
        ({"trace_file": "t.jsonl", "turns": 2}, "drop turns"),
    ],
)
def test_workloads_that_do_not_go_together_are_refused(fields, error):
    with pytest.raises(ValueError, match=error):
        Workload(**fields)


# --- trace replay ------------------------------------------------------------------------------


def test_the_mooncake_sample_parses_to_offsets_lengths_and_blocks():
    trace = read_trace(SAMPLE)
    lines = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    assert len(trace) == len(lines) == 24
    assert [r.offset_ms for r in trace] == [line["timestamp"] for line in lines]
    assert trace[0] == TraceRequest(0.0, 369, 24, (0, 1, 2))
    assert gaps_ns(trace, speedup=2.0)[:3] == [
        0,
        8_500_000,
        36_000_000,
    ]  # 0, 17, 89 ms at twice the speed


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            '{"timestamp": 0, "input_length": 5, "output_length": 2}\nnot json\n',
            r"trace:2: not JSON",
        ),
        (
            (
                '{"timestamp": 10, "input_length": 5, "output_length": 2}\n{"timestamp": 5, "input_length": 5,'
                ' "output_length": 2}\n'
            ),
            "trace:2: .* arrival order",
        ),
        (
            '{"timestamp": 0, "output_length": 2}\n',
            r"trace:1: input_length must be an integer >= 1, not None",
        ),
        (
            '{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1, "a"]}\n',
            "trace:1: hash_ids must be a list of integers",
        ),
        ("\n\n", "no requests"),
    ],
)
def test_a_bad_trace_is_refused_naming_the_line(text, error):
    with pytest.raises(TraceError, match=error):
        parse_trace(text)


def test_shared_hash_ids_become_the_same_prompt_text():
    texts = TracePrompts(FIXED, block_tokens=8)
    a = texts.prompt(0, TraceRequest(0, 20, 1, (0, 1, 2))).split()
    b = texts.prompt(1, TraceRequest(0, 24, 1, (0, 1, 3))).split()
    c = texts.prompt(2, TraceRequest(0, 10, 1, ())).split()
    assert (len(a), len(b), len(c)) == (20, 24, 10)  # input_length, the last block cut to fit
    assert a[:16] == b[:16] and a[16:] != b[16:20]  # blocks 0 and 1 shared, block 2 and 3 not
    assert c[:8] != a[:8]


def test_a_replayed_trace_is_sent_at_the_recorded_offsets(paced_server):
    url = paced_server(5, 1)
    workload = Workload(trace_file=str(SAMPLE), ignore_eos=False)
    spec = LoadSpec(mode="replay", requests=100, warmup_requests=2, speedup=2.0)
    run = run_load(Endpoint(url, "paced-model"), spec, workload, calibration=FIXED)
    trace = read_trace(SAMPLE)
    assert (
        len(run.traces) == 24
        and [t.phase for t in run.traces] == ["warmup"] * 2 + ["measured"] * 22
    )  # the trace's end ends the run
    start = run.traces[0].intended_ns
    for t, r in zip(run.traces, trace):
        assert t.intended_ns - start == pytest.approx(
            r.offset_ms * 1e6 / 2, abs=1e3
        )  # the recorded offset, at twice the speed
        assert t.ok and t.usage_completion_tokens == r.output_length
    lags_ms = sorted((t.sent_ns - t.intended_ns) / 1e6 for t in run.traces)
    assert lags_ms[0] >= 0 and lags_ms[len(lags_ms) // 2] < 5 and lags_ms[-1] < 25, (
        lags_ms
    )  # sent within a few ms of its time


def test_replay_needs_a_trace_and_a_trace_needs_replay():
    with pytest.raises(ValueError, match="replay load needs a workload with a trace_file"):
        run_load(
            Endpoint("http://127.0.0.1:9", "m"),
            LoadSpec(mode="replay"),
            Workload(),
            calibration=FIXED,
        )


def test_the_bodies_of_a_replay_are_the_trace_lines():
    source = bodies(Workload(trace_file=str(SAMPLE), trace_block_tokens=128), "m", FIXED)
    body = source.body(3)
    assert body["max_tokens"] == 11 and len(body["messages"][0]["content"].split()) == 222


# --- profile settings --------------------------------------------------------------------------

PROFILE = """
name: traffic
hardware: {accelerator: cpu}
defaults: {requests: 20, output_tokens: 8, warmup_requests: 2}
models:
  tiny:
    load_points:
      - {id: chat, concurrency: 2, turns: 4, input_tokens: 64, thresholds: {ttft_p50_ms: 100}}
      - {id: prefix, concurrency: 2, input_tokens: 64, shared_prefix_tokens: 32, shared_prefix_share: 0.25,
         thresholds: {ttft_p50_ms: 100}}
      - {id: trace, trace_file: data/t.jsonl, trace_speedup: 4, trace_block_tokens: 64, requests: 10,
         thresholds: {ttft_p50_ms: 100}}
"""


def write_profile(tmp_path, text: str, trace: str | None = None) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "t.jsonl").write_text(trace if trace is not None else SAMPLE.read_text())
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_profile_settings_build_the_workloads(tmp_path):
    points = {
        p.id: p for p in load_profile(write_profile(tmp_path, PROFILE)).load_points("tiny", "vllm")
    }
    assert (
        points["chat"].workload(registry.get("vllm")).turns == 4
        and points["chat"].load_spec().mode == "closed"
    )
    prefix = points["prefix"].workload(registry.get("vllm"))
    assert (prefix.shared_prefix_tokens, prefix.shared_prefix_share) == (32, 0.25)
    spec, workload = points["trace"].load_spec(), points["trace"].workload(registry.get("vllm"))
    assert (spec.mode, spec.speedup, spec.requests, spec.rate, spec.label) == (
        "replay",
        4,
        10,
        None,
        "replay x4",
    )
    assert (
        workload.trace_file == str(tmp_path / "data" / "t.jsonl")
        and workload.trace_block_tokens == 64
    )  # relative to the profile
    del points["trace"].settings["requests"]
    assert points["trace"].load_spec().requests == 22  # by default every line after the warm-up


@pytest.mark.parametrize(
    ("point", "trace", "error"),
    [
        (
            "{id: x, api: completions, turns: 2, thresholds: {}}",
            None,
            r"load_points\[0\].turns: multi-turn conversations are chat messages",
        ),
        (
            "{id: x, shared_prefix_share: 0.5, thresholds: {}}",
            None,
            r"shared_prefix_share: .* needs shared_prefix_tokens",
        ),
        (
            "{id: x, turns: 0, thresholds: {}}",
            None,
            r"load_points\[0\].turns: 0 is less than the minimum of 1",
        ),
        (
            "{id: x, trace_speedup: 2, thresholds: {}}",
            None,
            r"trace_speedup: only a replayed trace \(trace_file\) uses it",
        ),
        (
            "{id: x, trace_file: data/t.jsonl, concurrency: 4, turns: 2, thresholds: {}}",
            None,
            "brings its own arrivals, lengths and sharing; drop concurrency, turns",
        ),
        (
            "{id: x, trace_file: data/none.jsonl, thresholds: {}}",
            None,
            r"trace_file: .*none.jsonl: No such file",
        ),
        (
            "{id: x, trace_file: data/t.jsonl, thresholds: {}}",
            '{"timestamp": 0}\n',
            r"trace_file: .*t.jsonl:1: input_length must be",
        ),
        (
            "{id: x, trace_file: data/t.jsonl, requests: 30, thresholds: {}}",
            None,
            "the trace's 24 requests leave 22 to measure after warmup_requests 2, not the 30",
        ),
    ],
)
def test_bad_workload_settings_are_refused_naming_the_key(tmp_path, point, trace, error):
    text = (
        "name: bad\nhardware: {accelerator: cpu}\ndefaults: {warmup_requests: 2}\nmodels:\n  tiny:\n   "
        f" load_points:\n      - {point}\n"
    )
    with pytest.raises(ProfileError, match=error):
        load_profile(write_profile(tmp_path, text, trace))


# --- the hit share in the report ---------------------------------------------------------------


def entry(hits: int | None, queries: int | None) -> dict:
    server = {"requests": 10, "check": {"client": {"requests": 10}}}
    if hits is not None:
        server |= {"prefix_cache_hits": hits, "prefix_cache_queries": queries}
    return {
        "target": "vllm",
        "profile": "p",
        "load_point": "x",
        "verdict": "pass",
        "metrics": {"ttft_p50_ms": 12.0},
        "server": server,
    }


def rows(*entries: dict) -> dict:
    section = SloTable(list(entries)).sections()[0]
    return {row: cells["vllm"] for row, cells in section.rows.items()}


def test_the_hit_share_sits_beside_the_latencies_summed_over_the_runs():
    cell = rows(entry(300, 1000), entry(100, 1000))["p/x server prefix-cache hit share"]
    assert (cell.text, cell.value) == (
        "20.0%",
        0.2,
    ) and cell.detail == "400 of 2000 prompt tokens from the prefix cache"
    assert "p/x ttft_p50_ms" in rows(entry(0, 10))
    off = rows(entry(0, 0))["p/x server prefix-cache hit share"]
    assert off.text == "no lookups" and off.value is None
    assert "p/x server prefix-cache hit share" not in rows(
        entry(None, None)
    )  # a server that does not count them: no row

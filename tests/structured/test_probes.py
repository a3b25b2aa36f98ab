"""The grammar probes can fail on what they name: a fake server whose "grammar" lets one pushed token
through fails exactly that probe, with its reproducer; one that masks everything passes them all; a
server that ignores logit_bias or has no tokenize route makes them inconclusive or unsupported, never a pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip(
    "matplotlib.figure"
)  # loaded once here: pytester's in-process runs cannot re-import numpy

from pytest_infer.structured.probes import BIAS, BY_ID, CONTROL_PUSH, PROBES, body  # noqa: E402
from pytest_infer.structured.strategies import KEYWORDS  # noqa: E402
from pytest_infer.testing.fakeserver import Deviation, FakeServer  # noqa: E402

SUITE = Path(__file__).resolve().parents[2] / "suites" / "structured"
# What a correct grammar lets the pushed model write, per probe (the push masked, something else chosen).
MASKED = {
    "maxLength": '"aaa"', "maxLength+pattern": '"aaaa"', "maxLength+format": '"a@b.c"', "minLength": '"abcde"',
    "maximum": "5", "exclusiveMaximum": "5", "minimum": "3", "integer": "7", "enum": '"red"', "const": '"ok"',
    "additionalProperties": '{"a": 1}', "required": '{"a": 1}', "minItems": "[1, 2, 3]", "maxItems": "[1, 2]",
    "boolean": "true", "string-control-characters": '"\\n\\t"',
    "pattern": '"abc"', "format": '"2024-01-01"', "exclusiveMinimum": "7", "multipleOf": "5",
    "properties": '{"a": true}',
    "items": "[true]", "prefixItems": "[false]", "uniqueItems": "[true, false]", "anyOf": "null", "oneOf": "true",
    "allOf": '"red"', "$ref": "false",
}  # fmt: skip
# Keywords the sweep generates that no probe is named after, and the probe that constrains them.
PROBED_BY = {"type": "integer", "$defs": "$ref"}


def tokenize(path: str, request: dict):
    """Byte-level token ids, like the built-in tiny model's tokenizer."""
    if path == "/tokenize":
        return 200, {
            "tokens": list(request["prompt"].encode()),
            "count": len(request["prompt"].encode()),
        }
    return None


def probe_of(request: dict) -> str | None:
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema")
    return next((p.id for p in PROBES if p.schema == schema), None)


def grammar(
    leaks: dict[str, tuple[str, str]] | None = None,
    *,
    applies_bias: bool = True,
    tokenizes: bool = True,
) -> Deviation:
    """A server whose grammar masks every pushed token except those of ``leaks`` (probe -> output, finish_reason)."""

    def request(path: str, request: dict):
        if path == "/tokenize":
            return tokenize(path, request) if tokenizes else (404, {"detail": "Not Found"})
        if path != "/v1/chat/completions" or "logit_bias" not in request:
            return None
        probe = probe_of(request)
        if probe is None:  # the control request: pushed to one token, greedy
            text, reason = (
                (CONTROL_PUSH * request["max_tokens"] if applies_bias else "hello"),
                "length",
            )
        else:
            text, reason = (leaks or {}).get(probe, (MASKED[probe], "stop"))
        return 200, {"id": "chatcmpl-probe", "object": "chat.completion", "created": 0, "model": request["model"],
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": reason}],
                     "usage": {"prompt_tokens": 4, "completion_tokens": 4, "total_tokens": 8}}  # fmt: skip

    return Deviation(request=request)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(
        SUITE, pytester.path / "structured", ignore=shutil.ignore_patterns("__pycache__")
    )
    return pytester


def run(pytester: pytest.Pytester, server: FakeServer) -> pytest.RunResult:
    return pytester.runpytest(
        "structured/test_probes.py",
        f"--infer-endpoint={server.base_url}",
        "--infer-report-dir=report",
        "-p",
        "no:cacheprovider",
        "-rs",
    )


def outcomes(pytester: pytest.Pytester) -> dict[str, str]:
    """Probe id -> outcome (the longest id that the test's parameters name: maxLength+pattern before maxLength)."""
    tests = json.loads((pytester.path / "report" / "results.json").read_text())["tests"]
    ids = sorted(BY_ID, key=len, reverse=True)
    return {next(i for i in ids if i in t["nodeid"].split("[", 1)[1]): t["outcome"] for t in tests}


def test_a_grammar_that_masks_every_push_passes_every_probe(suite):
    with FakeServer(grammar()) as server:
        result = run(suite, server)
        requests = [b for m, p, b in server.state.requests if p == "/v1/chat/completions"]
    result.assert_outcomes(passed=len(PROBES))
    tests = json.loads((suite.path / "report" / "results.json").read_text())["tests"]
    assert {t["extra"].get("evidence") for t in tests} == {
        "POST /v1/chat/completions via response_format: 1 answers, 1 valid"
    }  # what each probe's pass judged: the one answer it pushed, valid
    sent = {probe_of(r): r for r in requests if probe_of(r)}
    assert sent["maxLength"]["logit_bias"] == {"97": BIAS} and sent["maxLength"]["temperature"] == 0
    assert sent["string-control-characters"]["logit_bias"] == {"10": BIAS, "9": BIAS, "1": BIAS}


# One leak per probe the sweep's keywords rely on: (probe, (what the leaking grammar lets through, finish_reason),
# what the validator says of it).
LEAKS = [
    ("maxLength", ('"aaaaaa"', "stop"), "is too long"),
    ("maximum", ("9", "stop"), "9 is greater than the maximum of 5"),
    ("enum", ('"blue"', "stop"), "'blue' is not one of *'red', 'green'*"),
    (
        "additionalProperties",
        ('{"a": 1, "z": 2}', "stop"),
        "Additional properties are not allowed ('z' was unexpected)",
    ),
    ("minItems", ("[1]", "stop"), "is too short"),
    ("string-control-characters", ('"\t\t"', "stop"), "Invalid control character"),
    ("pattern", ('"abz"', "stop"), "'abz' does not match '^?a-c?{1,3}$'"),
    ("format", ('"x024-01-01"', "stop"), "'x024-01-01' is not a 'date'"),
    ("exclusiveMinimum", ("2", "stop"), "2 is less than or equal to the minimum of 3"),
    ("multipleOf", ("3", "stop"), "3 is not a multiple of 5"),
    ("properties", ('{"a": "x"}', "stop"), "'x' is not of type 'boolean'"),
    ("items", ('["x"]', "stop"), "'x' is not of type 'boolean'"),
    ("prefixItems", ('["x"]', "stop"), "'x' is not of type 'boolean'"),
    ("uniqueItems", ("[true, true]", "stop"), "*has non-unique elements"),
    ("anyOf", ('"x"', "stop"), "'x' is not valid under any of the given schemas"),
    ("oneOf", ('"x"', "stop"), "'x' is not valid under any of the given schemas"),
    ("allOf", ('"blue"', "stop"), "'blue' is not one of *'red', 'green'*"),
    ("$ref", ('"x"', "stop"), "'x' is not of type 'boolean'"),
]


@pytest.mark.parametrize("half", [0, 1], ids=["even", "odd"])
def test_a_leaked_push_fails_that_probe_alone_with_a_reproducer(suite, half):
    """Half the probes leak at once (two sessions instead of one per probe): each leaked probe fails with its own
    reproducer, and the other half, asked in the same session, still passes."""
    leaks = LEAKS[half::2]
    with FakeServer(grammar({probe: leak for probe, leak, _ in leaks})) as server:
        result = run(suite, server)
    result.assert_outcomes(passed=len(PROBES) - len(leaks), failed=len(leaks))
    sections = "\n".join(result.outlines).split("\n___")
    for probe, _, why in leaks:
        (section,) = [
            text for text in sections if text.split("\n", 1)[0].rstrip(" _").endswith(f"-{probe}]")
        ]
        fnmatch_lines(
            section, [f"*{probe}: the grammar let through {BY_ID[probe].push!r}*", f"*{why}*"]
        )
        fnmatch_lines(section, ["*reproduce: curl *logit_bias*"])
    assert {k for k, v in outcomes(suite).items() if v == "failed"} == {
        probe for probe, _, _ in leaks
    }


def fnmatch_lines(text: str, patterns: list[str]) -> None:
    pytest.LineMatcher(text.splitlines()).fnmatch_lines(patterns)


def test_every_keyword_the_sweep_generates_has_a_probe():
    named = {part for probe in PROBES for part in probe.id.split("+")}
    assert KEYWORDS - named == set(PROBED_BY) and set(PROBED_BY.values()) <= set(BY_ID)


def test_a_probe_answer_cut_at_the_token_limit_is_inconclusive_not_a_pass(suite):
    """``[1, 2`` can still become ``[1, 2, 3]``: the mask before the third item was never reached."""
    with FakeServer(grammar({"minItems": ("[1, 2", "length")})) as server:
        result = run(suite, server)
    result.assert_outcomes(passed=len(PROBES) - 1, skipped=1)
    assert {k: v for k, v in outcomes(suite).items() if v != "passed"} == {
        "minItems": "inconclusive"
    }
    result.stdout.fnmatch_lines(
        [
            "*inconclusive: minItems: the answer is truncated, not valid, so the mask at closing an array*'[1, 2'*"
        ]
    )


def test_a_server_that_ignores_logit_bias_makes_every_probe_inconclusive(suite):
    with FakeServer(grammar(applies_bias=False)) as server:
        result = run(suite, server)
    result.assert_outcomes(skipped=len(PROBES))
    result.stdout.fnmatch_lines(
        ["*inconclusive: the server does not apply logit_bias (pushed to 'a', it wrote 'hello')*"]
    )


def test_a_server_without_a_tokenize_route_is_unsupported(suite):
    with FakeServer(grammar(tokenizes=False)) as server:
        result = run(suite, server)
    result.assert_outcomes(skipped=len(PROBES))
    assert set(outcomes(suite).values()) == {"unsupported"}
    result.stdout.fnmatch_lines(
        [
            "*HTTP 404: the probes need the model's token ids; give its tokenizer with --structured-tokenizer=PATH*"
        ]
    )


def shifted_byte_tokenizer(path: Path) -> Path:
    """A byte-level tokenizer.json whose ids are the byte values + 1000, so ids taken from it cannot pass for bytes."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from pytest_infer.models.tiny_build import byte_level_symbols

    tok = Tokenizer(
        models.BPE(
            vocab={symbol: b + 1000 for b, symbol in byte_level_symbols().items()}, merges=[]
        )
    )
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    file = path / "tokenizer.json"
    tok.save(str(file))
    return file


def test_without_a_tokenize_route_the_model_tokenizer_file_gives_the_ids(suite, tmp_path):
    pytest.importorskip("tokenizers")
    file = shifted_byte_tokenizer(tmp_path)
    with FakeServer(grammar(tokenizes=False)) as server:
        result = suite.runpytest(
            "structured/test_probes.py",
            f"--infer-endpoint={server.base_url}",
            "--infer-report-dir=report",
            f"--structured-tokenizer={file}",
            "-p",
            "no:cacheprovider",
        )
        requests = [b for m, p, b in server.state.requests if p == "/v1/chat/completions"]
    result.assert_outcomes(passed=len(PROBES))
    tests = json.loads((suite.path / "report" / "results.json").read_text())["tests"]
    assert {t["extra"].get("evidence") for t in tests} == {
        "POST /v1/chat/completions via response_format: 1 answers, 1 valid"
    }  # what each probe's pass judged: the one answer it pushed, valid
    sent = {probe_of(r): r for r in requests if probe_of(r)}
    assert sent["maxLength"]["logit_bias"] == {"1097": BIAS}
    assert sent["string-control-characters"]["logit_bias"] == {
        "1010": BIAS,
        "1009": BIAS,
        "1001": BIAS,
    }


def test_a_launched_server_without_a_tokenize_route_gets_the_ids_from_its_model_folder(
    suite, tmp_path
):
    """The fake vLLM has no /tokenize and ignores logit_bias: with the model folder's tokenizer the probes get as far
    as the control request (inconclusive, naming what the server wrote), not "unsupported"."""
    pytest.importorskip("tokenizers")
    from core.fakeenv import make_fake_env

    model = tmp_path / "model"
    model.mkdir()
    shifted_byte_tokenizer(model)
    env = make_fake_env(tmp_path / "vllm-cpu-0.99.0")
    result = suite.runpytest_subprocess(
        "structured/test_probes.py", "--infer-framework=vllm", f"--infer-env=vllm={env}", f"--infer-model={model}",
        "--infer-report-dir=report", "-p", "no:cacheprovider", "-rs",
    )  # fmt: skip
    result.assert_outcomes(skipped=len(PROBES))
    result.stdout.fnmatch_lines(
        ["*inconclusive: the server does not apply logit_bias (pushed to 'a', it wrote *"]
    )


def test_a_tokenizer_option_that_names_no_tokenizer_is_a_usage_error(suite, tmp_path):
    result = suite.runpytest(
        "structured/test_probes.py",
        "--infer-endpoint=http://127.0.0.1:9",
        f"--structured-tokenizer={tmp_path}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--structured-tokenizer: * is neither a tokenizer.json file nor a folder holding one*"]
    )


def test_the_probe_request_is_greedy_with_the_highest_bias():
    request = body(BY_ID["enum"], "m", [98, 98])
    assert request["temperature"] == 0 and request["logit_bias"] == {"98": 100}
    assert request["response_format"]["json_schema"]["schema"] == {"enum": ["red", "green"]}

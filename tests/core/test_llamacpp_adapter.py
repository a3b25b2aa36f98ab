"""llama.cpp's adapter without building anything: its launch line, where its key goes, how it names its version,
how it reaches the tiny model's GGUF, and the names users type for it."""

from __future__ import annotations

import csv
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from pytest_infer.adapters import registry
from pytest_infer.adapters.base import Environment, LaunchRequest
from pytest_infer.adapters.llamacpp import (
    API_KEY_VARIABLE,
    LlamaCppAdapter,
    csv_field,
    no_repack_flags,
    parse_version,
)
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.models.gemma import GEMMA, ModelError
from pytest_infer.models.tiny import TINY, converter_of
from pytest_infer.options import parse_environments, parse_frameworks

ENV = Environment(label="llamacpp-0.3.36", python="/e/bin/python", bin_dir=Path("/e/bin"))
# /proc/cpuinfo as two machine kinds show it: this project's AVX2-only AMD EPYC, and a Sapphire Rapids Xeon with AMX
AVX2_ONLY = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx avx2 fma bmi2\n"
AMX = (
    "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C\nflags\t\t: fpu avx2 avx512f avx512_vnni"
    " avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8\n"
)


@pytest.fixture(autouse=True)
def avx2_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every launch here reads an AVX2-only CPU's flags, whatever machine runs the tests; a test may rewrite it."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(AVX2_ONLY)
    monkeypatch.setattr("pytest_infer.adapters.llamacpp.CPUINFO", cpuinfo)
    return cpuinfo


def test_the_cpu_flags_that_turn_repacking_off_are_read_from_cpuinfo(tmp_path: Path):
    (tmp_path / "amx").write_text(AMX)
    (tmp_path / "fp16").write_text("flags\t\t: fpu avx512f avx512_fp16\nbugs\t\t: amx_tile_like\n")
    (tmp_path / "avx2").write_text(AVX2_ONLY)
    assert no_repack_flags(tmp_path / "amx") == ["amx_tile", "amx_int8", "amx_bf16", "avx512_fp16"]
    assert no_repack_flags(tmp_path / "fp16") == ["avx512_fp16"]  # the bugs line is no flag
    assert no_repack_flags(tmp_path / "avx2") == [] and no_repack_flags(tmp_path / "missing") == []


def test_on_an_amx_cpu_the_weights_load_unrepacked_and_the_launch_says_why(avx2_host: Path):
    gemma = LaunchRequest("/cache/gemma-3-270m-q4_k_m.gguf", "gemma-3-270m", "127.0.0.1", 8123, ENV)
    plain = LlamaCppAdapter().launch(gemma)
    assert "--no-repack" not in plain.argv and plain.notes == ()
    avx2_host.write_text(AMX)
    spec = LlamaCppAdapter().launch(gemma)
    assert spec.argv[-1] == "--no-repack" and spec.argv.count("--no-repack") == 1
    (note,) = spec.notes
    assert note.startswith(
        "llama-server launched with --no-repack: this CPU has amx_tile, amx_int8, amx_bf16,"
    )
    assert "SIGILL" in note and "--infer-server-arg=--repack overrides it" in note
    chosen = LlamaCppAdapter().launch(
        LaunchRequest(
            "/m.gguf", "m", "127.0.0.1", 1, ENV, extra_args=("--repack", "--threads", "2")
        )
    )
    assert "--no-repack" not in chosen.argv and chosen.argv[-3:] == ["--repack", "--threads", "2"]
    assert chosen.notes == ()


def fake_engine(root: Path, version_line: str) -> Environment:
    """A folder whose bin/llama-server answers --version as llama-server does (on stderr), and a python beside it."""
    bindir = root / "bin"
    bindir.mkdir(parents=True)
    server = bindir / "llama-server"
    server.write_text(
        f"#!/bin/sh\necho '{version_line}' >&2\necho 'built with GNU 12.2.0 for Linux x86_64' >&2\n"
    )
    server.chmod(0o755)
    (bindir / "python").symlink_to(sys.executable)
    return Environment.from_spec(str(root))


def test_the_tiny_launch_line_serves_its_gguf_with_templates_metrics_and_four_slots():
    request = LaunchRequest("/cache/tiny.gguf", "tiny", "127.0.0.1", 8123, ENV, builtin=TINY)
    spec = registry.get("llamacpp").launch(request)
    assert spec.argv[1:] == [
        "--model", "/cache/tiny.gguf", "--alias", "tiny", "--host", "127.0.0.1", "--port", "8123",
        "--jinja", "--metrics", "--parallel", "4", "--ctx-size", "4096",  # 1024 tokens a slot, as vLLM's tiny
        "--threads", "1",
    ]  # fmt: skip
    assert spec.argv[0].endswith("llama-server") and spec.env == {}
    assert spec.ready_paths == ("/health", "/v1/models")


def test_a_gguf_without_a_template_gets_the_template_file_and_a_real_model_no_context_of_ours():
    request = LaunchRequest("/m.gguf", "gemma-3-270m", "127.0.0.1", 1, ENV, builtin=GEMMA)
    argv = LlamaCppAdapter().launch(request).argv
    assert argv[argv.index("--chat-template-file") + 1] == str(GEMMA.chat_template)
    assert (
        "--chat-template-file" not in LlamaCppAdapter().launch(replace(request, builtin=TINY)).argv
    )
    argv = LlamaCppAdapter().launch(replace(request, builtin=None)).argv
    assert not {"--chat-template-file", "--ctx-size", "--parallel", "--threads"} & set(argv)


@pytest.mark.parametrize(
    "key", ["sk-plain", 'sk-with,comma and "quotes"', "#sk-a-comment-in-a-key-file"]
)
def test_the_key_goes_in_its_variable_as_one_csv_field_and_never_on_argv(key: str):
    spec = LlamaCppAdapter().launch(LaunchRequest("/m.gguf", "m", "127.0.0.1", 1, ENV, api_key=key))
    assert not any(key in arg or "api-key" in arg for arg in spec.argv)
    # llama.cpp reads the variable as a CSV row of keys: read back, it is this one key and no other
    assert list(csv.reader([spec.env[API_KEY_VARIABLE]])) == [[key]]


def test_a_comma_unquoted_would_be_two_keys():
    """Why the key is quoted: the row parser that reads LLAMA_API_KEY splits it (the key's half would open it)."""
    assert list(csv.reader(["sk-a,b"])) == [["sk-a", "b"]] and list(
        csv.reader([csv_field("sk-a,b")])
    ) == [["sk-a,b"]]


@pytest.mark.parametrize(
    ("line", "version", "commit", "error"),
    [
        # the binding's source: no history, build 0, the commit the install step built in: the table's release
        ("version: 0.5.0-dev (build 0, commit 0c1e57098)", "b11312", "0c1e57098", None),
        ("version: 0.5.0-dev (build 0, commit 4df29be4f)", "b10454", "4df29be4f", None),
        ("version: 0 (e3546c794)", "b9976", "e3546c794", None),  # how b9976 and before say it
        ("version: 9976 (e3546c794)", "b9976", "e3546c794", None),
        # a git checkout counts its own commits: that is the release
        ("version: 0.5.0-dev (build 11400, commit 1a2b3c4)", "b11400", "1a2b3c4", None),
        # a commit of no known release: named by its commit
        ("version: 0.5.0-dev (build 0, commit deadbee)", "deadbee", "deadbee", None),
        (
            "version: 0.5.0-dev (build 0, commit unknown)",
            None,
            None,
            "neither a build number nor a commit",
        ),
        ("llama-server: command not found", None, None, "no llama.cpp 'version: ...' line"),
    ],
)
def test_the_version_is_the_release_users_name(line, version, commit, error):
    found = parse_version(line, "llama-server --version")
    assert (found.version, found.commit) == (version, commit)
    assert (error is None and found.error is None) or error in (found.error or "")


def test_the_version_comes_from_the_servers_own_answer(tmp_path: Path):
    env = fake_engine(
        tmp_path / "llamacpp-0.3.36", "version: 0.5.0-dev (build 0, commit 0c1e57098)"
    )
    found = registry.get("llamacpp").detect_version(env)
    assert (found.version, found.commit, found.distribution) == ("b11312", "0c1e57098", "llama.cpp")
    assert found.source.endswith("llama-server --version")


def test_a_commit_outside_the_table_says_so_in_its_source(tmp_path: Path):
    env = fake_engine(tmp_path / "llamacpp-9.9.9", "version: 0.5.0-dev (build 0, commit abcdef123)")
    found = registry.get("llamacpp").detect_version(env)
    assert found.version == "abcdef123" and "in no release table" in found.source


def test_an_engine_without_its_converter_cannot_make_tinys_gguf_and_says_how_to_get_one(
    tmp_path: Path,
):
    env = fake_engine(
        tmp_path / "llamacpp-0.3.36", "version: 0.5.0-dev (build 0, commit 0c1e57098)"
    )
    with pytest.raises(
        ModelError, match="keeps no llama.cpp converter.*scripts/install-engines.sh"
    ):
        TINY.path(registry.get("llamacpp").model_form, env)


def test_the_converter_is_the_one_the_install_step_keeps(tmp_path: Path):
    env = fake_engine(
        tmp_path / "llamacpp-0.3.36", "version: 0.5.0-dev (build 0, commit 0c1e57098)"
    )
    kept = tmp_path / "llamacpp-0.3.36" / "share" / "llama.cpp"
    kept.mkdir(parents=True)
    (kept / "convert_hf_to_gguf.py").write_text("")
    assert converter_of(env) == kept


def test_users_may_name_it_as_the_project_or_its_server_is_named(tmp_path: Path):
    assert parse_frameworks("llama.cpp,vllm,llama-server") == ("llamacpp", "vllm")
    env = fake_engine(
        tmp_path / "llamacpp-0.3.36", "version: 0.5.0-dev (build 0, commit 0c1e57098)"
    )
    assert list(parse_environments([f"llama.cpp={env.bin_dir.parent}"], ("llamacpp",))) == [
        "llamacpp"
    ]
    with pytest.raises(pytest.UsageError, match="unknown framework 'llama'"):
        parse_frameworks("llama")


def test_the_context_of_one_slot_is_read_from_the_model_cards_meta():
    """llama.cpp advertises a request's context only as ``meta.n_ctx``; the suites size their over-long prompts by
    it (the tiny model's 2048 positions would be twice what one of its slots holds)."""
    card = {"id": "tiny", "owned_by": "llamacpp", "meta": {"n_ctx": 1024, "n_ctx_train": 2048}}

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"object": "list", "data": [card]})

    endpoint = Endpoint("http://llama.invalid", "tiny")
    with httpx.Client(base_url=endpoint.base_url, transport=httpx.MockTransport(answer)) as client:
        assert endpoint.context_length(client) == 1024
        card["meta"] = {"n_ctx_train": 2048}
        assert endpoint.context_length(client) is None

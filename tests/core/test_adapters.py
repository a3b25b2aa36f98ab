"""Each adapter's exact command line and environment, and version detection per adapter."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from pytest_infer.adapters import registry
from pytest_infer.adapters.base import (
    Environment,
    FrameworkVersion,
    LaunchRequest,
    VersionRoute,
    probe_python_version,
)
from pytest_infer.adapters.external import ENDPOINT, detect_endpoint
from pytest_infer.adapters.lmdeploy import LMDeployAdapter
from pytest_infer.adapters.sglang import SGLangAdapter
from pytest_infer.adapters.transformers import TransformersAdapter
from pytest_infer.adapters.vllm import VLLMAdapter
from pytest_infer.conformance.declarations import BUNDLED as BUNDLED_EXPECTATIONS
from pytest_infer.conformance.declarations import ExpectationsError, bundled_files
from pytest_infer.conformance.declarations import load as load_expectations
from pytest_infer.models.gemma import GEMMA
from pytest_infer.models.tiny import TINY
from pytest_infer.slo.profiles import LoadPoint
from pytest_infer.structured.runner import paths_for
from pytest_infer.testing.fakeserver import Deviation, FakeServer

from .fakeenv import make_fake_env

ENV = Environment(label="venv", python="/opt/env/bin/python", bin_dir=Path("/opt/env/bin"))


def request(**overrides) -> LaunchRequest:
    fields = dict(
        model="org/model-7b",
        served_model_name="org/model-7b",
        host="127.0.0.1",
        port=8123,
        environment=ENV,
    )
    fields.update(overrides)
    return LaunchRequest(**fields)


def test_registry_names_every_framework():
    assert registry.names() == [
        "vllm",
        "sglang",
        "lmdeploy",
        "trtllm",
        "tgi",
        "transformers",
        "llamacpp",
    ]


def test_vllm_argv_gpu_build():
    spec = registry.get("vllm").launch(request(extra_args=("--tensor-parallel-size", "2")))
    assert spec.argv == [
        "/opt/env/bin/python", "-m", "vllm.entrypoints.openai.api_server",
        "--model", "org/model-7b", "--served-model-name", "org/model-7b",
        "--host", "127.0.0.1", "--port", "8123", "--tensor-parallel-size", "2",
    ]  # fmt: skip
    assert spec.env == {
        "VLLM_ENABLE_RESPONSES_API_STORE": "1"
    }  # stored responses: retrieve, chaining, cancel


def test_vllm_cpu_tiny_sets_cpu_flags_and_keeps_key_off_argv():
    spec = registry.get("vllm").launch(
        request(
            model="/cache/tiny",
            served_model_name="tiny",
            builtin=TINY,
            api_key="sk-secret",
            version=FrameworkVersion("0.32.0", distribution="vllm-cpu"),
        )
    )
    assert spec.argv[-14:] == [
        "--max-model-len", "1024", "--dtype", "float32", "--enable-prompt-tokens-details",
        "--enable-auto-tool-choice", "--tool-call-parser", "pythonic", "--reasoning-parser", "qwen3",
        "--structured-outputs-config", '{"enable_in_reasoning": true}',
        "--default-chat-template-kwargs", '{"enable_thinking": false}',  # thinking only where a request asks for it
    ]  # fmt: skip
    assert spec.env == {
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_RESPONSES_API_STORE": "1",
        "VLLM_API_KEY": "sk-secret",
    }
    assert "sk-secret" not in " ".join(spec.argv)


def test_vllm_tiny_takes_the_users_tool_parser_instead_of_the_default():
    spec = registry.get("vllm").launch(
        request(
            model="/cache/tiny",
            served_model_name="tiny",
            builtin=TINY,
            extra_args=("--enable-auto-tool-choice", "--tool-call-parser", "hermes"),
        )
    )
    assert spec.argv.count("--tool-call-parser") == 1 and spec.argv[-1] == "hermes"
    assert "--reasoning-parser" not in spec.argv  # a named parser is judged alone


def test_vllm_tiny_takes_the_users_reasoning_parser_instead_of_the_default():
    extra = ("--reasoning-parser", "qwen3")
    spec = registry.get("vllm").launch(
        request(model="/cache/tiny", served_model_name="tiny", builtin=TINY, extra_args=extra)
    )
    assert spec.argv.count("--reasoning-parser") == 1 and spec.argv[-1] == "qwen3"
    assert spec.argv[spec.argv.index("--tool-call-parser") + 1] == "pythonic"


def test_sglang_argv_gpu():
    spec = registry.get("sglang").launch(request(extra_args=("--tp", "2")))
    assert spec.argv == [
        "/opt/env/bin/python", "-m", "sglang.launch_server",
        "--model-path", "org/model-7b", "--served-model-name", "org/model-7b",
        "--host", "127.0.0.1", "--port", "8123", "--enable-metrics",
        "--enable-response-store",  # stored responses: retrieve, previous_response_id, background (400 without it)
        "--tp", "2",
    ]  # fmt: skip
    assert spec.env == {}
    assert spec.ready_paths == ("/health", "/v1/models")


def test_sglang_cpu_tiny_runs_the_cpu_engine_in_float32(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("pytest_infer.adapters.sglang.cpu_has_amx", lambda: False)
    spec = registry.get("sglang").launch(
        request(model="/cache/tiny", served_model_name="tiny", builtin=TINY)
    )
    assert spec.argv[3:] == [
        "--model-path", "/cache/tiny", "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", "8123",
        "--enable-metrics", "--enable-response-store", "--device", "cpu", "--disable-overlap-schedule",
        "--max-total-tokens", "4096",
        "--dtype", "float32", "--sleep-on-idle", "--tool-call-parser", "pythonic", "--reasoning-parser", "qwen3",
    ]  # fmt: skip
    assert spec.env == {"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1"}


def test_sglang_tiny_judges_a_named_parser_alone(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("pytest_infer.adapters.sglang.cpu_has_amx", lambda: False)
    spec = registry.get("sglang").launch(
        request(
            model="/cache/tiny",
            served_model_name="tiny",
            builtin=TINY,
            extra_args=("--tool-call-parser", "hermes"),
        )
    )
    assert (
        spec.argv.count("--tool-call-parser") == 1
        and spec.argv[-1] == "hermes"
        and "--reasoning-parser" not in spec.argv
    )


def test_sglang_cpu_tiny_on_an_amx_cpu_runs_bfloat16_with_torch_native_attention(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr("pytest_infer.adapters.sglang.cpu_has_amx", lambda: True)
    spec = registry.get("sglang").launch(
        request(model="/cache/tiny", served_model_name="tiny", builtin=TINY)
    )
    assert spec.argv[-12:-4] == ["--disable-overlap-schedule", "--max-total-tokens", "4096", "--dtype", "bfloat16",
                                 "--attention-backend", "torch_native", "--sleep-on-idle"]  # fmt: skip


def test_amx_is_read_from_the_cpu_flags(tmp_path: Path):
    from pytest_infer.adapters.sglang import cpu_has_amx
    from pytest_infer.results.environment import cpuinfo_field

    (tmp_path / "amx").write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C\nflags\t\t: fpu avx512f amx_bf16 amx_tile"
        " amx_int8\n"
    )
    (tmp_path / "zen4").write_text(
        "processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16\nbugs\t\t: amx_tile_like\n"
    )
    assert (
        cpu_has_amx(tmp_path / "amx")
        and not cpu_has_amx(tmp_path / "zen4")
        and not cpu_has_amx(tmp_path / "missing")
    )
    assert (
        cpuinfo_field("model name", tmp_path / "amx") == "Intel(R) Xeon(R) Platinum 8481C"
    )  # the name the results record
    assert (
        cpuinfo_field("model name", tmp_path / "zen4") is None
        and cpuinfo_field("flags", tmp_path / "missing") is None
    )


def test_sglang_api_key_goes_through_a_private_config_file_not_argv():
    key = 'sk-"secret": #1'
    spec = registry.get("sglang").launch(request(api_key=key, builtin=TINY))
    assert not any("secret" in arg for arg in spec.argv) and not any(
        "secret" in v for v in spec.env.values()
    )
    config = Path(spec.argv[spec.argv.index("--config") + 1])
    assert config.suffix == ".yaml"  # SGLang refuses other suffixes
    assert yaml.safe_load(config.read_text()) == {
        "api-key": key
    }  # the flag's spelling: SGLang appends --KEY as written
    assert (
        stat.S_IMODE(config.stat().st_mode) == 0o600
        and stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    )
    again = registry.get("sglang").launch(request(api_key=key, port=9000))
    assert again.argv[again.argv.index("--config") + 1] == str(config)  # one file per key


def test_lmdeploy_argv_runs_the_pytorch_engine_as_a_module_of_its_interpreter():
    """TurboMind is the CLI's default backend, and a carried LMDeploy (scripts/gpu-smoke.sh --prepare-lmdeploy) has
    neither its binaries nor a console script: the PyTorch engine, through ``python -m lmdeploy``."""
    spec = registry.get("lmdeploy").launch(request(extra_args=("--tp", "2")))
    assert spec.argv == [
        "/opt/env/bin/python", "-m", "lmdeploy", "serve", "api_server", "org/model-7b", "--backend", "pytorch",
        "--model-name", "org/model-7b", "--server-name", "127.0.0.1", "--server-port", "8123", "--tp", "2",
    ]  # fmt: skip
    assert spec.env == {} and spec.ready_paths == ("/health", "/v1/models")


def test_lmdeploy_builtin_model_gets_its_own_chat_template_context_and_kv_blocks(tmp_path):
    """LMDeploy picks a built-in template by matching the model's path unless told; a built-in model gets one that
    renders its own template (``hf``), its context as the session length, a fixed KV cache (by default the engine
    takes 80% of the free GPU memory) and batch (a CUDA graph is captured per batch size at start)."""
    model = tmp_path / "tiny-abc"
    spec = registry.get("lmdeploy").launch(
        request(model=str(model), served_model_name="tiny", builtin=TINY)
    )
    template = str(tmp_path / "tiny-abc.lmdeploy-chat-template.json")
    assert spec.argv[3:] == [
        "serve", "api_server", str(model), "--backend", "pytorch", "--model-name", "tiny",
        "--server-name", "127.0.0.1", "--server-port", "8123",
        "--chat-template", template, "--session-len", "1024", "--num-gpu-blocks", "512", "--max-batch-size", "64",
    ]  # fmt: skip
    assert json.loads(Path(template).read_text()) == {"model_name": "hf", "model_path": str(model)}
    gemma = registry.get("lmdeploy").launch(request(model=str(model), builtin=GEMMA))
    assert gemma.argv[-8:-2] == [
        "--session-len",
        "2048",
        "--num-gpu-blocks",
        "512",
        "--max-batch-size",
        "64",
    ]
    assert gemma.argv[-2:] == ["--dtype", "bfloat16"]


def test_lmdeploy_api_key_reaches_its_argument_parser_but_not_the_os_argv(tmp_path):
    """LMDeploy reads keys only from --api-keys: they are added inside the interpreter, from a variable."""
    fake = tmp_path / "site" / "lmdeploy" / "cli"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text(
        "import json, os, sys\ndef run():\n    print(json.dumps({'argv': sys.argv, 'cmdline':"
        " open(f'/proc/{os.getpid()}/cmdline').read().split(chr(0))}))\n"
    )
    env = Environment(label="lm", python=sys.executable, bin_dir=tmp_path / "bin")
    spec = registry.get("lmdeploy").launch(
        request(environment=env, api_key="sk-lm-secret", extra_args=("--tp", "2"))
    )
    assert "sk-lm-secret" not in " ".join(spec.argv) and spec.argv[:2] == [sys.executable, "-c"]
    run = subprocess.run(
        spec.argv,
        env={**os.environ, **spec.env, "PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    seen = json.loads(run.stdout)
    assert seen["argv"] == [
        "lmdeploy", "serve", "api_server", "org/model-7b", "--backend", "pytorch", "--model-name", "org/model-7b",
        "--server-name", "127.0.0.1", "--server-port", "8123", "--tp", "2", "--api-keys", "sk-lm-secret",
    ]  # fmt: skip
    assert not any("sk-lm-secret" in arg for arg in seen["cmdline"])


def test_trtllm_argv():
    spec = registry.get("trtllm").launch(request())
    assert spec.argv[1:] == ["org/model-7b", "--host", "127.0.0.1", "--port", "8123"]
    assert spec.argv[0].endswith("trtllm-serve")
    assert spec.notes == ()
    keyed = registry.get("trtllm").launch(request(api_key="sk-t"))
    assert "sk-t" not in " ".join(keyed.argv) and keyed.notes == (
        "trtllm-serve reads no API key: the key is sent, but this server does not check it",
    )


def test_tgi_launcher_argv():
    spec = registry.get("tgi").launch(request(api_key="k"))
    assert spec.argv[0].endswith("text-generation-launcher")
    assert spec.argv[1:] == [
        "--model-id",
        "org/model-7b",
        "--hostname",
        "127.0.0.1",
        "--port",
        "8123",
    ]
    assert spec.env == {"API_KEY": "k"}


def test_tgi_container_argv_publishes_loopback_port_only():
    env = Environment.from_spec("docker:ghcr.io/huggingface/text-generation-inference:3.3.4")
    spec = registry.get("tgi").launch(request(environment=env, api_key="k"))
    assert spec.argv == [
        "docker", "run", "--rm", "--gpus", "all", "--shm-size", "1g", "-p", "127.0.0.1:8123:80",
        "-e", "API_KEY", "ghcr.io/huggingface/text-generation-inference:3.3.4", "--model-id", "org/model-7b",
    ]  # fmt: skip
    assert "k" not in spec.argv
    assert not spec.listens_in_tree, "the container runtime's proxy listens, not the docker client"
    assert registry.get("tgi").detect_version(env) == FrameworkVersion("3.3.4", source="image tag")


def test_transformers_argv_cpu_tiny(tmp_path):
    model = tmp_path / "models" / "tiny-abc"
    spec = registry.get("transformers").launch(request(model=str(model), builtin=TINY))
    assert spec.argv[1:] == [
        "serve",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--device",
        "cpu",
        "--dtype",
        "float32",
    ]
    assert spec.env == {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "models" / "hf-hub")}


def test_transformers_tiny_has_a_hub_cache_folder_on_a_fresh_machine(tmp_path):
    """transformers serve 5.17.0 answers /v1/models with HTTP 500 (``CacheNotFound``) where the hub cache folder does
    not exist, so the server never turned ready on a bare machine: the tiny model's launch brings an empty one."""
    spec = registry.get("transformers").launch(
        request(model=str(tmp_path / "tiny-abc"), builtin=TINY)
    )
    assert Path(spec.env["HF_HUB_CACHE"]).is_dir()
    assert not list(Path(spec.env["HF_HUB_CACHE"]).iterdir())
    assert (
        "HF_HUB_CACHE" not in registry.get("transformers").launch(request(model="org/model-7b")).env
    )


def test_transformers_tiny_goes_to_the_device_the_run_names(tmp_path):
    """scripts/gpu-smoke.sh puts the tiny model on the GPU: a --device (and a --dtype) of the run's replaces the CPU
    defaults."""
    spec = registry.get("transformers").launch(
        request(model=str(tmp_path / "tiny"), builtin=TINY, extra_args=("--device", "cuda"))
    )
    assert spec.argv[5:] == ["--port", "8123", "--dtype", "float32", "--device", "cuda"]
    spec = registry.get("transformers").launch(
        request(model=str(tmp_path / "tiny"), builtin=TINY, extra_args=("--dtype=bfloat16",))
    )
    assert spec.argv[5:] == ["--port", "8123", "--device", "cpu", "--dtype=bfloat16"]


@pytest.mark.parametrize(
    ("framework", "module", "distribution", "version"),
    [
        ("vllm", "vllm", "vllm-cpu", "0.32.0"),
        ("vllm", "vllm", "vllm", "0.11.2"),
        ("sglang", "sglang", "sglang", "0.5.23"),
        ("lmdeploy", "lmdeploy", "lmdeploy", "0.10.1"),
        ("trtllm", "tensorrt_llm", "tensorrt-llm", "1.2.0"),
        ("transformers", "transformers", "transformers", "5.24.0"),
    ],
)
def test_version_detection_from_the_framework_environment(
    tmp_path, framework, module, distribution, version
):
    root = make_fake_env(
        tmp_path, module=module, version=version, distribution=distribution, commit="abc123def4567"
    )
    detected = registry.get(framework).detect_version(Environment.from_spec(str(root)))
    assert detected.version == version
    assert detected.distribution == distribution
    assert detected.commit == "abc123def4567"
    assert detected.source == f"{module}.__version__"


def test_vllm_cpu_module_version_wins_over_a_missing_vllm_distribution(tmp_path):
    root = make_fake_env(tmp_path, module="vllm", version="0.31.0", distribution="vllm-cpu")
    detected = probe_python_version(Environment.from_spec(str(root)), "vllm", ("vllm", "vllm-cpu"))
    assert (detected.version, detected.distribution) == ("0.31.0", "vllm-cpu")


def test_version_detection_reports_a_missing_framework(tmp_path):
    env = Environment(label="empty", python=sys.executable)
    detected = probe_python_version(env, "no_such_framework_xyz", ("no-such-framework-xyz",))
    assert detected.version is None
    assert "no_such_framework_xyz" in (detected.error or "")


def test_tgi_version_from_launcher(tmp_path):
    launcher = tmp_path / "bin" / "text-generation-launcher"
    launcher.parent.mkdir()
    launcher.write_text("#!/bin/sh\necho 'text-generation-launcher 3.3.4'\n")
    launcher.chmod(0o755)
    env = Environment(label="tgi", bin_dir=tmp_path / "bin")
    assert registry.get("tgi").detect_version(env).version == "3.3.4"


def test_external_endpoint_detection_reads_version_and_models():
    with FakeServer() as server, httpx.Client(base_url=server.base_url) as client:
        framework, version, models = detect_endpoint(client)
    assert version.version == "9.9.9" and version.source == "GET /version"
    assert models == ["fake-model"]
    assert framework is None  # owned_by "fakeserver" betrays no known framework


def test_external_endpoint_detection_falls_back_to_owned_by_and_server_header():
    def only_models(path, body):
        if path == "/v1/models":
            return 200, {
                "object": "list",
                "data": [{"id": "m", "object": "model", "created": 0, "owned_by": "sglang"}],
            }
        return 404, {"error": {"message": "no", "type": "x", "param": None, "code": None}}

    with (
        FakeServer(Deviation(request=only_models)) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        framework, version, _ = detect_endpoint(client)
    assert framework is registry.get("sglang")
    assert version.source == "Server: fakeserver/1.0 Python/" + sys.version.split()[0]
    assert version.version == "1.0"


@pytest.mark.parametrize(
    "listing",
    [[], {"data": 5}, {"data": "m"}, "m", None],
    ids=["list", "number", "string", "json-string", "null"],
)
def test_external_endpoint_detection_survives_a_models_list_of_another_shape(listing):
    """A null server answering ``[]`` to everything crashed the detection (AttributeError) and so every test of it."""
    with (
        FakeServer(Deviation(request=lambda path, body: (200, listing))) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        framework, version, models = detect_endpoint(client)
    assert (framework, models) == (None, [])


@pytest.mark.parametrize(
    ("route", "other"), [("/server_info", "/get_server_info"), ("/get_server_info", None)]
)
def test_external_endpoint_detection_reads_sglang_server_info_before_the_older_route(route, other):
    """SGLang 0.5.23 has no /version; /server_info is asked first, /get_server_info for older servers."""
    info = {"version": "0.5.23", "device": "cpu"}

    def sglang(path, body):
        if path == "/version":
            return 404, {"detail": "Not Found"}
        if path == route:
            return 200, info
        if path == other:
            return 200, {"version": "0.0.0-wrong-route"}
        return None

    with (
        FakeServer(Deviation(request=sglang)) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        framework, version, _ = detect_endpoint(client)
        asked = [path for method, path, _ in server.requests if method == "GET"]
    assert (framework, version.version, version.source) == (
        registry.get("sglang"),
        "0.5.23",
        f"GET {route}",
    )
    assert asked.index(route) > asked.index("/version")
    if route == "/get_server_info":
        assert asked.index("/server_info") < asked.index("/get_server_info")


def test_the_load_generator_takes_ignore_eos_and_extra_fields_from_the_adapter(monkeypatch):
    point = LoadPoint("p", {}, {})
    sent = {name: (point.workload(adapter).ignore_eos, point.workload(adapter).extra_body) for name, adapter in [
        *registry.ADAPTERS.items(), ("endpoint", ENDPOINT)]}  # fmt: skip
    assert sent == {
        "vllm": (True, {"return_token_ids": True}),
        "sglang": (True, {}),
        "lmdeploy": (True, {}),
        "trtllm": (True, {}),
        "tgi": (False, {}),
        "transformers": (False, {}),
        "llamacpp": (True, {}),
        "endpoint": (False, {}),
    }
    assert point.workload().ignore_eos is True  # no server in view: exact output lengths asked for
    monkeypatch.setattr(TransformersAdapter, "accepts_ignore_eos", True)
    monkeypatch.setattr(TransformersAdapter, "load_extra_body", {"return_tokens": True})
    workload = point.workload(registry.get("transformers"))
    assert (workload.ignore_eos, workload.extra_body) == (True, {"return_tokens": True})


def test_structured_native_paths_are_the_adapters_fields(monkeypatch):
    schema = {"type": "integer"}
    native = {
        adapter.name: paths_for(adapter)[2:] for adapter in [*registry.ADAPTERS.values(), ENDPOINT]
    }
    assert {
        f: [(p.name, p.schema_fields(schema)) for p in paths]
        for f, paths in native.items()
        if paths
    } == {
        "vllm": [("vllm-structured_outputs", {"structured_outputs": {"json": schema}})],
        "tgi": [("tgi-grammar", {"grammar": {"type": "json", "value": schema}})],
        "llamacpp": [("llamacpp-json_schema", {"json_schema": schema})],
    }
    monkeypatch.setattr(SGLangAdapter, "structured_output_field", "json_schema")
    (path,) = paths_for(registry.get("sglang"))[2:]
    assert (path.name, path.schema_fields(schema)) == (
        "sglang-json_schema",
        {"json_schema": schema},
    )  # the default shape


def test_paths_for_a_framework_name_still_works_and_is_deprecated():
    with pytest.deprecated_call():
        assert [p.name for p in paths_for("vllm")] == [
            p.name for p in paths_for(registry.get("vllm"))
        ]
    with pytest.deprecated_call():
        assert len(paths_for("endpoint")) == 2  # a name no adapter has: the OpenAI paths alone


def test_endpoint_detection_asks_the_adapters(monkeypatch):
    monkeypatch.setattr(VLLMAdapter, "version_routes", (VersionRoute("/version", identifies=True),))
    with FakeServer() as server, httpx.Client(base_url=server.base_url) as client:
        assert detect_endpoint(client)[0] is registry.get("vllm")
        monkeypatch.setattr(LMDeployAdapter, "owned_by", ("FakeServer",))
        assert detect_endpoint(client)[0] is registry.get(
            "lmdeploy"
        )  # owned_by wins over a version route


def test_bundled_expectations_are_the_files_the_adapters_name(monkeypatch):
    assert {name: path.name for path, name in bundled_files()} == {
        "vllm": "vllm.yaml",
        "sglang": "sglang.yaml",
        "transformers": "transformers.yaml",
    }
    monkeypatch.setattr(TransformersAdapter, "expectations", BUNDLED_EXPECTATIONS / "vllm.yaml")
    with pytest.raises(
        ExpectationsError,
        match="vllm.yaml: names framework 'vllm', but the transformers adapter bundles it",
    ):
        load_expectations()


@pytest.mark.parametrize("framework", ["vllm", "llamacpp", "lmdeploy", "sglang", "transformers"])
def test_a_launch_names_the_context_its_line_sets_and_no_other(framework, tmp_path):
    """What robustness and security judge a prompt over: the built-in model's context where the launch line sets it
    (vLLM --max-model-len, llama.cpp --ctx-size per slot, LMDeploy --session-len); none where the line sets none
    (SGLang and transformers serve run the model's own, advertised or not), for a model not built in, or where the
    user's own value of the flag, after the launch's, is what the engine takes."""
    adapter = registry.get(framework)
    builtin = dataclasses.replace(TINY, context=2048)
    sets = {"vllm": "--max-model-len", "llamacpp": "--ctx-size", "lmdeploy": "--session-len"}.get(
        framework
    )
    model = str(
        tmp_path / "tiny-abc"
    )  # a built-in model is a local folder: LMDeploy's template goes beside it
    spec = adapter.launch(request(model=model, builtin=builtin))
    assert spec.context == (2048 if sets else None)
    assert adapter.launch(request()).context is None
    if sets:
        assert (
            adapter.launch(request(model=model, builtin=builtin, extra_args=(sets, "8192"))).context
            is None
        )
        assert (
            adapter.launch(
                request(model=model, builtin=builtin, extra_args=(f"{sets}=8192",))
            ).context
            is None
        )


def test_a_server_knows_its_context_only_where_advertised_or_launched_with_it():
    from pytest_infer.client.endpoint import Endpoint
    from pytest_infer.server.pool import ServerInfo

    listed = Deviation(
        request=lambda path, body: (
            (200, {"data": [{"id": "fake-model"}]}) if path == "/v1/models" else None
        )
    )
    with FakeServer() as advertising, FakeServer(listed) as silent:
        endpoint = Endpoint(advertising.base_url, "fake-model")
        quiet = Endpoint(silent.base_url, "fake-model")
        launched = ServerInfo(
            target="t", adapter=registry.get("vllm"), model="m", base_url="", launch_context=1024
        )
        assert launched.known_context(endpoint) == (2048, "advertised in /v1/models")
        assert launched.known_context(quiet) == (1024, "set by the plugin's vllm launch line")
        other = ServerInfo(target="t", adapter=registry.get("transformers"), model="m", base_url="")
        assert (
            other.known_context(quiet)[0] is None
            and "launch sets no context" in other.known_context(quiet)[1]
        )
        served = "/cache/models/tiny-e0f588805fb3"
        tiny = ServerInfo(target="t", adapter=ENDPOINT, model=served, base_url="", builtin=TINY)
        assert tiny.known_context(quiet)[0] == 2048  # its own positions: no server runs it longer
        outside = ServerInfo(target="t", adapter=ENDPOINT, model="m", base_url="", launched=False)
        assert outside.known_context(quiet) == (
            None, "an endpoint the plugin did not launch advertises no context in /v1/models"
        )  # fmt: skip

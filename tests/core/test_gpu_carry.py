"""`scripts/gpu-smoke.sh --prepare-lmdeploy`: LMDeploy carried to a GPU machine without TurboMind, and the run that
refuses to start it anywhere but on a CUDA GPU. Offline: pip resolves against a folder of wheels made here."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "scripts" / "gpu-smoke.sh"
TURBOMIND = "lmdeploy/turbomind/_turbomind.cpython-312-x86_64-linux-gnu.so"
STATIC = "lmdeploy/turbomind/lib64/libxgrammar.a"
LMDEPLOY_FILES = {
    "lmdeploy/__init__.py": "__version__ = '0.18.0'\n",
    "lmdeploy/__main__.py": "from .cli import run\nrun()\n",
    "lmdeploy/cli/__init__.py": "import sys, depa  # a carried package\ndef run():\n    print(sys.argv[1:])\n",
    "lmdeploy/turbomind/__init__.py": (
        "try:\n    from . import _turbomind\nexcept (ImportError, OSError):\n    _turbomind = None\n"
    ),
    "lmdeploy/turbomind/lib/libturbomind_nccl_stub.so": "a stub the PyTorch engine never loads, carried as it is\n",
    TURBOMIND: "x" * 3000,
    STATIC: "y" * 2000,
}
REQUIRES = [
    "depa",
    "fastapi",  # carried beside it, in the wheels of --wheels
    "ray",  # left out: only the Ray executor
    "torch<=2.12.1,>=2.0.0",  # the GPU machine's
    "nvidia-nccl-cu12",  # TurboMind's
    'winonly; sys_platform == "win32"',
    'docs-only; extra == "all"',
]


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    folder: Path, name: str, version: str, files: dict[str, str], requires=(), tag="py3-none-any"
) -> Path:
    """A wheel pip installs: its files, METADATA with ``requires``, WHEEL and a RECORD of every file's hash."""
    dist = f"{name.replace('-', '_')}-{version}"
    contents = {path: text.encode() for path, text in files.items()}
    contents[f"{dist}.dist-info/METADATA"] = "".join(
        [
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
            *(f"Requires-Dist: {r}\n" for r in requires),
        ]
    ).encode()
    contents[f"{dist}.dist-info/WHEEL"] = (
        f"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: {tag}\n".encode()
    )
    record = "".join(f"{path},{record_hash(data)},{len(data)}\n" for path, data in contents.items())
    contents[f"{dist}.dist-info/RECORD"] = (record + f"{dist}.dist-info/RECORD,,\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel


@pytest.fixture
def registry(tmp_path: Path) -> dict[str, str]:
    """An offline package index (a folder of wheels) standing in for the registry, and the environment that points
    pip at it."""
    index = tmp_path / "index"
    make_wheel(index, "machinepkg", "1.0", {"machinepkg/__init__.py": ""})
    make_wheel(index, "depa", "2.0", {"depa/__init__.py": "VALUE = 2\n"}, ["depb", "machinepkg"])
    make_wheel(index, "depb", "3.0", {"depb/__init__.py": ""})
    make_wheel(index, "fastapi", "1.0", {"fastapi/__init__.py": ""})
    return {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(index),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def beside_mib(tmp_path: Path) -> str:
    """The limit left beside the wheels of --wheels, as the script prints it."""
    return (
        f"{(64 * 2**20 - sum(p.stat().st_size for p in (tmp_path / 'whl').iterdir())) / 2**20:.0f}"
    )


def prepare(
    tmp_path: Path, env: dict[str, str], wheel: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    beside = tmp_path / "whl"
    make_wheel(beside, "fastapi", "1.0", {"fastapi/__init__.py": ""})
    command = [
        "bash", str(SMOKE), "--prepare-lmdeploy", str(tmp_path / "carry"), "--lmdeploy-wheel", str(wheel),
        "--wheels", str(beside), "--python-version", "3.12", "--target-has", "machinepkg", *extra,
    ]  # fmt: skip
    return subprocess.run(
        command,
        env={**env, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def test_the_carry_takes_the_release_but_turbominds_binaries_and_only_what_the_machine_lacks(
    tmp_path, registry
):
    wheel = make_wheel(
        tmp_path / "release",
        "lmdeploy",
        "0.18.0",
        LMDEPLOY_FILES,
        REQUIRES,
        "cp312-cp312-linux_x86_64",
    )
    run = prepare(tmp_path, registry, wheel)
    assert run.returncode == 0, run.stderr
    site, wheels = tmp_path / "carry" / "site", tmp_path / "carry" / "wheels"
    for path, text in LMDEPLOY_FILES.items():
        assert (site / path).exists() == (path not in (TURBOMIND, STATIC)), path
        if path not in (TURBOMIND, STATIC):
            assert (site / path).read_text() == text  # unchanged
    # the release's own metadata, its RECORD still naming the two binaries it left out
    assert TURBOMIND in (site / "lmdeploy-0.18.0.dist-info" / "RECORD").read_text()
    # depa and what it needs came along, as their wheels; not what the machine has (machinepkg, torch, nvidia-*), not
    # fastapi (beside it), not ray (left out), not another platform's or an extra's
    assert sorted(p.name for p in site.iterdir()) == ["lmdeploy", "lmdeploy-0.18.0.dist-info"]
    assert sorted(p.name for p in wheels.iterdir()) == [
        "depa-2.0-py3-none-any.whl",
        "depb-3.0-py3-none-any.whl",
    ]
    manifest = (tmp_path / "carry" / "MANIFEST.txt").read_text()
    assert f"  {TURBOMIND} (3000 bytes)\n  {STATIC} (2000 bytes)\n" in manifest
    assert (
        "ray: only the Ray executor" in manifest
        and "nvidia-nccl-cu12: the GPU machine's PyTorch" in manifest
    )
    assert (
        "packages carried as wheels/ (the GPU machine lacks them):\n  depa==2.0\n  depb==3.0\n"
        in manifest
    )
    size = sum(p.stat().st_size for p in [*site.rglob("*"), *wheels.iterdir()] if p.is_file())
    assert f"size of site/ and wheels/: {size} bytes" in manifest
    assert (
        f"{tmp_path / 'carry'}: {size / 2**20:.1f} MiB (limit {beside_mib(tmp_path)} MiB)"
        in run.stdout
    )
    # with its wheels installed, the carried folder imports on PYTHONPATH alone, TurboMind reported missing
    installed = tmp_path / "installed"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--target",
            installed,
            *wheels.iterdir(),
        ],
        check=True,
        timeout=120,
    )
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import lmdeploy.cli, lmdeploy.turbomind as t, depa; print(t._turbomind, depa.VALUE)",
        ],
        env={**os.environ, "PYTHONPATH": f"{installed}:{site}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.stdout.split() == ["None", "2"], check.stderr


def test_the_carry_refuses_a_size_over_the_limit(tmp_path, registry):
    wheel = make_wheel(
        tmp_path / "release",
        "lmdeploy",
        "0.18.0",
        LMDEPLOY_FILES,
        ["depa"],
        "cp312-cp312-linux_x86_64",
    )
    run = prepare(tmp_path, {**registry, "GPU_SMOKE_WHEELS_MIB": "0"}, wheel)
    assert run.returncode != 0 and f"{tmp_path / 'carry'} is over the limit" in run.stderr


def test_the_carry_refuses_a_wheel_whose_files_do_not_match_its_record(tmp_path, registry):
    wheel = make_wheel(
        tmp_path / "release", "lmdeploy", "0.18.0", LMDEPLOY_FILES, [], "cp312-cp312-linux_x86_64"
    )
    altered = tmp_path / "altered.whl"
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(altered, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            target.writestr(
                info, b"# changed\n" + data if info.filename == "lmdeploy/cli/__init__.py" else data
            )
    run = prepare(tmp_path, registry, altered)
    assert (
        run.returncode != 0
        and "lmdeploy/cli/__init__.py does not match the wheel's RECORD" in run.stderr
    )


def test_the_carry_refuses_a_wheel_without_turbomind(tmp_path, registry):
    files = {k: v for k, v in LMDEPLOY_FILES.items() if k not in (TURBOMIND, STATIC)}
    wheel = make_wheel(
        tmp_path / "release", "lmdeploy", "0.18.0", files, [], "cp312-cp312-linux_x86_64"
    )
    run = prepare(tmp_path, registry, wheel)
    assert run.returncode != 0 and "holds no TurboMind binaries" in run.stderr


@pytest.mark.parametrize(
    ("device", "reason"),
    [("cpu", "--device cpu"), ("cuda", "no CUDA GPU here")],
)
def test_the_lmdeploy_run_stops_naming_the_missing_gpu(tmp_path, registry, device, reason):
    """On this machine the prepared GPU run goes as far as the carried folder's import, then stops: the PyTorch
    engine needs a CUDA GPU, and the message says so instead of a server that never turns ready."""
    wheel = make_wheel(
        tmp_path / "release",
        "lmdeploy",
        "0.18.0",
        LMDEPLOY_FILES,
        ["depa"],
        "cp312-cp312-linux_x86_64",
    )
    assert prepare(tmp_path, registry, wheel).returncode == 0
    run = subprocess.run(
        [
            "bash",
            str(SMOKE),
            "--lmdeploy",
            str(tmp_path / "carry"),
            "--device",
            device,
            "--out",
            str(tmp_path / "out"),
        ],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert run.returncode == 2 and "LMDeploy's PyTorch engine runs on a CUDA GPU only" in run.stderr
    assert reason in run.stderr and not (tmp_path / "out" / "results.json").exists()

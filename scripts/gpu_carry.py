"""LMDeploy's release carried to a GPU machine without TurboMind: the steps of `gpu-smoke.sh --prepare-lmdeploy`.

    gpu_carry.py strip WHEEL DIR PYVER   DIR/site: the wheel's files but TurboMind's binaries, each checked against
                                         the wheel's RECORD; prints the requirements to resolve, one a line
    gpu_carry.py carry MISSING WHEEL...  the lines of MISSING (NAME==VERSION) to carry: not the packages the WHEELs
                                         beside it carry, nor the GPU machine's PyTorch's own
    gpu_carry.py finish DIR LIMIT_BYTES  DIR/MANIFEST.txt completed with what was carried and the size of the rest;
                                         an error when it is over LIMIT_BYTES

The serve path was traced on CPU (2026-12-04, lmdeploy 0.18.0, `python -X importtime` and a sys.modules diff after
`lmdeploy serve api_server --help` and importing api_server, the PyTorch engine, its ZMQ engine, the single-process
executor, the model agent, the model map and the CUDA kernels): LEFT_OUT below are the requirements it never imports
on that path, each with where it is imported instead.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement

# TurboMind's compiled engine and the static library beside it (89 MB and 14 MB of the 101 MB 0.18.0 wheel);
# lmdeploy/turbomind/__init__.py imports the engine under try/except (ImportError, OSError) and reports it unavailable.
BINARIES = ("lmdeploy/turbomind/_turbomind*.so", "lmdeploy/turbomind/lib64/*.a")
LEFT_OUT = {
    "ray": "only the Ray executor and engine (dp > 1, several nodes); one GPU runs the 'uni' executor, the ZMQ engine",
    "rdkit": "imported nowhere in lmdeploy 0.18.0",
    "tilelang": "only the kernels of gated-delta, sparse-MLA and DeepSeek-V4 models, imported when such a model loads",
    "flash-linear-attention": "only gated-delta models (Qwen3-Next, Qwen3.5), imported inside their functions",
    "peft": "only --adapters (LoRA)",
    "torchvision": "only the video loader of vision models",
    "timm": "only DeepSeek-VL2's vision tower",
    "opencv-python-headless": "only the video loader of vision models",
    "datasets": "only the quantization tools (lmdeploy lite)",
}
# The GPU machine's PyTorch brings its CUDA libraries and Triton; TurboMind alone asks for nvidia-* of its own.
MACHINE = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*)$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def target_environment(pyver: str) -> dict[str, str]:
    """The markers of the GPU machine: Linux on x86_64, CPython ``pyver``."""
    return {
        "python_version": pyver,
        "python_full_version": f"{pyver}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def strip(wheel: Path, out: Path, pyver: str) -> None:
    site = out / "site"
    site.mkdir(parents=True, exist_ok=True)
    taken, left, reqs, skipped = 0, [], [], []
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        record_name = next((n for n in names if n.endswith(".dist-info/RECORD")), None)
        meta_name = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
        if record_name is None or meta_name is None:
            sys.exit(f"gpu_carry: {wheel} is no wheel: it has no .dist-info/RECORD or METADATA")
        record = {}
        for line in archive.read(record_name).decode().splitlines():
            path, digest, _ = line.rsplit(",", 2)
            record[path] = digest
        for info in archive.infolist():
            if info.is_dir():
                continue
            if any(fnmatch.fnmatch(info.filename, pattern) for pattern in BINARIES):
                left.append(f"{info.filename} ({info.file_size} bytes)")
                continue
            data = archive.read(info)
            if record.get(info.filename) and record[info.filename] != record_hash(data):
                sys.exit(
                    f"gpu_carry: {info.filename} does not match the wheel's RECORD: a damaged or altered wheel"
                )
            target = site / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            taken += 1
        metadata = Parser().parsestr(archive.read(meta_name).decode())
    if not left:
        sys.exit(
            f"gpu_carry: {wheel} holds no TurboMind binaries ({', '.join(BINARIES)}): not an LMDeploy wheel?"
        )
    env = target_environment(pyver)
    for text in metadata.get_all("Requires-Dist") or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(env):
            continue  # an extra's, or another platform's
        name = norm(req.name)
        if name in LEFT_OUT:
            skipped.append(f"{req}: {LEFT_OUT[name]}")
        elif MACHINE.match(name):
            skipped.append(f"{req}: the GPU machine's PyTorch brings its own")
        else:
            reqs.append(str(req).split(";")[0].strip())
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (out / "MANIFEST.txt").write_text(
        f"{metadata['Name']} {metadata['Version']} from {wheel.name} (sha256 {digest})\n"
        f"taken: {taken} files of the wheel, unchanged (each checked against its RECORD), into site/\n"
        "left out (TurboMind; the PyTorch engine does not need it):\n"
        + "".join(f"  {line}\n" for line in left)
        + "requirements left out (never imported on `serve api_server --backend pytorch` with one GPU):\n"
        + "".join(f"  {line}\n" for line in skipped)
    )
    print("\n".join(reqs))


def carry(missing: Path, beside: list[str]) -> None:
    carried = {norm(Path(wheel).name.split("-")[0]) for wheel in beside}
    for line in missing.read_text().split():
        name = norm(line.split("==")[0])
        if name not in carried and not MACHINE.match(name):
            print(line)


def finish(out: Path, limit: int, carried: list[str]) -> None:
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file() and p.name != "MANIFEST.txt")
    with (out / "MANIFEST.txt").open("a") as manifest:
        manifest.write("packages carried as wheels/ (the GPU machine lacks them):\n")
        manifest.writelines(f"  {line}\n" for line in carried)
        manifest.write(
            f"size of site/ and wheels/: {size} bytes ({size / 2**20:.1f} MiB; limit {limit / 2**20:.0f} MiB)\n"
        )
    print(
        f"gpu-smoke: {out}: {size / 2**20:.1f} MiB (limit {limit / 2**20:.0f} MiB); {out / 'MANIFEST.txt'}"
    )
    if size > limit:
        sys.exit(f"gpu-smoke: {out} is over the limit")


if __name__ == "__main__":
    if sys.argv[1:2] == ["strip"] and len(sys.argv) == 5:
        strip(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4])
    elif sys.argv[1:2] == ["carry"] and len(sys.argv) >= 3:
        carry(Path(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1:2] == ["finish"] and len(sys.argv) >= 4:
        finish(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    else:
        sys.exit(__doc__)

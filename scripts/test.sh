#!/usr/bin/env bash
# The plugin's own tests, in two lanes: the fast lane (everything that needs no real engine, spread
# over every core with pytest-xdist) first, then the integration lane (the real CPU engines, on two
# workers; a test that measures runs alone). Extra arguments go to both lanes. Both lanes run; the
# exit status is the first failing lane's.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTEST_INFER_VENV:-.venv}/bin/python
# Bytecode caches on: the lanes start some hundred Python processes (xdist workers, nested pytest sessions, servers),
# and without caches each one compiles and assertion-rewrites the plugin's modules again.
unset PYTHONDONTWRITEBYTECODE
status=0
echo "== fast lane: -m 'not integration and not realmodel' =="
# Two workers more than cores: the fast lane's tests spend much of their time waiting on servers and
# timeouts. Four workers on 2 cores took 275 s against 335 s with three. worksteal: a worker that
# runs dry takes tests queued on another, so the lane does not wait on one worker's long tail.
"$PY" -m pytest -m "not integration and not realmodel" -n "${PYTEST_INFER_TEST_WORKERS:-$(( $(nproc) + 2 ))}" --dist worksteal "$@" || status=$?
echo "== integration lane: -m 'integration and not realmodel' =="
# Only the files that mark tests integration are collected: collecting all 3,500 tests to deselect
# them took 20-40 s here. A file marks them with pytest.mark.integration (pytestmark or a decorator).
mapfile -t integration < <(grep -rlE 'mark\.integration' tests --include='test_*.py' | sort)
# Two workers: an engine start or a functional suite keeps about one core busy, so two run side by
# side; tests marked measures take the machine to themselves, and the tests sharing the session's
# engines stay on one worker (tests/conftest.py: SharedEnginesScheduling, machine).
"$PY" -m pytest -m "integration and not realmodel" -n 2 --dist loadscope "${integration[@]}" "$@"
lane=$?
if [ "$status" = 0 ]; then status=$lane; fi
exit "$status"

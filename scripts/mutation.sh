#!/usr/bin/env bash
# Mutation testing of the modules that decide verdicts ([tool.mutmut] only_mutate in pyproject.toml):
# mutmut changes one operator, constant or argument at a time and runs the tests that cover it; a
# mutant no test notices is a verdict that could change unseen. On demand, and in
# .github/workflows/mutation.yml; not in .ci/run's time budget.
#
#   scripts/mutation.sh [run [GLOB...]]  run, then print the score and the surviving mutants; a GLOB
#                                  (e.g. 'pytest_infer.conformance.checks.chat.*') runs those mutants only: one
#                                  module at a time is how the whole set has been run here (a run of every
#                                  module at once stopped for good in mutmut's clean-test step)
#   scripts/mutation.sh again      test again what the last run did not catch (survived, no tests, not
#                                  checked), against today's code and tests
#   scripts/mutation.sh results    print them again from the last run (.mutation/mutants/)
#
# Needs the project venv (scripts/setup.sh); installs the mutation extra into it. Runs in a copy of the
# working tree (.mutation/), where scripts/unwrap_checks.py has turned each `@check(...)` into the same
# registration after the def: mutmut mutates no decorated function, and the checks' bodies are where they judge.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "no .venv: run scripts/setup.sh first" >&2; exit 2; }
work=.mutation
copy() {  # the working tree into $work, checks unwrapped; mutmut's own state (mutants/) stays
  git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$work"
  ln -sfn ../.venv "$work/.venv"
  .venv/bin/python scripts/unwrap_checks.py "$work"/pytest_infer/conformance/checks/*.py
}
case "${1:-run}" in
  run)
    .venv/bin/python -m pip install -q -e ".[mutation]"
    # a whole run starts afresh; a run of some modules keeps what runs of the others found
    if [ $# -le 1 ]; then rm -rf "$work"; fi
    mkdir -p "$work" && copy
    (cd "$work" && .venv/bin/mutmut run "${@:2}");;
  again)
    [ -f "$work/mutants/results.txt" ] || { echo "no earlier run in $work: run first" >&2; exit 2; }
    copy
    rm -f "$work/mutants/mutmut-stats.json"  # which tests cover which function: new tests must be seen
    mapfile -t names < <(awk -F': ' '$2 == "survived" || $2 == "no tests" || $2 == "not checked" {sub(/^ +/, "", $1); print $1}' "$work/mutants/results.txt")
    (cd "$work" && .venv/bin/mutmut run "${names[@]}");;
esac
cd "$work"
.venv/bin/mutmut results --all true > mutants/results.txt
# "name: status" per mutant; the score counts a timeout as caught, and a mutant no test runs as missed.
# Per module too: the target (90%) is per module, and one well-tested module must not hide another.
# Mutants not tried yet (another module's run) are counted apart, in no score.
awk -F': ' '
  NF == 2 && $2 == "not checked" { status[$2]++; next }
  NF == 2 {
    status[$2]++; total++
    module = $1; sub(/\.x(ǁ|_).*/, "", module)
    all[module]++
    if ($2 == "killed" || $2 == "timeout") got[module]++
  }
  $2 == "survived" || $2 == "no tests" { missed[++m] = $0 }
  END {
    caught = status["killed"] + status["timeout"]
    printf "mutation score: %d of %d mutants caught (%.1f%%): ", caught, total, total ? 100 * caught / total : 0
    first = 1
    for (s in status) { printf "%s%s %d", first ? "" : ", ", s, status[s]; first = 0 }
    print ""
    for (mod in all) printf "  %-48s %5d of %5d (%.1f%%)\n", mod, got[mod], all[mod], 100 * got[mod] / all[mod] | "sort"
    close("sort")
    for (i = 1; i <= m; i++) print "  missed " missed[i]
  }' mutants/results.txt

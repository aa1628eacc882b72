#!/usr/bin/env bash
# scripts/kill_trials.sh — fault injection for training: N runs of the tiny CTC recipe, each
# SIGKILLed at 1-3 random moments and then run to the end; every run must resume and finish with
# exactly the parameters of an uninterrupted run. Prints the counts (docs/reliability.md).
#   scripts/kill_trials.sh [TRIALS=20] [SEED=1] [BUILD_DIR=build]
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-20}
seed=${2:-1}
build=${3:-build}
[[ -x "$build/tests/test_masr" && -x "$build/bin/mamba-asr" ]] ||
  { echo "kill_trials: build the test_masr and mamba-asr targets in $build first" >&2; exit 2; }
log=$(mktemp)
rc=0
MASR_KILL_TRIALS=$trials MASR_KILL_SEED=$seed "$build/tests/test_masr" "[kill9]" > "$log" 2>&1 || rc=$?
grep -v '^kill9:' "$log" | tail -40 >&2
grep '^kill9:' "$log" || echo "kill_trials: no counts (the test did not finish)" >&2
rm -f "$log"
exit $rc

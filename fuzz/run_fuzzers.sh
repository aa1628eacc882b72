#!/usr/bin/env bash
# fuzz/run_fuzzers.sh — runs each libFuzzer target over its corpus for a time budget.
#   fuzz/run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]     (targets: hparams arpa manifest audio checkpoint)
#   fuzz/run_fuzzers.sh --merge BUILD_DIR [TARGET...]     (minimizes what was found into fuzz/corpus/)
# New inputs go to BUILD_DIR/corpus/<target> (fuzz/corpus/<target> holds the kept, minimized
# corpus); crashes to BUILD_DIR/crashes/. Exits non-zero when a fuzzer finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
merge=0
if [[ "${1:-}" == "--merge" ]]; then merge=1; shift; fi
build=${1:?usage: fuzz/run_fuzzers.sh [--merge] BUILD_DIR [SECONDS] [TARGET...]}
shift
seconds=0
if [[ $merge -eq 0 ]]; then seconds=${1:?seconds}; shift; fi
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(hparams arpa manifest audio checkpoint)

export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0"
status=0
for t in "${targets[@]}"; do
  exe="$build/fuzz/fuzz_$t"
  [[ -x "$exe" ]] || { echo "run_fuzzers: $exe is missing (build the 'fuzzers' target)" >&2; exit 2; }
  mkdir -p "$build/corpus/$t" "$build/crashes" "fuzz/corpus/$t"
  if [[ $merge -eq 1 ]]; then
    "$exe" -merge=1 "fuzz/corpus/$t" "$build/corpus/$t" 2>&1 | tail -1
    continue
  fi
  echo "run_fuzzers: $t for ${seconds} s"
  # -timeout: an input taking 10 s is a hang; -rss_limit_mb: absurd allocations are findings.
  # The checkpoint target grows slowly (LibTorch leaks per refused zip: fuzz/lsan.supp).
  rss=2048
  [[ $t == checkpoint ]] && rss=4096
  # SECONDS 0: replay the kept corpus only (-runs=0), no new inputs.
  budget=(-max_total_time="$seconds")
  [[ $seconds == 0 ]] && budget=(-runs=0)
  if ! "$exe" "${budget[@]}" -timeout=10 -rss_limit_mb=$rss -print_final_stats=1 \
       -artifact_prefix="$build/crashes/$t-" "$build/corpus/$t" "fuzz/corpus/$t" \
       > "$build/fuzz_$t.log" 2>&1; then
    echo "run_fuzzers: $t FAILED; see $build/fuzz_$t.log and $build/crashes/" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$build/fuzz_$t.log" | head -5 >&2 || true
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$build/fuzz_$t.log" | tail -2
  fi
done
exit $status

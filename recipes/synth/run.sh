#!/usr/bin/env bash
# recipes/synth/run.sh — the quick start: synthesizes an English corpus on this machine (espeak-ng),
# trains a small ConMamba CTC model on it, decodes the voices held out of training, prints a WER table.
#
#   recipes/synth/run.sh [--stage N] [--stop-stage N] [--out DIR] [--hours H] [--seed N]
#                        [--threads N] [--hparams FILE] [-- train overrides...]
#
# Stages: 0 build the binary · 1 synthesize the corpus · 2 train (the tokenizer first) ·
#         3 decode the test voices (CTC greedy and prefix beam search) and write the WER table.
# Every stage is resumable: run the same command again after an interruption (Ctrl-C, kill, a
# reboot) and it goes on where it stopped. Defaults fit a 2-core machine: about 20 minutes of
# training; docs/recipes.md gives the measured times and error rates.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
stage=0 stop_stage=3 out="$root/results/synth" hours=2.5 seed=1234 threads="$(nproc)"
hparams="$root/hparams/CTC/conmamba_synth.yaml"
train_overrides=()

usage() { sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --stage) stage="$2"; shift 2 ;;
    --stop-stage) stop_stage="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --hours) hours="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --hparams) hparams="$2"; shift 2 ;;
    --) shift; train_overrides=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "synth/run.sh: unknown option '$1'" >&2; usage ;;
  esac
done
for n in "$stage" "$stop_stage" "$seed" "$threads"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "synth/run.sh: '$n' is not a non-negative integer" >&2; exit 2; }
done
[[ -f "$hparams" ]] || { echo "synth/run.sh: hparams file '$hparams' not found" >&2; exit 2; }

bin="${MASR_BIN:-$root/build/bin/mamba-asr}"  # MASR_BIN: another build
data="$out/data"
exp="$out/ctc"
mkdir -p "$out"
log() { printf '[synth %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
timed() {  # timed NAME cmd...: runs cmd, appends "NAME seconds" to $out/times.tsv
  local name="$1" t0; shift
  t0=$(date +%s)
  "$@"
  printf '%s\t%s\n' "$name" "$(( $(date +%s) - t0 ))" >> "$out/times.tsv"
}

if (( stage <= 0 && 0 <= stop_stage )); then
  log "stage 0: build mamba-asr"
  build_binary() {
    local generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    [[ -f "$root/build/CMakeCache.txt" ]] ||
      cmake -S "$root" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
    cmake --build "$root/build" --target mamba-asr --parallel "$(nproc)"
  }
  timed build build_binary
fi
[[ -x "$bin" ]] || { echo "synth/run.sh: $bin is missing; run stage 0 (or scripts/build.sh)" >&2; exit 1; }

if (( stage <= 1 && 1 <= stop_stage )); then
  log "stage 1: synthesize about $hours h of speech into $data"
  timed corpus "$root/scripts/make_synth_corpus.sh" --out "$data" --hours "$hours" --seed "$seed"
fi

if (( stage <= 2 && 2 <= stop_stage )); then
  log "stage 2: train $(basename "$hparams") into $exp"
  timed train "$bin" --threads "$threads" train "$hparams" \
    --data_folder "$data" --output_folder "$exp" \
    --train_csv "$data/train.csv" --valid_csv "$data/valid.csv" "${train_overrides[@]}"
fi

if (( stage <= 3 && 3 <= stop_stage )); then
  log "stage 3: decode the held-out test voices"
  table="$out/wer.md"
  {
    echo "| search | WER % | CER % | utterances | RTF |"
    echo "|---|---|---|---|---|"
  } > "$table.tmp"
  for search in greedy ctc-beam; do
    "$bin" --threads "$threads" decode --model "$exp/model.masr" --search "$search" \
      --format json "$data/test.csv" > "$out/test_$search.jsonl" 2> "$out/test_$search.log" ||
      { cat "$out/test_$search.log" >&2; exit 1; }
    # The decoder's summary on stderr: "%WER x [ ... ]", "%CER y [ ... ]", "... RTF z, RTFx w".
    wer=$(sed -n 's/^%WER \([0-9.]*\) .*/\1/p' "$out/test_$search.log" | tail -1)
    cer=$(sed -n 's/^%CER \([0-9.]*\) .*/\1/p' "$out/test_$search.log" | tail -1)
    rtf=$(sed -n 's/.*RTF \([0-9.]*\).*/\1/p' "$out/test_$search.log" | tail -1)
    n=$(wc -l < "$out/test_$search.jsonl")
    echo "| $search | ${wer:-?} | ${cer:-?} | $n | ${rtf:-?} |" >> "$table.tmp"
  done
  mv "$table.tmp" "$table"
  echo
  echo "Test voices (never heard in training), $(basename "$hparams"), $exp/model.masr:"
  cat "$table"
  echo
  echo "Stage times (s):"
  column -t "$out/times.tsv" 2>/dev/null || cat "$out/times.tsv"
fi

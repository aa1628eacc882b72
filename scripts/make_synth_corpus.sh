#!/usr/bin/env bash
# scripts/make_synth_corpus.sh — synthesizes an English speech corpus with espeak-ng and sox,
# deterministic given a seed, with SpeechBrain CSVs (train/valid/test.csv) split by speaker.
#
#   scripts/make_synth_corpus.sh --out DIR [--seed N] [--utterances N | --hours H] [--jobs J]
#
# Sentences come from the `fortunes` package, normalized to LibriSpeech style (docs/synth-corpus.md).
# Each speaker is an espeak-ng voice + variant (e.g. en-gb-x-rp+f3) with its own speed and pitch;
# valid and test speakers never occur in train. Resumable: existing WAVs are kept (files are
# written to a temporary name and renamed, so an interrupted run leaves no partial WAV).
# Progress goes to stderr; the CSVs are rewritten at the end of every run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
out="" seed=1234 utterances=100 hours="" jobs="$(nproc)"

usage() { sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --utterances) utterances="$2"; hours=""; shift 2 ;;
    --hours) hours="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "make_synth_corpus: unknown option '$1'" >&2; usage ;;
  esac
done
[[ -n "$out" ]] || { echo "make_synth_corpus: --out DIR is required" >&2; usage; }
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "make_synth_corpus: --seed '$seed' is not a non-negative integer" >&2; exit 2; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "make_synth_corpus: --jobs '$jobs' is not a positive integer" >&2; exit 2; }
for tool in espeak-ng sox "$PY"; do
  command -v "$tool" >/dev/null || { echo "make_synth_corpus: '$tool' is missing; run scripts/setup.sh" >&2; exit 1; }
done
[[ -d /usr/share/games/fortunes ]] || { echo "make_synth_corpus: /usr/share/games/fortunes is missing; run scripts/setup.sh" >&2; exit 1; }

mkdir -p "$out/wav/train" "$out/wav/valid" "$out/wav/test"
plan="$out/plan.tsv"
size_args=(--utterances "$utterances")
[[ -n "$hours" ]] && size_args=(--hours "$hours")
"$PY" "$here/synth_corpus.py" plan --seed "$seed" "${size_args[@]}" > "$plan.tmp"
mv "$plan.tmp" "$plan"
total=$(wc -l < "$plan")

# One utterance: espeak-ng writes 22.05 kHz 16-bit mono; sox resamples to 16 kHz without dither
# (-D) and in repeatable mode (-R), so the same plan gives bit-identical files; 3 dB of headroom
# keeps the resampler from clipping.
synth_one() {
  local id="$1" split="$2" voice="$3" speed="$4" pitch="$5" text="$6"
  local wav="$OUT_DIR/wav/$split/$id.wav"
  [[ -s "$wav" ]] && return 0
  local tmp="$wav.tmp.$$"
  set -o pipefail
  espeak-ng -v "$voice" -s "$speed" -p "$pitch" --stdout "${text,,}" \
    | sox -R -D -V1 -t wav - -r 16000 -b 16 -c 1 -t wav "$tmp" gain -3
  mv "$tmp" "$wav"
}
export -f synth_one
export OUT_DIR="$out"

start=$(date +%s)
echo "make_synth_corpus: $total utterances, $jobs jobs, into $out" >&2
tr '\t' '\n' < "$plan" | tr '\n' '\0' | xargs -0 -n 6 -P "$jobs" bash -c 'synth_one "$@"' _ &
xargs_pid=$!
ticks=0
while kill -0 "$xargs_pid" 2>/dev/null; do
  sleep 0.2
  ticks=$((ticks + 1))
  if (( ticks % 50 == 0 )); then  # every 10 s
    done_now=$(find "$out/wav" -name '*.wav' | wc -l)
    echo "make_synth_corpus: $done_now/$total wavs ($(( $(date +%s) - start )) s)" >&2
  fi
done
wait "$xargs_pid" || { echo "make_synth_corpus: synthesis failed (rerun to resume)" >&2; exit 1; }
echo "make_synth_corpus: synthesized in $(( $(date +%s) - start )) s" >&2

"$PY" "$here/synth_corpus.py" csv --plan "$plan" --wav-dir "$out/wav" --out "$out"

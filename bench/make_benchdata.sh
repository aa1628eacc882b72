#!/usr/bin/env bash
# bench/make_benchdata.sh — the compressed corpus that bench/gpu_train.sh's epoch, ddp and loader
# stages read (.benchdata/, git-ignored; carried to the GPU machine).
#
#   bench/make_benchdata.sh [--out DIR] [--utterances N] [--seed S]
#
# 1. Short utterances (skipped when DIR/train.csv exists): N espeak-ng utterances from
#    scripts/make_synth_corpus.sh, encoded as 16 kHz Opus (opusenc, 24 kbit/s) in DIR/opus/, with
#    DIR/{train,valid}.csv pointing at them ($data_root = DIR). About 3.8 s each.
# 2. LibriSpeech-like lengths: the training utterances joined in reading order into utterances of
#    5-22 s and more (0.3 s of silence between the parts; transcripts joined likewise) in DIR/long/, listed
#    in DIR/train_long.csv. LibriSpeech's training utterances average 12.3 s; with 3.8 s ones the
#    DynamicBatchSampler's length buckets (scaled to max_batch_length = 500 s) are coarse, so
#    padding, not the trainer, dominates an epoch's throughput.
# Needs espeak-ng, sox and opus-tools (opusenc, opusdec). Deterministic given the seed.
set -euo pipefail
out=.benchdata utterances=345 seed=7
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --utterances) utterances=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "make_benchdata: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for tool in opusenc opusdec sox; do
  command -v $tool > /dev/null || { echo "make_benchdata: needs $tool (opus-tools, sox)" >&2; exit 1; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ ! -f $out/train.csv ]]; then
  "$root/scripts/make_synth_corpus.sh" --out "$tmp/wav" --seed "$seed" --utterances "$utterances"
  mkdir -p "$out/opus"
  for split in train valid; do
    awk -F, -v OFS=, 'NR == 1 { print; next } {
        id = $1; src = $3; sub(/^\$data_root\//, "", src)
        printf "%s\t%s\n", src, id > "/dev/stderr"
        $3 = "$data_root/opus/" id ".opus"; print }' "$tmp/wav/$split.csv" \
      2> "$tmp/$split.files" > "$out/$split.csv"
    while IFS=$'\t' read -r src id; do
      opusenc --quiet --bitrate 24 "$tmp/wav/$src" "$out/opus/$id.opus"
    done < "$tmp/$split.files"
  done
fi

# Joined utterances: consecutive rows until each reaches its own target length, drawn uniformly
# from 5-22 s (mean about 13 s, near LibriSpeech's 12.3 s).
mkdir -p "$out/long"
sox -n -r 16000 -c 1 "$tmp/gap.wav" trim 0 0.3
awk -F, -v seed="$seed" 'BEGIN { srand(seed); target = 5 + 17 * rand() } NR == 1 { next } {
    path = $3; sub(/^\$data_root\//, "", path)
    group = group (group == "" ? "" : " ") path; text = text (text == "" ? "" : " ") $5
    total += $2 + (total > 0 ? 0.3 : 0)
    if (total >= target) { print group "\t" text; group = ""; text = ""; total = 0; target = 5 + 17 * rand() }
  }' "$out/train.csv" > "$tmp/groups"
echo "ID,duration,wav,spk_id,wrd" > "$out/train_long.csv"
n=0
while IFS=$'\t' read -r parts text; do
  id=$(printf 'long-%05d' $n)
  inputs=()
  k=0
  for part in $parts; do
    opusdec --quiet --rate 16000 "$out/$part" "$tmp/part$k.wav"
    [[ $k -gt 0 ]] && inputs+=("$tmp/gap.wav")
    inputs+=("$tmp/part$k.wav")
    k=$((k + 1))
  done
  sox "${inputs[@]}" -r 16000 -c 1 "$tmp/joined.wav"
  opusenc --quiet --bitrate 24 "$tmp/joined.wav" "$out/long/$id.opus"
  duration=$(soxi -D "$tmp/joined.wav")
  echo "$id,$duration,\$data_root/long/$id.opus,joined,$text" >> "$out/train_long.csv"
  rm -f "$tmp"/part*.wav
  n=$((n + 1))
done < "$tmp/groups"
awk -F, 'NR > 1 { s += $2; n++ } END { printf "make_benchdata: %d joined utterances, %.0f s, mean %.1f s\n", n, s, s / n }' \
  "$out/train_long.csv"

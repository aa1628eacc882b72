#!/usr/bin/env bash
# bench/make_benchdata.sh — a compressed training corpus of LibriSpeech-like lengths for GPU
# throughput runs (bench/gpu_train.sh's epoch, ddp, scale and loader stages read it; .benchdata/
# by default, git-ignored, carried to the GPU machine).
#
#   bench/make_benchdata.sh [--out DIR] [--utterances N] [--seed S] [--from CORPUS] [--bitrate K]
#
# 1. Short utterances (skipped when DIR/train.csv exists): with --from, the train.csv and
#    valid.csv of an existing corpus (scripts/make_synth_corpus.sh's, or any SpeechBrain CSV with
#    ID, duration, wav and wrd columns; wav paths absolute, relative to CORPUS, or $data_root/...);
#    otherwise N espeak-ng utterances made here by scripts/make_synth_corpus.sh. They are encoded
#    as 16 kHz Opus (opusenc, K kbit/s, default 24) in DIR/opus/, listed in DIR/{train,valid}.csv
#    ($data_root = DIR).
# 2. LibriSpeech-like lengths: the training utterances joined in reading order into utterances of
#    5-22 s and more (0.3 s of silence between the parts; transcripts joined likewise) in DIR/long/,
#    listed in DIR/train_long.csv. LibriSpeech's training utterances average 12.3 s; with 3.8 s
#    ones the DynamicBatchSampler's length buckets (scaled to max_batch_length = 500 s) are coarse,
#    so padding, not the trainer, dominates an epoch's throughput.
# Needs sox and opus-tools (opusenc, opusdec), and espeak-ng without --from. Deterministic given
# the seed and the source corpus.
set -euo pipefail
out=.benchdata utterances=345 seed=7 from="" bitrate=24
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --out|--utterances|--seed|--from|--bitrate)
      [[ $# -ge 2 ]] || { echo "make_benchdata: $1 needs a value" >&2; exit 2; }
      case $1 in
        --out) out=$2 ;; --utterances) utterances=$2 ;; --seed) seed=$2 ;;
        --from) from=$2 ;; --bitrate) bitrate=$2 ;;
      esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "make_benchdata: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "make_benchdata: --seed '$seed' is not a non-negative integer" >&2; exit 2; }
[[ "$bitrate" =~ ^[0-9]+$ ]] || { echo "make_benchdata: --bitrate '$bitrate' is not an integer" >&2; exit 2; }
for tool in opusenc opusdec sox soxi; do
  command -v $tool > /dev/null || { echo "make_benchdata: needs $tool (opus-tools, sox)" >&2; exit 1; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The rows of a SpeechBrain CSV as "ID<TAB>duration<TAB>absolute audio path<TAB>words<TAB>speaker",
# whatever the column order; a wav given as $data_root/x or as a relative path is taken under $2.
rows() {  # csv corpus_dir
  awk -F, -v OFS='\t' -v dir="$2" -v csv="$1" '
    { sub(/\r$/, "") }
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i
              if (!("ID" in col) || !("duration" in col) || !("wav" in col) || !("wrd" in col)) {
                print "make_benchdata: " csv " lacks an ID, duration, wav or wrd column" > "/dev/stderr"; exit 3 }
              next }
    { wav = $col["wav"]
      if (wav ~ /^\$data_root\//) sub(/^\$data_root/, dir, wav)
      else if (wav !~ /^\//) wav = dir "/" wav
      print $col["ID"], $col["duration"], wav, $col["wrd"], ("spk_id" in col) ? $col["spk_id"] : "unknown" }' "$1"
}

if [[ ! -f $out/train.csv ]]; then
  if [[ -n "$from" ]]; then
    [[ -f "$from/train.csv" && -f "$from/valid.csv" ]] ||
      { echo "make_benchdata: --from $from has no train.csv and valid.csv" >&2; exit 1; }
    src=$(cd "$from" && pwd)
  else
    "$root/scripts/make_synth_corpus.sh" --out "$tmp/wav" --seed "$seed" --utterances "$utterances"
    src=$tmp/wav
  fi
  mkdir -p "$out/opus"
  for split in train valid; do
    rows "$src/$split.csv" "$src" > "$tmp/$split.rows"
    echo "ID,duration,wav,spk_id,wrd" > "$tmp/$split.csv"
    while IFS=$'\t' read -r id duration wav words speaker; do
      [[ -f "$wav" ]] || { echo "make_benchdata: $split.csv: utterance $id: no file $wav" >&2; exit 1; }
      opusenc --quiet --bitrate "$bitrate" "$wav" "$out/opus/$id.opus"
      printf '%s,%s,$data_root/opus/%s.opus,%s,%s\n' "$id" "$duration" "$id" "$speaker" "$words"
    done < "$tmp/$split.rows" >> "$tmp/$split.csv"
  done
  mv "$tmp/valid.csv" "$out/valid.csv"
  mv "$tmp/train.csv" "$out/train.csv"  # last: its presence means step 1 is done
fi

# Joined utterances: consecutive rows until each reaches its own target length, drawn uniformly
# from 5-22 s (mean about 13 s, near LibriSpeech's 12.3 s).
mkdir -p "$out/long"
sox -n -r 16000 -c 1 "$tmp/gap.wav" trim 0 0.3
rows "$out/train.csv" "$out" | awk -F'\t' -v seed="$seed" '
  BEGIN { srand(seed); target = 5 + 17 * rand() }
  { group = group (group == "" ? "" : " ") $3; text = text (text == "" ? "" : " ") $4
    total += $2 + (total > 0 ? 0.3 : 0)
    if (total >= target) { print group "\t" text; group = ""; text = ""; total = 0; target = 5 + 17 * rand() } }' \
  > "$tmp/groups"
echo "ID,duration,wav,spk_id,wrd" > "$tmp/train_long.csv"
n=0
while IFS=$'\t' read -r parts text; do
  id=$(printf 'long-%05d' $n)
  inputs=()
  k=0
  for part in $parts; do
    opusdec --quiet --rate 16000 "$part" "$tmp/part$k.wav"
    [[ $k -gt 0 ]] && inputs+=("$tmp/gap.wav")
    inputs+=("$tmp/part$k.wav")
    k=$((k + 1))
  done
  sox "${inputs[@]}" -r 16000 -c 1 "$tmp/joined.wav"
  opusenc --quiet --bitrate "$bitrate" "$tmp/joined.wav" "$out/long/$id.opus"
  duration=$(soxi -D "$tmp/joined.wav")
  echo "$id,$duration,\$data_root/long/$id.opus,joined,$text" >> "$tmp/train_long.csv"
  rm -f "$tmp"/part*.wav
  n=$((n + 1))
done < "$tmp/groups"
mv "$tmp/train_long.csv" "$out/train_long.csv"
awk -F, 'NR > 1 { s += $2; n++ } END { printf "make_benchdata: %d joined utterances, %.0f s, mean %.1f s\n", n, s, s / n }' \
  "$out/train_long.csv"

#!/usr/bin/env bash
# recipes/synth/run.sh — the quick start: synthesizes an English corpus on this machine (espeak-ng),
# trains a small ConMamba CTC model on it, decodes the voices held out of training, prints a WER table.
#
#   recipes/synth/run.sh [--stage N] [--stop-stage N] [--out DIR] [--hours H] [--seed N]
#                        [--threads N] [--hparams FILE] [--asr-model FILE] [--lm-order N]
#                        [--lm-epochs N] [-- train overrides...]
#
# Stages: 0 build the binary · 1 synthesize the corpus · 2 train (the tokenizer first) ·
#         3 decode the test voices (CTC greedy and prefix beam search) and write the WER table.
# Optional (--stop-stage 5): 4 LM text (the sentence pool minus valid/test), an ARPA n-gram and a
#         tiny char Transformer LM · 5 tune the LM weights on valid, decode test with each LM.
# Every stage is resumable: run the same command again after an interruption (Ctrl-C, kill, a
# reboot) and it goes on where it stopped. Defaults fit a 2-core machine: about 20 minutes of
# training; docs/recipes.md gives the measured times and error rates.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
stage=0 stop_stage=3 out="$root/results/synth" hours=5 seed=1234 threads="$(nproc)"
hparams="$root/hparams/CTC/conmamba_synth.yaml"
train_overrides=()
asr_model="" lm_order=3 lm_epochs=3

usage() { sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --stage) stage="$2"; shift 2 ;;
    --stop-stage) stop_stage="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --hours) hours="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --hparams) hparams="$2"; shift 2 ;;
    --asr-model) asr_model="$2"; shift 2 ;;
    --lm-order) lm_order="$2"; shift 2 ;;
    --lm-epochs) lm_epochs="$2"; shift 2 ;;
    --) shift; train_overrides=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "synth/run.sh: unknown option '$1'" >&2; usage ;;
  esac
done
for n in "$stage" "$stop_stage" "$seed" "$threads" "$lm_order" "$lm_epochs"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "synth/run.sh: '$n' is not a non-negative integer" >&2; exit 2; }
done
[[ -f "$hparams" ]] || { echo "synth/run.sh: hparams file '$hparams' not found" >&2; exit 2; }

bin="${MASR_BIN:-$root/build/bin/mamba-asr}"  # MASR_BIN: another build
data="$out/data"
exp="$out/ctc"
asr_model="${asr_model:-$exp/model.masr}"  # stages 4-5: the ASR model (its tokenizer, its scores)
lmdir="$out/lm"
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

# decode_wer NAME CSV [decode options...]: decodes CSV with $asr_model into $lmdir/NAME.{txt,log}
# and prints "WER CER RTF" from the decoder's summary on stderr.
decode_wer() {
  local name="$1" csv="$2"; shift 2
  "$bin" --threads 1 decode --model "$asr_model" "$@" "$csv" > "$lmdir/$name.txt" \
    2> "$lmdir/$name.log" || { cat "$lmdir/$name.log" >&2; exit 1; }
  printf '%s %s %s\n' \
    "$(sed -n 's/^%WER \([0-9.]*\) .*/\1/p' "$lmdir/$name.log" | tail -1)" \
    "$(sed -n 's/^%CER \([0-9.]*\) .*/\1/p' "$lmdir/$name.log" | tail -1)" \
    "$(sed -n 's/.*RTF \([0-9.]*\).*/\1/p' "$lmdir/$name.log" | tail -1)"
}

if (( stage <= 4 && 4 <= stop_stage )); then
  log "stage 4: LM text, a ${lm_order}-gram ARPA LM and a char Transformer LM into $lmdir"
  [[ -f "$asr_model" ]] || { echo "synth/run.sh: ASR model '$asr_model' not found" >&2; exit 1; }
  mkdir -p "$lmdir"
  # Every fortunes sentence of the generator except those spoken in valid.csv and test.csv.
  /usr/bin/python3 "$root/scripts/synth_corpus.py" lmtext --data "$data" --out "$lmdir" --seed "$seed"
  timed ngram "$bin" ngram --order "$lm_order" -o "$lmdir/${lm_order}gram.arpa" "$lmdir/lm_train.txt"
  # The ASR model's char tokenizer (tokenizer_file), so that LM and CTC share token ids. One
  # thread: this tiny model trains several times faster than with two on a loaded 2-core machine.
  timed lm_train "$bin" --threads 1 train "$root/hparams/LM/transformer_tiny.yaml" \
    --data_folder "$data" --output_folder "$lmdir/transformer" --tokenizer_file "$asr_model" \
    --train_csv null --valid_csv null --test_csv null \
    --lm_train_data "$lmdir/lm_train.txt" --lm_valid_data "$lmdir/lm_valid.txt" \
    --number_of_epochs "$lm_epochs" --batch_size 32 --lr 0.3 --n_warmup_steps 100 \
    --avg_checkpoints 1
fi

if (( stage <= 5 && 5 <= stop_stage )); then
  log "stage 5: tune LM weights on valid.csv, decode test.csv with each LM"
  arpa="$lmdir/${lm_order}gram.arpa" nnlm="$lmdir/transformer/model.masr"
  for f in "$arpa" "$nnlm"; do
    [[ -f "$f" ]] || { echo "synth/run.sh: $f is missing; run stage 4" >&2; exit 1; }
  done
  beam=(--search ctc-beam --beam 16)
  # Grid search on valid (never test): "WER options..." per line, the best first.
  : > "$lmdir/tuning.tsv"
  for w in 0.3 0.5 0.8; do
    for b in 2 4 6; do
      set -- --arpa "$arpa" --arpa-weight "$w" --word-bonus "$b"
      read -r wer _ <<< "$(decode_wer valid_arpa "$data/valid.csv" "${beam[@]}" "$@")"
      printf '%s\tarpa\t%s\n' "$wer" "$*" >> "$lmdir/tuning.tsv"
    done
  done
  # A char LM costs every character ~2 nats: without a per-token bonus it favours deletions.
  for w in 0.3 0.6; do
    for b in 0.5 1.0 1.5; do
      set -- --lm "$nnlm" --lm-weight "$w" --lm-token-bonus "$b"
      read -r wer _ <<< "$(decode_wer valid_nnlm "$data/valid.csv" "${beam[@]}" "$@")"
      printf '%s\tnnlm\t%s\n' "$wer" "$*" >> "$lmdir/tuning.tsv"
    done
  done
  best() { awk -F'\t' -v kind="$1" '$2 == kind' "$lmdir/tuning.tsv" | sort -g | head -1 | cut -f3; }
  read -r -a arpa_opts <<< "$(best arpa)"
  read -r -a nnlm_opts <<< "$(best nnlm)"
  log "best on valid: ${arpa_opts[*]} | ${nnlm_opts[*]}"
  table="$out/wer_lm.md"
  {
    echo "| search | LM (weights tuned on valid) | WER % | CER % | RTF |"
    echo "|---|---|---|---|---|"
  } > "$table.tmp"
  row() {  # row LABEL LM_LABEL NAME decode options...
    local label="$1" lm_label="$2" name="$3" wer cer rtf; shift 3
    read -r wer cer rtf <<< "$(decode_wer "$name" "$data/test.csv" "$@")"
    echo "| $label | $lm_label | ${wer:-?} | ${cer:-?} | ${rtf:-?} |" >> "$table.tmp"
  }
  row "CTC greedy" "-" test_greedy --search greedy
  row "CTC prefix beam 16" "-" test_beam "${beam[@]}"
  row "CTC prefix beam 16" "${lm_order}-gram: ${arpa_opts[*]:2}" test_arpa "${beam[@]}" "${arpa_opts[@]}"
  row "CTC prefix beam 16" "char Transformer: ${nnlm_opts[*]:2}" test_nnlm "${beam[@]}" "${nnlm_opts[@]}"
  row "CTC prefix beam 16" "both" test_both "${beam[@]}" "${arpa_opts[@]}" "${nnlm_opts[@]}"
  mv "$table.tmp" "$table"
  echo
  echo "Test voices, $asr_model, with LMs (valid-tuned; $lmdir/tuning.tsv):"
  cat "$table"
fi

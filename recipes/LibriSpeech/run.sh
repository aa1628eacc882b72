#!/usr/bin/env bash
# recipes/LibriSpeech/run.sh — LibriSpeech end to end, as Mamba-ASR's SpeechBrain recipes do it:
# CSVs, the ASR model (its tokenizer first), the Transformer LM on the same tokenizer, averaged
# checkpoints, then test-clean and test-other decoded with and without the LM into a WER table.
#
#   recipes/LibriSpeech/run.sh --data /data/LibriSpeech [--out DIR] [--hparams FILE]
#       [--lm-hparams FILE] [--nproc N] [--beam N] [--stage N] [--stop-stage N] [--no-lm]
#       [--asr-opts "--key value ..."] [--lm-opts "--key value ..."] [--threads N] [--device D]
#
# Stages: 1 prepare CSVs · 2 train the ASR model · 3 train the LM · 4 decode and score.
# Defaults: hparams/S2S/conmamba_large.yaml, hparams/LM/transformer.yaml, beam 10 (the paper's test
# beam is 66: --beam 66). Every stage resumes when run again; --nproc N trains on N local GPUs
# (or N CPU processes) with c10d. docs/recipes.md describes it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
data="" out="$root/results/LibriSpeech" stage=1 stop_stage=4 nproc=1 beam=10 use_lm=1
hparams="$root/hparams/S2S/conmamba_large.yaml" lm_hparams="$root/hparams/LM/transformer.yaml"
asr_opts="" lm_opts="" threads=0 device=auto

usage() { sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) data="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --hparams) hparams="$2"; shift 2 ;;
    --lm-hparams) lm_hparams="$2"; shift 2 ;;
    --nproc) nproc="$2"; shift 2 ;;
    --beam) beam="$2"; shift 2 ;;
    --stage) stage="$2"; shift 2 ;;
    --stop-stage) stop_stage="$2"; shift 2 ;;
    --no-lm) use_lm=0; shift ;;
    --asr-opts) asr_opts="$2"; shift 2 ;;
    --lm-opts) lm_opts="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "LibriSpeech/run.sh: unknown option '$1'" >&2; usage ;;
  esac
done
[[ -n "$data" ]] || { echo "LibriSpeech/run.sh: --data /path/to/LibriSpeech is required" >&2; usage; }
for n in "$stage" "$stop_stage" "$nproc" "$beam" "$threads"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "LibriSpeech/run.sh: '$n' is not a non-negative integer" >&2; exit 2; }
done
for f in "$hparams" "$lm_hparams"; do
  [[ -f "$f" ]] || { echo "LibriSpeech/run.sh: hparams file '$f' not found" >&2; exit 2; }
done

bin="${MASR_BIN:-$root/build/bin/mamba-asr}"  # MASR_BIN: another build
[[ -x "$bin" ]] || { echo "LibriSpeech/run.sh: $bin is missing; run scripts/build.sh" >&2; exit 1; }
csv="$out/csv" asr="$out/asr" lm="$out/lm"
mkdir -p "$out"
log() { printf '[LibriSpeech %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
global=(--threads "$threads" --device "$device")
launch=()
(( nproc > 1 )) && launch=(--nproc "$nproc")
# S2S hparams have an attention decoder (seq_lin); CTC ones decode with prefix beam search.
is_s2s=0
grep -q '^seq_lin:' "$hparams" && is_s2s=1

if (( stage <= 1 && 1 <= stop_stage )); then
  log "stage 1: CSVs from $data"
  "$bin" prepare librispeech "$data" "$csv"
fi

if (( stage <= 2 && 2 <= stop_stage )); then
  log "stage 2: ASR model $(basename "$hparams") into $asr"
  # shellcheck disable=SC2086  # the opts strings are word-split on purpose
  "$bin" "${global[@]}" train "${launch[@]}" "$hparams" --data_folder "$data" \
    --output_folder "$asr" --train_csv "$csv/train.csv" --valid_csv "$csv/dev-clean.csv" \
    $asr_opts
fi

if (( use_lm && stage <= 3 && 3 <= stop_stage )); then
  log "stage 3: language model $(basename "$lm_hparams") into $lm (the ASR model's tokenizer)"
  # shellcheck disable=SC2086
  "$bin" "${global[@]}" train "${launch[@]}" "$lm_hparams" --data_folder "$data" \
    --output_folder "$lm" --train_csv "$csv/train.csv" --valid_csv "$csv/dev-clean.csv" \
    --test_csv "$csv/test-clean.csv" --tokenizer_file "$asr/model.masr" $lm_opts
fi

if (( stage <= 4 && 4 <= stop_stage )); then
  log "stage 4: decode test-clean and test-other"
  table="$out/wer.md"
  echo "| set | search | LM | WER % | CER % |" > "$table.tmp"
  echo "|---|---|---|---|---|" >> "$table.tmp"
  score() {  # score SET NAME decode-args...: decodes SET, appends a table row
    local set="$1" name="$2"; shift 2
    local logf="$out/decode_${set}_${name}.log"
    [[ -f "$csv/$set.csv" ]] || { log "no $csv/$set.csv; $set skipped"; return 0; }
    "$bin" "${global[@]}" decode --model "$asr/model.masr" --beam "$beam" "$@" \
      "$csv/$set.csv" > "$out/hyp_${set}_${name}.txt" 2> "$logf" || { cat "$logf" >&2; exit 1; }
    local wer cer
    wer=$(sed -n 's/^%WER \([0-9.]*\) .*/\1/p' "$logf" | tail -1)
    cer=$(sed -n 's/^%CER \([0-9.]*\) .*/\1/p' "$logf" | tail -1)
    echo "| $set | $search | $name | ${wer:-?} | ${cer:-?} |" >> "$table.tmp"
  }
  for set in test-clean test-other; do
    if (( is_s2s )); then
      search=s2s
      score "$set" none --search s2s --ctc-weight 0.4
      (( use_lm )) && score "$set" TransformerLM --search s2s --ctc-weight 0.4 \
        --lm "$lm/model.masr" --lm-weight 0.6 --lm-temperature 1.15
    else
      search=ctc-beam
      score "$set" none --search ctc-beam
    fi
  done
  mv "$table.tmp" "$table"
  echo
  echo "$(basename "$hparams"), beam $beam ($asr/model.masr):"
  cat "$table"
fi

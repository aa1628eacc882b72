#!/usr/bin/env bash
# recipes/synth/bundle.sh — the recipe for bundled English models: synthesizes the many-engine
# corpus, trains on one GPU either the causal ConMamba S2S model (hparams/S2S/conmamba_synth_bundle.yaml)
# and its Transformer LM (hparams/LM/transformer_synth_bundle.yaml), or (MODEL=ctc) the causal
# ConMamba CTC model that `mamba-asr stream` runs (hparams/CTC/conmamba_synth_causal.yaml), and
# measures them on voices held out of training.
#
#   recipes/synth/bundle.sh STAGE...        stages run in the order given; each is resumable
#
# Stages:
#   deps     the synthesizers from $SYNTHDEPS/debs (scripts/synth_deps.sh) when sox or espeak-ng is
#            not on PATH (a machine without a package archive)
#   corpus   $HOURS of training speech: espeak-ng (every variant of 6 accents) and festival (kal,
#            ked), every speaker and channel condition at 0.3, fortunes + anarchism + KJV sentences;
#            the LM text beside it (scripts/make_synth_corpus.sh)
#   heldout  voices never trained on: espeak-ng en-gb-scotland and en-029 (every variant), clean
#            and with every condition, speaking the corpus's held-out sentences only
#   text     the LM text less every held-out sentence; 2 % of it for validation
#   train    the ASR model for $MINUTES of wall-clock time (then SIGTERM: a checkpoint), the LM
#            beside it on the same GPU once the tokenizer exists (S2S only); each averaged into
#            model.masr
#   eval     WER/CER on every test set: CTC greedy, attention beam search, and attention + LM
#            (S2S); CTC greedy and CTC beam search (ctc): $ASR_DIR/wer.md; the models are
#            $ASR_DIR/model.masr and $OUT/lm/model.masr
#
# Environment: OUT (results/synth-bundle), MODEL (s2s or ctc), ASR_DIR ($OUT/asr for s2s, $OUT/ctc
# for ctc: several runs can share one corpus), HOURS (30), SEED (1234), TEXT_OFFSET (0: the
# training sentences start this far into the seed's pool, the valid/test and held-out sets stay
# the same; scripts/make_synth_corpus.sh --text-offset), JOBS (nproc), MINUTES (20),
# ASR_ARGS, LM_ARGS (more `mamba-asr train` options, e.g. "--lr_adam 0.001"), DEVICE (cuda),
# MASR_BIN (build/bin/mamba-asr), SYNTHDEPS (.synthdeps), WORKERS (12),
# VALID_UTTS (400: the validation subset scored after each epoch), HELDOUT_UTTS (4000 per held-out
# run, of which the valid and test splits, about 10 %, are kept), TEST_UTTS (500: the first N
# utterances of each test set are decoded).
# docs/synth-corpus.md describes the corpus, docs/recipes.md this recipe and its status.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$root/results/synth-bundle}"
hours="${HOURS:-30}" seed="${SEED:-1234}" text_offset="${TEXT_OFFSET:-0}" jobs="${JOBS:-$(nproc)}" minutes="${MINUTES:-20}"
device="${DEVICE:-cuda}" workers="${WORKERS:-12}" valid_utts="${VALID_UTTS:-400}"
heldout_utts="${HELDOUT_UTTS:-4000}" test_utts="${TEST_UTTS:-500}"
bin="${MASR_BIN:-$root/build/bin/mamba-asr}"
synthdeps="${SYNTHDEPS:-$root/.synthdeps}"
model="${MODEL:-s2s}"
case "$model" in
  s2s) asr_hparams="$root/hparams/S2S/conmamba_synth_bundle.yaml" asr="${ASR_DIR:-$out/asr}" ;;
  ctc) asr_hparams="$root/hparams/CTC/conmamba_synth_causal.yaml" asr="${ASR_DIR:-$out/ctc}" ;;
  *) echo "bundle.sh: MODEL must be s2s or ctc, not '$model'" >&2; exit 2 ;;
esac
lm_hparams="$root/hparams/LM/transformer_synth_bundle.yaml"
data="$out/data" held="$out/heldout" lm="$out/lm"

# Training voices; the held-out ones are the other two espeak-ng accents. flite's voices are left
# out so that the synthesizers fit a machine that gets them as packages (its library is 13 MB).
train_voices="espeak:en-us,espeak:en-us-nyc,espeak:en-gb,espeak:en-gb-x-rp,espeak:en-gb-x-gbclan"
train_voices+=",espeak:en-gb-x-gbcwmd,festival:kal,festival:ked"
heldout_voices="espeak:en-gb-scotland,espeak:en-029"
text="fortunes,anarchism,kjv"

usage() { sed -n '2,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
log() { printf '[bundle %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { echo "bundle.sh: $*" >&2; exit 1; }
[[ $# -gt 0 ]] || usage
for n in "$seed" "$jobs" "$workers" "$valid_utts" "$heldout_utts" "$test_utts"; do
  [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a non-negative integer"
done
[[ "$hours" =~ ^[0-9]+([.][0-9]+)?$ && "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  die "HOURS and MINUTES must be numbers"
[[ "$text_offset" =~ ^[0-9]+$ ]] || die "TEXT_OFFSET must be a whole number of sentences, 0 or more"
mkdir -p "$out"

# Synthesizers unpacked by the deps stage serve every later stage (scripts/synth_deps.sh).
if ! { command -v sox && command -v espeak-ng; } >/dev/null && [[ -f "$synthdeps/root/.installed" ]]; then
  export MASR_SYNTH_ROOT="$synthdeps/root"
fi
# The header and first N rows of a CSV (the validation subset; the evaluated test utterances).
head_csv() { head -n $(($2 + 1)) "$1"; }

synth() { "$root/scripts/make_synth_corpus.sh" --seed "$seed" --jobs "$jobs" --text "$text" "$@"; }

stage_deps() {
  if command -v sox >/dev/null && command -v espeak-ng >/dev/null; then
    log "deps: sox and espeak-ng are on PATH"
  else
    [[ -f "$synthdeps/debs/MANIFEST" ]] || die "no synthesizers on PATH and no $synthdeps/debs"
    [[ -f "$synthdeps/root/.installed" ]] && cmp -s "$synthdeps/root/.installed" "$synthdeps/debs/MANIFEST" ||
      "$root/scripts/synth_deps.sh" install "$synthdeps"
    export MASR_SYNTH_ROOT="$synthdeps/root"
  fi
}

stage_corpus() {
  log "corpus: $hours h from $train_voices"
  synth --out "$data" --hours "$hours" --engines espeak,festival --voices "$train_voices" \
    --conditions all --text-offset "$text_offset" --lm-text "$data/lm_all.txt"
  # The validation subset scored after every epoch (the whole split is 5 % of the corpus).
  head_csv "$data/valid.csv" "$valid_utts" > "$data/valid_small.csv"
}


stage_heldout() {
  log "heldout: $heldout_voices, clean and with channel conditions"
  # The same seed and text sources: the valid and test splits speak the sentences the corpus
  # holds out of training; only those splits are used.
  synth --out "$held/clean" --utterances "$heldout_utts" --engines espeak --voices "$heldout_voices"
  synth --out "$held/cond" --utterances "$heldout_utts" --engines espeak --voices "$heldout_voices" \
    --conditions all --seed $((seed + 1))
  for set in clean cond; do
    cat "$held/$set/valid.csv" <(tail -n +2 "$held/$set/test.csv") > "$held/$set.csv"
  done
}

stage_text() {
  log "text: LM sentences less every held-out sentence"
  /usr/bin/python3 - "$data/lm_all.txt" "$out/lm_train.txt" "$out/lm_valid.txt" \
      "$held/clean.csv" "$held/cond.csv" "$data/valid.csv" "$data/test.csv" <<'PY'
import csv, random, sys
src, train_out, valid_out, *csvs = sys.argv[1:]
held = set()
for path in csvs:
    with open(path, newline="") as f:
        held.update(row["wrd"] for row in csv.DictReader(f))
lines = [l.rstrip("\n") for l in open(src) if l.strip()]
kept = [l for l in lines if l not in held]
random.Random(1234).shuffle(kept)
n_valid = max(1, len(kept) // 50)
open(valid_out, "w").write("\n".join(kept[:n_valid]) + "\n")
open(train_out, "w").write("\n".join(kept[n_valid:]) + "\n")
print(f"text: {len(lines)} sentences, {len(lines) - len(kept)} held out, "
      f"{len(kept) - n_valid} train, {n_valid} valid", file=sys.stderr)
PY
}

train_lm() {  # after the ASR run has trained its tokenizer; the same time budget
  local tok="" status=0
  # The ASR run's tokenizer (save/N_TYPE.model, whatever its size and type: ASR_ARGS may change
  # them), and the LM's vocabulary from it.
  while [[ -z $tok ]]; do
    tok=$(compgen -G "$asr/save/[0-9]*_*.model" | head -1 || true)
    [[ -n $tok ]] || sleep 5
  done
  local args=(train "$lm_hparams" --data_folder "$data" --output_folder "$lm" --tokenizer_file "$tok"
              --train_csv null --valid_csv null --test_csv null --lm_train_data "$out/lm_train.txt"
              --lm_valid_data "$out/lm_valid.txt" --lm_test_data "$out/lm_valid.txt"
              --output_neurons "$(basename "$tok" | cut -d_ -f1)" ${LM_ARGS:-})
  timeout -s TERM "${minutes}m" "$bin" --device "$device" "${args[@]}" > "$out/lm_train.log" 2>&1 ||
    status=$?
  [[ $status -eq 0 || $status -eq 124 ]] || return 1
  [[ -f "$lm/model.masr" && $status -eq 0 ]] || "$bin" "${args[@]}" --average-only >> "$out/lm_train.log" 2>&1
}

stage_train() {
  local lm_pid="" status=0
  if [[ $model == s2s ]]; then
    train_lm & lm_pid=$!
    trap 'kill $lm_pid 2>/dev/null || true' EXIT  # a failed ASR run does not leave the LM waiting
  fi
  mkdir -p "$asr"
  # The S2S model learns nothing from scratch with SpecAugment on (its hparams say so): a run
  # that does not continue a model starts without it (ASR_ARGS, after this, may still set it).
  local cold=""
  if [[ $model == s2s && " ${ASR_ARGS:-} " != *" --init-model "* ]]; then
    cold="--augment_prob 0.0"
    log "train: from scratch, so without SpecAugment (--augment_prob 0.0; a warm start keeps it)"
  fi
  log "train: $model ASR for $minutes min ($asr/train.log)"
  timeout -s TERM "${minutes}m" "$bin" --device "$device" train "$asr_hparams" \
    --data_folder "$data" --output_folder "$asr" --train_csv "$data/train.csv" \
    --valid_csv "$data/valid_small.csv" \
    --test_csv "$data/test.csv" --num_workers "$workers" $cold ${ASR_ARGS:-} > "$asr/train.log" 2>&1 ||
    status=$?
  # 124: the time budget ended it (SIGTERM writes a checkpoint first); then average.
  [[ $status -eq 0 || $status -eq 124 ]] || die "ASR training failed ($status): $asr/train.log"
  "$bin" train "$asr_hparams" --data_folder "$data" --output_folder "$asr" --average-only \
    --train_csv "$data/train.csv" --valid_csv "$data/valid_small.csv" --test_csv "$data/test.csv" \
    $cold ${ASR_ARGS:-} >> "$asr/train.log" 2>&1
  if [[ -n $lm_pid ]]; then
    wait "$lm_pid" || die "LM training failed: $out/lm_train.log"
    trap - EXIT
    log "train: $asr/model.masr and $lm/model.masr"
  else
    log "train: $asr/model.masr"
  fi
}

# wer NAME CSV OPTIONS...: one decode, its summary line in $asr/wer.tsv
wer() {
  local name="$1" csv="$2"; shift 2
  "$bin" --device "$device" decode --model "$asr/model.masr" "$@" "$csv" \
    > "$asr/eval/$name.txt" 2> "$asr/eval/$name.log" || die "decode $name: $asr/eval/$name.log"
  printf '%s\t%s\t%s\t%s\n' "$name" \
    "$(sed -n 's/^%WER \([0-9.]*\) .*/\1/p' "$asr/eval/$name.log" | tail -1)" \
    "$(sed -n 's/^%CER \([0-9.]*\) .*/\1/p' "$asr/eval/$name.log" | tail -1)" \
    "$(tail -n +2 "$csv" | wc -l)" >> "$asr/wer.tsv"
}

stage_eval() {
  mkdir -p "$asr/eval"
  : > "$asr/wer.tsv"
  for set in test:"$data/test.csv" heldout_clean:"$held/clean.csv" heldout_cond:"$held/cond.csv"; do
    local name="${set%%:*}" csv="$asr/eval/${set%%:*}.csv"
    head_csv "${set#*:}" "$test_utts" > "$csv"
    wer "${name}_greedy" "$csv" --search greedy
    if [[ $model == ctc ]]; then
      wer "${name}_ctc_beam" "$csv" --search ctc-beam --beam 10
    else
      wer "${name}_s2s" "$csv" --search s2s --beam 10
      wer "${name}_s2s_lm" "$csv" --search s2s --beam 10 --lm "$lm/model.masr"
    fi
  done
  { echo "| decode | WER % | CER % | utterances |"; echo "|---|---|---|---|"
    awk -F'\t' '{printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}' "$asr/wer.tsv"; } > "$asr/wer.md"
  cat "$asr/wer.md"
}


for s in "$@"; do
  case "$s" in
    deps|corpus|heldout|text|train|eval) "stage_$s" ;;
    *) echo "bundle.sh: unknown stage '$s'" >&2; usage ;;
  esac
done

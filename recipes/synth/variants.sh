#!/usr/bin/env bash
# recipes/synth/variants.sh — short trainings side by side on one corpus and one GPU, to find out
# what makes a recipe learn: each variant is one `mamba-asr train` with its own hparams, options
# and environment, all stopped after the same wall-clock time, then compared on one table (the
# last epoch's losses and accuracy, and for ASR variants CTC greedy and attention WER on the
# first VALID_UTTS utterances of the validation set, decoded with the variant's averaged model).
#
#   recipes/synth/variants.sh VARIANTS.tsv DATA OUT
#
# VARIANTS.tsv: one variant per line, tab-separated: NAME, KIND (asr or lm), HPARAMS (relative to
# the repository or absolute), ENV (VAR=VALUE[,VAR=VALUE...] or -), ARGS (more train options, or
# nothing); '#' starts a comment line. DATA: a corpus folder as recipes/synth/bundle.sh makes it
# ($OUT/data of bundle.sh: train.csv, valid_small.csv, test.csv; the LM text lm_train.txt and
# lm_valid.txt in the folder above it). LM variants take the tokenizer of the first ASR variant
# with a unigram tokenizer (they wait for it, as bundle.sh's LM does). OUT: a folder per variant,
# and summary.md.
#
# ARGS may hold @PREV_ASR@, replaced by the file PREV_ASR names (e.g. `--init-model @PREV_ASR@`:
# variants that continue one model; gpu_session.sh sets it to the previous session's weights).
#
# Environment: MINUTES (10: each variant's wall-clock budget), WORKERS (2 loader workers per
# variant), THREADS (LibTorch CPU threads per variant; default: the cores shared out), DEVICE
# (cuda), MASR_BIN (build/bin/mamba-asr), VALID_UTTS (200: utterances decoded per set), HELDOUT (a
# folder with clean.csv and cond.csv, voices never trained on; default DATA/../heldout, as
# bundle.sh makes it: when there, every ASR variant is also decoded on the first VALID_UTTS of
# each, with its better search on the validation set), DECODE (1; 0: no decoding), PREV_ASR,
# CHECK_ONLY (1: check every line, as always before a run, and start nothing), KEEP (a variant's
# name, or `best`: the ASR variant with the lowest held-out WER, the mean of clean and cond, or
# without held-out sets the lowest validation WER, CTC greedy or attention; then OUT/kept names
# it, and the LM variant with the lowest last validation loss when that ASR variant's tokenizer is
# the LMs': lines "asr NAME" and "lm NAME"; gpu_session.sh brings their weights back). The
# averaging and decoding of the variants run side by side, as their trainings did. GPUS (with
# DEVICE cuda: how many of the visible GPUs to use, default all): the variants go round-robin
# over them (variant i on GPU i mod GPUS, through CUDA_VISIBLE_DEVICES; a line's own ENV wins),
# so that a machine with two GPUs trains twice the variants at one GPU's pace each.
# recipes/synth/variants-learn.tsv holds the variants of the first 2026-11-29 question (why does
# the bundle's S2S model stay at CTC blanks and its LM at a unigram model on the GPU?),
# recipes/synth/variants-learn2.tsv those of the next one (which S2S configuration learns?).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# -eq 3 ]] || { awk 'NR > 1 && !/^#/ {exit} NR > 1' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
variants="$1" data="$2" out="$3"
minutes="${MINUTES:-10}" workers="${WORKERS:-2}" device="${DEVICE:-cuda}"
bin="${MASR_BIN:-$root/build/bin/mamba-asr}" valid_utts="${VALID_UTTS:-200}"
heldout="${HELDOUT:-$data/../heldout}"
[[ -f $variants ]] || { echo "variants.sh: no file $variants" >&2; exit 2; }
[[ -f $data/train.csv && -f $data/valid_small.csv ]] ||
  { echo "variants.sh: $data lacks train.csv or valid_small.csv (bundle.sh corpus makes them)" >&2; exit 2; }
[[ -x $bin ]] || { echo "variants.sh: no mamba-asr at $bin (MASR_BIN)" >&2; exit 2; }
mkdir -p "$out"
log() { printf '[variants %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# unigram_variant HPARAMS ARGS: whether the variant trains a unigram tokenizer (its options
# override the file's token_type).
unigram_variant() {
  local type
  type=$(sed -n 's/^token_type: *\([A-Za-z]*\).*/\1/p' "$1" | head -1)
  if [[ " $2 " =~ \ --token_type[=\ ]([A-Za-z]+)\  ]]; then type="${BASH_REMATCH[1]}"; fi
  [[ $type == unigram ]]
}

# Every line checked before any run starts.
names=() kinds=() hps=() envss=() argss=()
first_unigram_asr=""
while IFS=$'\t' read -r name kind hparams envs args || [[ -n ${name:-} ]]; do
  [[ -z ${name:-} || $name == \#* ]] && continue
  if [[ ${args:-} == *@PREV_ASR@* ]]; then
    if [[ -n ${PREV_ASR:-} && -f $PREV_ASR ]]; then
      args="${args//@PREV_ASR@/$PREV_ASR}"
    elif [[ ${CHECK_ONLY:-0} == 1 ]]; then
      args="${args//@PREV_ASR@//dev/null}"  # train --dry-run only checks that it exists
    else
      echo "variants.sh: $name: its options name @PREV_ASR@, but PREV_ASR ('${PREV_ASR:-}') is no file" >&2; exit 2
    fi
  fi
  [[ $hparams == /* ]] || hparams="$root/$hparams"
  [[ -f $hparams ]] || { echo "variants.sh: $name: no hparams file $hparams" >&2; exit 2; }
  case "$kind" in asr|lm) ;; *) echo "variants.sh: $name: KIND must be asr or lm, not '$kind'" >&2; exit 2 ;; esac
  if [[ $kind == asr && -z $first_unigram_asr ]] && unigram_variant "$hparams" "${args:-}"; then
    first_unigram_asr="$out/$name"
  fi
  if [[ $kind == lm && -z $first_unigram_asr ]]; then
    echo "variants.sh: $name: an LM variant needs an ASR variant with a unigram tokenizer before it" >&2; exit 2
  fi
  names+=("$name") kinds+=("$kind") hps+=("$hparams") envss+=("${envs:--}") argss+=("${args:-}")
done < "$variants"
((${#names[@]} > 0)) || { echo "variants.sh: $variants lists no variant" >&2; exit 2; }
# corpus_args KIND TOKENIZER: the options that point a train of KIND at the corpus, into the array
# `corpus` (an LM variant's tokenizer: TOKENIZER).
corpus_args() {
  if [[ $1 == asr ]]; then
    corpus=(--data_folder "$data" --train_csv "$data/train.csv" --valid_csv "$data/valid_small.csv"
            --test_csv "$data/test.csv")
  else
    corpus=(--data_folder "$data" --tokenizer_file "$2" --train_csv null --valid_csv null
            --test_csv null --lm_train_data "$data/../lm_train.txt"
            --lm_valid_data "$data/../lm_valid.txt" --lm_test_data "$data/../lm_valid.txt")
    # The LM's vocabulary is its tokenizer's (N_unigram.model); the variant's own options come
    # after these and may still say otherwise.
    local n
    n=$(basename "$2" | sed -n 's/^\([0-9][0-9]*\)_.*\.model$/\1/p')
    [[ -z $n ]] || corpus+=(--output_neurons "$n")
  fi
}

# Each variant's hparams and options resolved (train --dry-run), so that a mistyped option fails
# here rather than leaving a run out of a GPU session.
for i in "${!names[@]}"; do
  corpus_args "${kinds[$i]}" tokenizer.model
  # shellcheck disable=SC2086
  if ! "$bin" --device cpu train "${hps[$i]}" --dry-run "${corpus[@]}" ${argss[$i]} \
      > /dev/null 2> "$out/dry-run.err"; then
    echo "variants.sh: ${names[$i]}: train --dry-run refuses it: $(grep -m1 -i 'error' "$out/dry-run.err" || tail -1 "$out/dry-run.err")" >&2
    exit 2
  fi
done
rm -f "$out/dry-run.err"
if [[ ${CHECK_ONLY:-0} == 1 ]]; then log "${#names[@]} variants checked; CHECK_ONLY=1: none started"; exit 0; fi
# The GPUs the variants go round-robin over: the visible ones (CUDA_VISIBLE_DEVICES, or every one
# nvidia-smi lists), at most GPUS of them; with one (or none found) nothing is set.
gpus=()
if [[ $device == cuda ]]; then
  if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
    IFS=',' read -r -a gpus <<< "$CUDA_VISIBLE_DEVICES"
  elif command -v nvidia-smi > /dev/null; then
    mapfile -t gpus < <(nvidia-smi -L 2> /dev/null | awk '/^GPU [0-9]+:/ {sub(":", "", $2); print $2}')
  fi
  if [[ -n ${GPUS:-} ]]; then
    [[ $GPUS =~ ^[1-9][0-9]*$ ]] || { echo "variants.sh: GPUS='$GPUS': expected a whole number >= 1" >&2; exit 2; }
    ((GPUS < ${#gpus[@]})) && gpus=("${gpus[@]:0:GPUS}")
  fi
fi
# LibTorch's CPU threads: the cores shared out (each run would otherwise take them all).
threads="${THREADS:-$(( $(nproc) / ${#names[@]} > 0 ? $(nproc) / ${#names[@]} : 1 ))}"

pids=()
for i in "${!names[@]}"; do
  name="${names[$i]}" kind="${kinds[$i]}" hparams="${hps[$i]}" envs="${envss[$i]}" args="${argss[$i]}"
  dir="$out/$name"
  mkdir -p "$dir"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$kind" "$hparams" "$envs" "$args" > "$dir/variant.tsv"
  env_list=()
  if ((${#gpus[@]} > 1)); then env_list+=("CUDA_VISIBLE_DEVICES=${gpus[$((i % ${#gpus[@]}))]}"); fi
  if [[ $envs != - ]]; then
    IFS=',' read -r -a more <<< "$envs"
    env_list+=("${more[@]}")
  fi
  (
    tok=""
    if [[ $kind == lm ]]; then  # the first unigram ASR variant's tokenizer, once it exists
      while ! compgen -G "$first_unigram_asr/save/*_unigram.model" > /dev/null; do
        [[ -f $first_unigram_asr/rc ]] && { echo "the ASR variant ended without a tokenizer" > "$dir/train.log"; echo 1 > "$dir/rc"; exit 0; }
        sleep 5
      done
      tok=$(compgen -G "$first_unigram_asr/save/*_unigram.model" | head -1)
    fi
    corpus_args "$kind" "$tok"
    [[ $kind == asr ]] && corpus+=(--num_workers "$workers")
    # shellcheck disable=SC2086
    env "${env_list[@]}" timeout -s TERM "${minutes}m" "$bin" --device "$device" --threads "$threads" \
      train "$hparams" --output_folder "$dir" "${corpus[@]}" $args > "$dir/train.log" 2>&1 &&
      echo 0 > "$dir/rc" || echo $? > "$dir/rc"
  ) &
  pids+=($!)
  on=""  # the GPU the run sees, when this script or the line chose one
  for e in "${env_list[@]}"; do [[ $e == CUDA_VISIBLE_DEVICES=* ]] && on=" on GPU ${e#*=}"; done
  log "$name ($kind): started$on"
done
log "${#names[@]} variants for $minutes min each, $threads CPU thread(s) each"
wait "${pids[@]}" || true

# wer_of DIR CSV OPTIONS...: "WER / CER" of one decode of the averaged model
wer_of() {
  local dir="$1" csv="$2" name="$3"; shift 3
  if "$bin" --device "$device" decode --model "$dir/model.masr" "$@" "$csv" > "$dir/$name.txt" 2> "$dir/$name.log"; then
    echo "$(sed -n 's/^%WER \([0-9.]*\) .*/\1/p' "$dir/$name.log" | tail -1) / $(sed -n 's/^%CER \([0-9.]*\) .*/\1/p' "$dir/$name.log" | tail -1)"
  else
    echo "failed"
  fi
}

head -n $((valid_utts + 1)) "$data/valid_small.csv" > "$out/valid_head.csv"
held_sets=()
if [[ -f $heldout/clean.csv && -f $heldout/cond.csv ]]; then
  held_sets=(clean cond)
  for set in "${held_sets[@]}"; do head -n $((valid_utts + 1)) "$heldout/$set.csv" > "$out/heldout_$set.csv"; done
fi

# evaluate I: variant I's averaged model (ASR variants: and its decodes) as lines "KEY VALUE"
# on stdout: greedy and att ("WER / CER" on the validation set), held ("SEARCH: clean W / C,
# cond W / C"), held_mean (the two held-out WERs' mean).
evaluate() {
  local i=$1 name="${names[$1]}" kind="${kinds[$1]}" hparams="${hps[$1]}" args="${argss[$1]}"
  local dir="$out/${names[$1]}" rc greedy="" att="" search w set h_line="" h_wers=()
  rc=$(cat "$dir/rc" 2>/dev/null || echo "?")
  # 124: the time budget (SIGTERM writes a checkpoint); then average what exists.
  if [[ $kind == asr && ($rc == 0 || $rc == 124) && ${DECODE:-1} == 1 ]]; then
    corpus_args asr
    # shellcheck disable=SC2086
    if "$bin" train "$hparams" --output_folder "$dir" --average-only "${corpus[@]}" $args \
        >> "$dir/train.log" 2>&1 && [[ -f $dir/model.masr ]]; then
      greedy=$(wer_of "$dir" "$out/valid_head.csv" greedy --search greedy)
      grep -q '^seq_lin:' "$hparams" && att=$(wer_of "$dir" "$out/valid_head.csv" s2s --search s2s --beam 10)
      echo "greedy $greedy"
      echo "att $att"
      # The held-out sets with the search that did better on the validation set.
      local -a search_args=(--search greedy)
      search=greedy
      if [[ -n $att && ${att%% *} =~ ^[0-9.]+$ ]] && { ! [[ ${greedy%% *} =~ ^[0-9.]+$ ]] ||
          awk -v a="${att%% *}" -v b="${greedy%% *}" 'BEGIN {exit !(a < b)}'; }; then
        search=s2s search_args=(--search s2s --beam 10)
      fi
      for set in "${held_sets[@]}"; do
        w=$(wer_of "$dir" "$out/heldout_$set.csv" "heldout_${set}_$search" "${search_args[@]}")
        h_line+="${h_line:+, }$set $w"
        [[ ${w%% *} =~ ^[0-9.]+$ ]] && h_wers+=("${w%% *}")
      done
      if [[ -n $h_line ]]; then
        echo "held $search: $h_line"
        ((${#h_wers[@]} == ${#held_sets[@]})) &&
          echo "held_mean $(printf '%s\n' "${h_wers[@]}" | awk '{s += $1} END {printf "%.2f", s / NR}')"
      fi
    else
      echo "greedy no model"
    fi
  elif [[ $kind == lm && $rc == 124 && ! -f $dir/model.masr ]]; then  # stopped by the budget
    corpus_args lm "$(compgen -G "$first_unigram_asr/save/*_unigram.model" | head -1)"
    # shellcheck disable=SC2086
    "$bin" train "$hparams" --output_folder "$dir" --average-only "${corpus[@]}" $args \
      >> "$dir/train.log" 2>&1 || true
  fi
  return 0
}
pids=()
for i in "${!names[@]}"; do
  evaluate "$i" > "$out/${names[$i]}/eval.txt" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}" || true

wers=() losses=()  # per variant: its WER for KEEP=best; an LM's last valid loss
field() { sed -n "s/^$2 //p" "$1/eval.txt" | head -1; }  # field DIR KEY: a line of evaluate's
{
  echo "| variant | kind | env | options | exit | epochs | last epoch line | CTC greedy WER / CER % | attention WER / CER % | held-out WER / CER % |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for i in "${!names[@]}"; do
    name="${names[$i]}" kind="${kinds[$i]}" envs="${envss[$i]}" args="${argss[$i]}" dir="$out/${names[$i]}"
    rc=$(cat "$dir/rc" 2>/dev/null || echo "?")
    last=$(grep -E '^epoch [0-9]+:' "$dir/train.log" | tail -1 | cut -d';' -f1 || true)
    epochs=$(grep -cE '^epoch [0-9]+:' "$dir/train.log" || true)
    greedy=$(field "$dir" greedy) att=$(field "$dir" att) held=$(field "$dir" held) held_mean=$(field "$dir" held_mean)
    echo "| $name | $kind | $envs | $args | $rc | $epochs | ${last:-none} | $greedy | $att | $held |"
    if ((${#held_sets[@]} > 0)); then
      wers[$i]=$held_mean
    else
      wers[$i]=$(printf '%s\n%s\n' "${greedy%% *}" "${att%% *}" | grep -E '^[0-9.]+$' | sort -g | head -1 || true)
    fi
    losses[$i]=$(sed -n 's/.*valid_loss \([0-9.]*\).*/\1/p' <<< "$last")
  done
} > "$out/summary.md"
cat "$out/summary.md"

# KEEP: which variant's weights to keep (OUT/kept).
rm -f "$out/kept"
if [[ -n ${KEEP:-} ]]; then
  keep_asr=""
  for i in "${!names[@]}"; do
    [[ ${kinds[$i]} == asr && -f $out/${names[$i]}/model.masr ]] || continue
    if [[ $KEEP == best ]]; then
      [[ -n ${wers[$i]:-} ]] || continue
      if [[ -z $keep_asr ]] || awk -v a="${wers[$i]}" -v b="${wers[$keep_asr]}" 'BEGIN {exit !(a < b)}'; then
        keep_asr=$i
      fi
    elif [[ ${names[$i]} == "$KEEP" ]]; then
      keep_asr=$i
    fi
  done
  if [[ -z $keep_asr ]]; then
    log "KEEP=$KEEP: no ASR variant with a model to keep"
  else
    echo "asr ${names[$keep_asr]}" > "$out/kept"
    keep_lm=""
    if [[ $out/${names[$keep_asr]} == "$first_unigram_asr" ]]; then  # the LMs' tokenizer
      for i in "${!names[@]}"; do
        [[ ${kinds[$i]} == lm && -f $out/${names[$i]}/model.masr && -n ${losses[$i]:-} ]] || continue
        if [[ -z $keep_lm ]] || awk -v a="${losses[$i]}" -v b="${losses[$keep_lm]}" 'BEGIN {exit !(a < b)}'; then
          keep_lm=$i
        fi
      done
    fi
    [[ -n $keep_lm ]] && echo "lm ${names[$keep_lm]}" >> "$out/kept"
    log "kept: $(tr '\n' ' ' < "$out/kept")"
  fi
fi

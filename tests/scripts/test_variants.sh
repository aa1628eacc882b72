#!/usr/bin/env bash
# tests/scripts/test_variants.sh — recipes/synth/variants.sh on the CPU: three small S2S variants
# (one with char tokens, one with an environment variable) and an LM that waits for the first
# unigram variant's tokenizer train side by side until their time is up; the table then has a row
# per variant with the time budget's exit status (124), an epoch line or none, and WER figures
# decoded from each ASR variant's averaged model; the LM's vocabulary is its tokenizer's, and KEEP
# names the kept ASR variant and the LM that shares its tokenizer. Bad variant files (a wrong kind, a missing hparams file, an option the hparams lack, an LM
# before any ASR variant, no variant) and corpus folders are refused with exit 2 and a message,
# before anything starts; the variants files of recipes/synth pass the checks; with several GPUs the
# variants go round-robin over them (stand-ins for the binary and nvidia-smi). Exit 77 (skipped)
# without espeak-ng or sox.
#   tests/scripts/test_variants.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$(cd "${1:?source dir}" && pwd)"
bin="$(cd "${2:?build dir}" && pwd)/bin/mamba-asr"
# shellcheck source=checks.sh
source "$src/tests/scripts/checks.sh"
skip_without espeak-ng sox soxi
v="$src/recipes/synth/variants.sh"

# A corpus in bundle.sh's layout: data/{train,valid_small,test}.csv, LM text beside data/.
mkdir -p "$tmp/c/data/wav"
sentences=("THE CAT SAT ON THE MAT" "A DOG RAN IN THE PARK" "SHE READ A GOOD BOOK" "WE WALKED HOME LATE"
           "THE SUN IS VERY BRIGHT" "HE PLAYS THE OLD PIANO" "BIRDS SING IN THE MORNING"
           "THE RIVER FLOWS TO THE SEA")
for f in train valid_small test; do echo "ID,duration,wav,spk_id,wrd" > "$tmp/c/data/$f.csv"; done
i=0
for s in "${sentences[@]}"; do
  w="$tmp/c/data/wav/u$i.wav"
  espeak-ng -w "$tmp/raw.wav" "$s" && sox -q "$tmp/raw.wav" -r 16000 "$w"
  row="u$i,$(soxi -D "$w"),$w,spk,$s"
  echo "$row" >> "$tmp/c/data/train.csv"
  ((i < 3)) && echo "$row" >> "$tmp/c/data/valid_small.csv"
  ((i < 2)) && echo "$row" >> "$tmp/c/data/test.csv"
  i=$((i + 1))
done
printf '%s\n' "${sentences[@]}" > "$tmp/c/lm_train.txt"
printf '%s\n' "${sentences[@]:0:3}" > "$tmp/c/lm_valid.txt"

small="--num_encoder_layers 1 --num_decoder_layers 1 --d_model 32 --nhead 2 --d_ffn 64 --output_neurons 40"
small+=" --batch_size 4 --dynamic_batching False"
# A char variant first (the file's own token type: the LM must not take its tokenizer), then two
# whose options make them unigram; the LM's vocabulary comes from the tokenizer it takes
# (40_unigram.model), not from its hparams' 500. 26 = 23 characters and 3 specials.
printf '# small variants\ns2s-char\tasr\thparams/S2S/conmamba_synth_bundle.yaml\t-\t%s --token_type char --output_neurons 26\n' "$small" > "$tmp/v.tsv"
printf 's2s\tasr\thparams/S2S/conmamba_synth_bundle.yaml\t-\t%s --token_type unigram\n' "$small" >> "$tmp/v.tsv"
printf 's2s-env\tasr\thparams/S2S/conmamba_synth_bundle.yaml\tMASR_CUDA_GRAPHS=0\t%s --token_type unigram\n' "$small" >> "$tmp/v.tsv"
printf 'lm\tlm\thparams/LM/transformer_synth_bundle.yaml\t-\t--d_model 32 --batch_size 4\n' >> "$tmp/v.tsv"

if KEEP=s2s MINUTES=0.4 DEVICE=cpu WORKERS=0 VALID_UTTS=3 MASR_BIN="$bin" bash "$v" "$tmp/v.tsv" "$tmp/c/data" "$tmp/out" \
    > "$tmp/run.log" 2>&1; then
  ok "variants.sh ran"
else
  bad "variants.sh failed: $(tail -5 "$tmp/run.log")"
fi
summary="$tmp/out/summary.md"
if [[ -f $summary ]]; then
  cat "$summary"
  for name in s2s-char s2s s2s-env lm; do
    row=$(grep "^| $name |" "$summary" || true)
    [[ -n $row ]] && ok "$name has a row" || bad "$name has no row"
    # The time budget ended each run (124), or it finished its epochs first (0).
    echo "$row" | awk -F'|' '{gsub(/ /, "", $6); exit !($6 == "124" || $6 == "0")}' &&
      ok "$name: exit status of the time budget" || bad "$name: exit status in '$row'"
  done
  grep -q '^| s2s-env | asr | MASR_CUDA_GRAPHS=0 |' "$summary" && ok "the variant's environment is listed" ||
    bad "s2s-env's environment is missing"
  # WER / CER figures from the averaged models of both ASR variants.
  # No held-out sets beside this corpus: that column stays empty.
  [[ $(grep -cE '^\| s2s(-env|-char)? \|.*\| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \|  \|$' "$summary") == 3 ]] &&
    ok "the three ASR variants decoded (greedy and attention)" || bad "ASR variants without WER figures"
  [[ -f $tmp/out/s2s-char/save/26_char.model ]] && ok "s2s-char trained a char tokenizer" ||
    bad "s2s-char's tokenizer: $(ls "$tmp/out/s2s-char/save")"
  grep -q "^tokenizer_file: .*/out/s2s/save/40_unigram.model" "$tmp/out/lm/hyperparams.yaml" 2>/dev/null &&
    ok "the LM trained with the first unigram variant's tokenizer" ||
    bad "the LM's tokenizer: $(grep '^tokenizer_file' "$tmp/out/lm/hyperparams.yaml" 2>/dev/null)"
  # The LM was stopped by the budget or finished: either way averaged into a model of 40 tokens.
  if [[ -f $tmp/out/lm/model.masr ]] && grep -q '^output_neurons: 40' "$tmp/out/lm/hyperparams.yaml"; then
    ok "the LM has a model of the tokenizer's 40 tokens"
  else
    bad "the LM: $(ls "$tmp/out/lm"), $(grep '^output_neurons' "$tmp/out/lm/hyperparams.yaml" 2>/dev/null)"
  fi
  # KEEP=s2s: the ASR variant by name and, as s2s made the LM's tokenizer, the LM with it.
  [[ $(cat "$tmp/out/kept" 2>/dev/null) == $'asr s2s\nlm lm' ]] && ok "KEEP: s2s and the LM kept" ||
    bad "KEEP: kept is '$(cat "$tmp/out/kept" 2>/dev/null)'"
else
  bad "no summary.md: $(tail -5 "$tmp/run.log")"
fi

# Variants that continue a model (@PREV_ASR@: s2s-char's), one with VTLP alone (the drops' counts
# 0), decoded on held-out sets too (HELDOUT's clean.csv and cond.csv; here the validation
# utterances); KEEP=best then picks by the held-out mean.
mkdir -p "$tmp/held"
cp "$tmp/c/data/valid_small.csv" "$tmp/held/clean.csv" && cp "$tmp/c/data/test.csv" "$tmp/held/cond.csv"
warm="$small --token_type char --output_neurons 26 --init-model @PREV_ASR@"
printf 'warm\tasr\thparams/S2S/conmamba_synth_bundle.yaml\t-\t%s --augment_prob 0.0\n' "$warm" > "$tmp/warm.tsv"
printf 'warm-vtlp\tasr\thparams/S2S/conmamba_synth_bundle.yaml\t-\t%s %s\n' "$warm" \
  "--augment_prob 1.0 --time_drop_count_low 0 --time_drop_count_high 0 --freq_drop_count_low 0 --freq_drop_count_high 0 --vtlp_warp_low 0.9 --vtlp_warp_high 1.1" >> "$tmp/warm.tsv"
if PREV_ASR="$tmp/out/s2s-char/model.masr" HELDOUT="$tmp/held" KEEP=best MINUTES=0.3 DEVICE=cpu WORKERS=0 \
    VALID_UTTS=3 MASR_BIN="$bin" bash "$v" "$tmp/warm.tsv" "$tmp/c/data" "$tmp/wout" > "$tmp/warm.log" 2>&1; then
  ok "variants.sh ran the warm variants"
else
  bad "the warm variants failed: $(tail -5 "$tmp/warm.log")"
fi
ws="$tmp/wout/summary.md"
[[ -f $ws ]] && cat "$ws"
for name in warm warm-vtlp; do
  grep -q "train: the weights from $tmp/out/s2s-char/model.masr (--init-model)" "$tmp/wout/$name/train.log" 2>/dev/null &&
    ok "$name started from s2s-char's weights" || bad "$name: no --init-model line in its log"
  grep -qE "^\| $name \|.*\| (greedy|s2s): clean [0-9.]+ / [0-9.]+, cond [0-9.]+ / [0-9.]+ \|$" "$ws" 2>/dev/null &&
    ok "$name decoded on both held-out sets" || bad "$name: no held-out figures"
done
# The run's summary line names the feature augmentation: on every batch for warm-vtlp, never for
# warm (augment_prob 0).
grep -q "fea_augment: 4-4 of \[SpectralSmoothing, SpectrogramDrop, SpectrogramDrop, VTLP\], sequential;" "$tmp/wout/warm-vtlp/train.log" &&
  ok "warm-vtlp's log names its augmentation" || bad "warm-vtlp: $(grep -m1 'training utterances' "$tmp/wout/warm-vtlp/train.log")"
grep -q "fea_augment: .*, sequential, prob 0;" "$tmp/wout/warm/train.log" &&
  ok "warm's log says its augmentation is off" || bad "warm: $(grep -m1 'training utterances' "$tmp/wout/warm/train.log")"
# The kept one has the lower held-out mean (the two WERs' mean from eval.txt).
mean() { sed -n 's/^held_mean //p' "$tmp/wout/$1/eval.txt" 2>/dev/null; }
want=$(awk -v a="$(mean warm)" -v b="$(mean warm-vtlp)" 'BEGIN {if (a != "" && b != "") print (b < a ? "warm-vtlp" : "warm")}')
[[ -n $want && $(cat "$tmp/wout/kept" 2>/dev/null) == "asr $want" ]] &&
  ok "KEEP=best: the lower held-out mean ($want: $(mean warm) / $(mean warm-vtlp))" ||
  bad "KEEP=best kept '$(cat "$tmp/wout/kept" 2>/dev/null)', means '$(mean warm)' '$(mean warm-vtlp)'"
refused() {  # name expected-message command...
  local name="$1" want="$2"; shift 2
  local rc=0
  "$@" > "$tmp/err.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] && grep -q "$want" "$tmp/err.log" && ok "refused: $name" ||
    bad "$name: rc $rc, $(cat "$tmp/err.log")"
}
refused "@PREV_ASR@ without PREV_ASR" "PREV_ASR ('') is no file" env -u PREV_ASR MASR_BIN="$bin" bash "$v" "$tmp/warm.tsv" "$tmp/c/data" "$tmp/o9"

# bundle.sh's training from scratch runs without SpecAugment (the hparams' augment_prob 1.0 is
# for continuing a model that already listens).
if OUT="$tmp/c" ASR_DIR="$tmp/cold" MINUTES=0.2 DEVICE=cpu WORKERS=0 MASR_BIN="$bin" \
    ASR_ARGS="$small --token_type char --output_neurons 26" LM_ARGS="--d_model 32 --batch_size 4" \
    bash "$src/recipes/synth/bundle.sh" train > "$tmp/cold.log" 2>&1; then
  grep -q "train: from scratch, so without SpecAugment (--augment_prob 0.0" "$tmp/cold.log" &&
    grep -q "fea_augment: .*, sequential, prob 0;" "$tmp/cold/train.log" &&
    ok "bundle.sh from scratch: SpecAugment off" ||
    bad "bundle.sh from scratch: $(grep -m1 'training utterances' "$tmp/cold/train.log")"
else
  bad "bundle.sh train from scratch failed: $(tail -5 "$tmp/cold.log")"
fi

# Refusals: exit 2 with a message.
printf 'x\tasr-or-what\thparams/S2S/conmamba_synth_bundle.yaml\t-\t\n' > "$tmp/bad_kind.tsv"
refused "a bad kind" "KIND must be asr or lm" env MASR_BIN="$bin" bash "$v" "$tmp/bad_kind.tsv" "$tmp/c/data" "$tmp/o2"
printf 'x\tasr\thparams/nope.yaml\t-\t\n' > "$tmp/bad_hp.tsv"
refused "a missing hparams file" "no hparams file" env MASR_BIN="$bin" bash "$v" "$tmp/bad_hp.tsv" "$tmp/c/data" "$tmp/o3"
printf 'x\tlm\thparams/LM/transformer_synth_bundle.yaml\t-\t\n' > "$tmp/lm_only.tsv"
refused "an LM without an ASR variant" "needs an ASR variant" env MASR_BIN="$bin" bash "$v" "$tmp/lm_only.tsv" "$tmp/c/data" "$tmp/o4"
refused "a folder without a corpus" "lacks train.csv" env MASR_BIN="$bin" bash "$v" "$tmp/v.tsv" "$tmp" "$tmp/o5"
printf 'x\tasr\thparams/S2S/conmamba_synth_bundle.yaml\t-\t--augment_probability 0.5\n' > "$tmp/bad_option.tsv"
refused "an option the hparams lack" "matches no top-level key" env MASR_BIN="$bin" bash "$v" "$tmp/bad_option.tsv" "$tmp/c/data" "$tmp/o7"
[[ ! -e $tmp/o7/x ]] && ok "nothing started for a refused file" || bad "a run started before the refusal"
# The variants files the repository ships pass the same checks (CHECK_ONLY=1: nothing starts).
for f in "$src"/recipes/synth/variants-*.tsv; do
  if CHECK_ONLY=1 MASR_BIN="$bin" bash "$v" "$f" "$tmp/c/data" "$tmp/o8" > "$tmp/check.log" 2>&1 &&
      grep -q "CHECK_ONLY=1: none started" "$tmp/check.log" && [[ -z $(ls -A "$tmp/o8") ]]; then
    ok "$(basename "$f") passes the checks"
  else
    bad "$(basename "$f"): $(tail -3 "$tmp/check.log")"
  fi
done
printf '# nothing\n' > "$tmp/empty.tsv"
refused "a file without variants" "lists no variant" env MASR_BIN="$bin" bash "$v" "$tmp/empty.tsv" "$tmp/c/data" "$tmp/o6"

# Several GPUs: the variants go round-robin over them (CUDA_VISIBLE_DEVICES per run, a line's own
# ENV winning), at most GPUS of them. Stand-ins for the binary (it prints what it was given) and
# for nvidia-smi (two GPUs), so that nothing trains.
mkdir -p "$tmp/fake"
printf '#!/bin/bash\necho "CVD=${CUDA_VISIBLE_DEVICES:-unset}"\n' > "$tmp/fake/mamba-asr"
printf '#!/bin/bash\necho "GPU 0: H200 (UUID: a)"; echo "GPU 1: H200 (UUID: b)"\n' > "$tmp/fake/nvidia-smi"
chmod +x "$tmp/fake/mamba-asr" "$tmp/fake/nvidia-smi"
printf 'g0\tasr\thparams/S2S/conmamba_synth_bundle.yaml\t-\t\ng1\tasr\thparams/S2S/conmamba_synth_bundle.yaml\tFOO=1\t\n' > "$tmp/gpus.tsv"
printf 'g2\tasr\thparams/S2S/conmamba_synth_bundle.yaml\t-\t\ng3\tasr\thparams/S2S/conmamba_synth_bundle.yaml\tCUDA_VISIBLE_DEVICES=5\t\n' >> "$tmp/gpus.tsv"
spread() {  # OUT [VAR=VALUE...]: the variants of gpus.tsv with the stand-ins; prints each run's CVD
  local out="$1"; shift
  env PATH="$tmp/fake:$PATH" MASR_BIN="$tmp/fake/mamba-asr" DEVICE=cuda DECODE=0 MINUTES=1 "$@" \
    bash "$v" "$tmp/gpus.tsv" "$tmp/c/data" "$out" > /dev/null 2>&1
  for n in g0 g1 g2 g3; do grep -h '^CVD=' "$out/$n/train.log" | tr '\n' ' '; done
}
got=$(spread "$tmp/og1")
[[ $got == "CVD=0 CVD=1 CVD=0 CVD=5 " ]] && ok "variants spread over two GPUs, a line's own choice kept" ||
  bad "variants over two GPUs: $got"
got=$(spread "$tmp/og2" GPUS=1)
[[ $got == "CVD=unset CVD=unset CVD=unset CVD=5 " ]] && ok "GPUS=1 keeps every variant on the default GPU" ||
  bad "GPUS=1: $got"
got=$(spread "$tmp/og3" CUDA_VISIBLE_DEVICES=3,2)
[[ $got == "CVD=3 CVD=2 CVD=3 CVD=5 " ]] && ok "the spread follows CUDA_VISIBLE_DEVICES" || bad "CUDA_VISIBLE_DEVICES=3,2: $got"
refused "GPUS that is not a count" "GPUS='two'" env PATH="$tmp/fake:$PATH" MASR_BIN="$tmp/fake/mamba-asr" GPUS=two \
  bash "$v" "$tmp/gpus.tsv" "$tmp/c/data" "$tmp/og4"

checks_done test_variants

#!/usr/bin/env bash
# tests/recipes/test_librispeech_recipe.sh BUILD_DIR — recipes/LibriSpeech/run.sh end to end on a
# fake LibriSpeech tree with the tiny S2S and LM configs: every stage must run and the WER table
# must list both test sets with and without the LM. Exit 77 (skipped) without espeak-ng or sox.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
for tool in espeak-ng sox; do command -v "$tool" >/dev/null || { echo "no $tool" >&2; exit 77; }; done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$root/tests/recipes/make_fake_librispeech.sh" "$work" 120
MASR_BIN="$1/bin/mamba-asr" "$root/recipes/LibriSpeech/run.sh" --data "$work/LibriSpeech" --out "$work/exp" \
  --hparams "$root/hparams/S2S/conmamba_tiny.yaml" --lm-hparams "$root/hparams/LM/transformer_tiny.yaml" \
  --beam 2 --threads 2 --device cpu \
  --asr-opts "--number_of_epochs 1 --num_workers 1" \
  --lm-opts "--number_of_epochs 1 --output_neurons 100" | tee "$work/out.txt"
for csv in train dev-clean test-clean test-other; do
  [[ -s "$work/exp/csv/$csv.csv" ]] || { echo "FAIL: $csv.csv missing" >&2; exit 1; }
done
[[ -s "$work/exp/asr/model.masr" && -s "$work/exp/lm/model.masr" ]] ||
  { echo "FAIL: a model file is missing" >&2; exit 1; }
rows=$(grep -cE '^\| test-(clean|other) \| s2s \| (none|TransformerLM) \| [0-9.]+ \| [0-9.]+ \|$' "$work/exp/wer.md")
[[ "$rows" == 4 ]] || { echo "FAIL: expected 4 scored rows in wer.md, got $rows" >&2; cat "$work/exp/wer.md" >&2; exit 1; }
echo "PASS"

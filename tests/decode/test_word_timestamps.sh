#!/bin/sh
# tests/decode/test_word_timestamps.sh MAMBA_ASR REPO_ROOT
# decode --format json word times of the bundled model against espeak-ng's true word boundaries
# on 20 utterances of voices never heard in training (the test split of the model's corpus plan,
# every 10th row: timestamps_plan.tsv); at least 90 % of word starts and of word ends must land
# within 100 ms (docs/timestamps.md). Exit 77 (CTest: skipped) without /usr/bin/python3 or
# libespeak-ng.
set -e
bin="$1"
root="$2"
if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import ctypes.util, sys; sys.exit(0 if ctypes.util.find_library("espeak-ng") else 1)'; then
  echo "no /usr/bin/python3 with libespeak-ng: word timestamp check skipped"
  exit 77
fi
exec /usr/bin/python3 "$root/scripts/check_word_timestamps.py" --bin "$bin" \
  --model "$root/models/conmamba-ctc-synth-en/model.masr" \
  --plan "$root/tests/decode/timestamps_plan.tsv" --split test --limit 20 \
  --search greedy,ctc-beam --min-fraction 0.9

#!/usr/bin/env bash
# recipes/LibriSpeech/prepare.sh DATA_FOLDER OUTPUT_FOLDER [mamba-asr prepare options]
# SpeechBrain CSVs (train.csv, dev-clean.csv, dev-other.csv, test-clean.csv, test-other.csv) from
# the LibriSpeech/ folder: a thin wrapper over `mamba-asr prepare librispeech` (docs/recipes.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# -ge 2 ]] || { sed -n '2,4p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
exec "${MASR_BIN:-$root/build/bin/mamba-asr}" prepare librispeech "$@"

#!/usr/bin/env bash
# scripts/make_synth_corpus.sh — synthesizes an English speech corpus with espeak-ng, festival and
# flite and sox, deterministic given a seed, with SpeechBrain CSVs (train/valid/test.csv) split by
# speaker (docs/synth-corpus.md).
#
#   scripts/make_synth_corpus.sh --out DIR [--seed N] [--utterances N | --hours H] [--jobs J]
#       [--engines LIST] [--voices LIST] [--conditions LIST] [--condition-prob P] [--text LIST]
#       [--text-offset N] [--lm-text FILE] [--eval]
#
# Without --engines/--voices/--conditions/--text/--eval: the classic corpus (espeak-ng voices,
# fortunes sentences, 5 CSV columns; bit-identical to earlier versions). With any of them: engines
# espeak,festival,flite[:weight] | all; voices ENGINE:VOICE,...; conditions speed,pitch,tempo,
# reverb,noise,gain,telephone,opus,gsm[:prob] | all | none; text fortunes,anarchism,kjv,wordnet |
# all; a `condition` CSV column. --eval: a held-out eval.csv only, from the reserved voices and
# manual-page text. --text-offset N (extended): the training split reads its sentences from N
# sentences further into its pool, the same speakers and conditions (valid/test unchanged;
# training IDs carry -oN-), e.g. a new offset for each session of a training that goes on.
# --lm-text FILE: the sentence pool minus valid/test/eval sentences. Resumable: existing WAVs
# are kept. MASR_SYNTH_ROOT: synthesizers extracted by synth_deps.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
out="" seed=1234 utterances=100 hours="" jobs="$(nproc)" lm_text="" eval_mode=0
plan_opts=()

usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --utterances) utterances="$2"; hours=""; shift 2 ;;
    --hours) hours="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --engines|--voices|--conditions|--condition-prob|--text|--text-offset)
      [[ $# -ge 2 ]] || { echo "make_synth_corpus: $1 needs a value" >&2; exit 2; }
      plan_opts+=("$1" "$2"); shift 2 ;;
    --lm-text) lm_text="$2"; shift 2 ;;
    --eval) eval_mode=1; plan_opts+=(--eval); shift ;;
    -h|--help) usage ;;
    *) echo "make_synth_corpus: unknown option '$1'" >&2; usage ;;
  esac
done
[[ -n "$out" ]] || { echo "make_synth_corpus: --out DIR is required" >&2; usage; }
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "make_synth_corpus: --seed '$seed' is not a non-negative integer" >&2; exit 2; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "make_synth_corpus: --jobs '$jobs' is not a positive integer" >&2; exit 2; }
[[ "$utterances" =~ ^[0-9]+$ ]] || { echo "make_synth_corpus: --utterances '$utterances' is not a non-negative integer" >&2; exit 2; }
[[ -z "$hours" || "$hours" =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "make_synth_corpus: --hours '$hours' is not a number" >&2; exit 2; }
(( eval_mode == 0 )) || [[ -z "$lm_text" ]] || { echo "make_synth_corpus: --lm-text is for training corpora, not --eval" >&2; exit 2; }
command -v "$PY" >/dev/null || { echo "make_synth_corpus: '$PY' is missing; run scripts/setup.sh" >&2; exit 1; }

# Synthesizers from a folder of .deb files (scripts/synth_deps.sh install), where the system has
# none: MASR_SYNTH_ROOT set by hand wins; otherwise the repository's .synthdeps/root is used when
# sox or espeak-ng is missing from PATH.
if [[ -z "${MASR_SYNTH_ROOT:-}" && -f "$here/../.synthdeps/root/.installed" ]] &&
   ! { command -v sox >/dev/null && command -v espeak-ng >/dev/null; }; then
  MASR_SYNTH_ROOT="$(cd "$here/../.synthdeps/root" && pwd)"
  export MASR_SYNTH_ROOT
  echo "make_synth_corpus: using the synthesizers under $MASR_SYNTH_ROOT" >&2
fi

created=0
[[ -d "$out" ]] || created=1
mkdir -p "$out"
plan="$out/plan.tsv"
(( eval_mode )) && plan="$out/plan_eval.tsv"
size_args=(--utterances "$utterances")
[[ -n "$hours" ]] && size_args=(--hours "$hours")
"$PY" "$here/synth_corpus.py" plan --seed "$seed" "${size_args[@]}" "${plan_opts[@]}" > "$plan.tmp" ||
  { rc=$?; rm -f "$plan.tmp"; (( created )) && rmdir "$out" 2>/dev/null; exit "$rc"; }
mv "$plan.tmp" "$plan"

"$PY" "$here/synth_corpus.py" synth --plan "$plan" --out "$out" --jobs "$jobs"
"$PY" "$here/synth_corpus.py" csv --plan "$plan" --wav-dir "$out/wav" --out "$out"

if [[ -n "$lm_text" ]]; then
  text="fortunes"
  for ((k = 0; k < ${#plan_opts[@]}; k++)); do
    [[ "${plan_opts[k]}" == --text ]] && text="${plan_opts[k + 1]}"
  done
  "$PY" "$here/synth_corpus.py" lmtext --data "$out" --text "$text" --seed "$seed" --out-file "$lm_text"
fi

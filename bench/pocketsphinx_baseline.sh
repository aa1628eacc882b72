#!/usr/bin/env bash
# bench/pocketsphinx_baseline.sh — PocketSphinx's stock en-us model against mamba-asr's bundled
# model (fp32 and int8) on the held-out evaluation audio (issue #20): the reserved voices and
# manual-page text of `scripts/make_synth_corpus.sh --eval`, clean and with channel conditions.
#
#   bench/pocketsphinx_baseline.sh [--out DIR] [--eval-root DIR] [--utterances N] [--seed N]
#       [--model PATH] [--exe PATH] [--threads N] [--search SEARCH] [--beam N]
#       [--precisions "fp32 int8"] [--reuse-pocketsphinx] [--decode-args "ARGS"]
#
# Re-runnable: the eval sets are generated under --eval-root only when missing (the generator is
# resumable), everything else is recomputed (--reuse-pocketsphinx: PocketSphinx's output and time
# from an earlier run in DIR, when there, e.g. to measure a new mamba-asr build). Writes DIR/<set>/{ref,ps,fp32,int8}.txt ('ID TEXT'),
# DIR/<set>/*.log and DIR/summary.md (WER/CER and RTF per system and set, then WER per voice:
# the utterance ID's speaker prefix without its number, e.g. flite_awb, festival_slt_hts).
# --search: any of `decode --search` (greedy, ctc-beam, s2s; --beam N for the beam searches);
# --precisions: which of fp32 and int8 to run. --decode-args: more `decode` options, word-split
# (e.g. "--arpa lm.arpa --arpa-weight 0.8 --word-bonus 3"), named in the summary's system column.
#
# Needs Debian 12's PocketSphinx (0.8+5prealpha: pocketsphinx_batch) and its stock models; they
# are a benchmark-only dependency, not in scripts/setup.sh:
#   sudo apt-get install -y pocketsphinx pocketsphinx-en-us
# PocketSphinx 5 (pip, newer Debian) has another CLI (`pocketsphinx batch`); not supported here.
#
# Scoring: mamba-asr has no command that scores a foreign hypothesis file, so the python below
# scores every system the same way: lib/text/scoring.cpp's normalization (upper case, apostrophes
# kept, hyphens and slashes become spaces, other punctuation dropped) and SpeechBrain's
# ErrorRateStats totals (edits / reference tokens; CER over characters with '_' between words).
# The script checks it against the WER/CER that `mamba-asr decode` prints for the same output.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
PY=/usr/bin/python3
out="$root/build/bench-pocketsphinx" eval_root=/tmp/masr-eval utterances=80 seed=2026
model="$root/models/conmamba-ctc-synth-en" threads=2 search=greedy beam="" reuse_ps=0 decode_args=""
precisions="fp32 int8"
exe="$root/build/bin/mamba-asr"
ps_model=/usr/share/pocketsphinx/model/en-us

usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --eval-root) eval_root="$2"; shift 2 ;;
    --utterances) utterances="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --exe) exe="$2"; shift 2 ;;  # e.g. a copy, while others rebuild build/bin
    --threads) threads="$2"; shift 2 ;;
    --search) search="$2"; shift 2 ;;
    --beam) beam="$2"; shift 2 ;;
    --precisions) precisions="$2"; shift 2 ;;
    --reuse-pocketsphinx) reuse_ps=1; shift ;;
    --decode-args) decode_args="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "pocketsphinx_baseline: unknown option '$1'" >&2; usage ;;
  esac
done
command -v pocketsphinx_batch >/dev/null ||
  { echo "pocketsphinx_baseline: pocketsphinx_batch is missing; run: sudo apt-get install -y pocketsphinx pocketsphinx-en-us" >&2; exit 1; }
[[ -f "$ps_model/en-us.lm.bin" && -f "$ps_model/cmudict-en-us.dict" && -d "$ps_model/en-us" ]] ||
  { echo "pocketsphinx_baseline: the stock model is missing under $ps_model; install pocketsphinx-en-us" >&2; exit 1; }
[[ -x "$exe" ]] || { echo "pocketsphinx_baseline: $exe is missing; build mamba-asr first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$out"

# The two eval sets: the same sentences and speakers (the conditions draw from their own streams),
# once clean and once with every channel condition (each with probability 0.3).
declare -A set_args=([clean]="" [channel]="--conditions all")
sets=(clean channel)
for s in "${sets[@]}"; do
  if [[ ! -f "$eval_root/$s/eval.csv" ]]; then
    # shellcheck disable=SC2086
    "$root/scripts/make_synth_corpus.sh" --out "$eval_root/$s" --eval --utterances "$utterances" \
      --seed "$seed" ${set_args[$s]} --jobs "$(nproc)"
  fi
done

# Helper: `refs CSV OUT` writes 'ID TEXT' references; `ctl CSV OUT` the pocketsphinx control file
# (paths without .wav, relative to /), checking that every WAV is 16 kHz mono 16-bit PCM with a
# 44-byte header (pocketsphinx_batch -adcin yes -adchdr 44 skips it unread); `ps HYP OUT`
# normalizes pocketsphinx's 'text (ID score)' lines; `score REF HYP` prints 'WER n/N CER n/N'.
helper() {
  "$PY" - "$@" <<'PYEOF'
import csv, re, struct, sys

def normalize(text):  # lib/text/scoring.cpp normalize_for_scoring
    out, pending = [], False
    for ch in text.replace("\u2019", "'"):
        if ch.isspace() or ch in "-/":
            pending = True
            continue
        if ch != "'" and ord(ch) < 128 and not ch.isalnum():
            continue
        if pending and out:
            out.append(" ")
        pending = False
        out.append(ch.upper() if ord(ch) < 128 else ch)
    return "".join(out)

def edits(ref, hyp):
    prev = list(range(len(hyp) + 1))
    for i in range(1, len(ref) + 1):
        cur = [i] + [0] * len(hyp)
        for j in range(1, len(hyp) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ref[i - 1] != hyp[j - 1]))
        prev = cur
    return prev[-1]

def read_lines(path):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 1)
            if parts[0]:
                out[parts[0]] = parts[1] if len(parts) > 1 else ""
    return out

cmd = sys.argv[1]
if cmd in ("refs", "ctl"):
    with open(sys.argv[2]) as f, open(sys.argv[3], "w") as o:
        for row in csv.DictReader(f):
            if cmd == "refs":
                o.write(f"{row['ID']} {row['wrd']}\n")
                continue
            with open(row["wav"], "rb") as w:
                h = w.read(44)
            riff, fmt, channels, rate, bits, data = (h[0:4], h[12:16], struct.unpack("<H", h[22:24])[0],
                                                     struct.unpack("<I", h[24:28])[0],
                                                     struct.unpack("<H", h[34:36])[0], h[36:40])
            if (riff, fmt, channels, rate, bits, data) != (b"RIFF", b"fmt ", 1, 16000, 16, b"data"):
                sys.exit(f"pocketsphinx_baseline: {row['wav']} is not a 16 kHz mono 16-bit WAV with a 44-byte header")
            assert row["wav"].endswith(".wav") and row["wav"].startswith("/")
            o.write(row["wav"][1:-4] + "\n")
elif cmd == "ps":
    with open(sys.argv[2]) as f, open(sys.argv[3], "w") as o:
        for line in f:
            m = re.match(r"^(.*) \((\S+)(?: -?\d+)?\)\s*$", line)
            if not m:
                continue
            uid = m.group(2).rsplit("/", 1)[-1]
            words = [re.sub(r"\(\d+\)$", "", w) for w in m.group(1).split()]
            words = [w for w in words if not (w.startswith("<") or w.startswith("[") or w.startswith("++"))]
            o.write(f"{uid} {normalize(' '.join(words))}\n")
elif cmd in ("score", "voices"):
    # Edits summed per group: one group ("score": totals, then the missing count) or one per voice
    # ("voices": the ID without its _NN-NNNNNN tail, "voice WER% (utterances)" cells, sorted).
    refs, hyps = read_lines(sys.argv[2]), read_lines(sys.argv[3])
    groups = {}
    for uid, ref_text in refs.items():
        key = re.sub(r"_\d+-\d+$", "", uid) if cmd == "voices" else ""
        r, h = normalize(ref_text).split(), normalize(hyps.get(uid, "")).split()
        rc, hc = list("_".join(r)), list("_".join(h))
        g = groups.setdefault(key, [0, 0, 0, 0, 0, 0])  # word edits, words, char edits, chars, utterances, missing
        for k, v in enumerate((edits(r, h), len(r), edits(rc, hc), len(rc), 1, uid not in hyps)):
            g[k] += v
    if cmd == "score":
        we, wn, ce, cn, _, missing = groups[""]
        print(f"{100 * we / wn:.2f} {we} {wn} {100 * ce / cn:.2f} {ce} {cn} {missing}")
    else:
        print("; ".join(f"{v} {100 * g[0] / g[1]:.1f} ({g[4]})" for v, g in sorted(groups.items())))
PYEOF
}

audio_seconds() { "$PY" -c 'import csv,sys; print(sum(float(r["duration"]) for r in csv.DictReader(open(sys.argv[1]))))' "$1"; }
now() { date +%s.%N; }

summary="$out/summary.md"
: > "$summary.voices"
{
  echo "| set | utterances | audio (s) | system | WER % | CER % | wall (s) | RTF |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$summary.tmp"
for s in "${sets[@]}"; do
  csv_file="$eval_root/$s/eval.csv"
  d="$out/$s"
  mkdir -p "$d"
  helper refs "$csv_file" "$d/ref.txt"
  helper ctl "$csv_file" "$d/ps.ctl"
  n=$(wc -l < "$d/ref.txt")
  secs=$(audio_seconds "$csv_file")

  # PocketSphinx, batch mode, its stock en-us acoustic model, trigram LM and dictionary; one
  # process (it has no threads), timed with its model loading.
  if (( ! reuse_ps )) || [[ ! -s "$d/ps.raw" || ! -s "$d/ps.seconds" ]]; then
    t0=$(now)
    pocketsphinx_batch -adcin yes -adchdr 44 -cepdir / -cepext .wav -ctl "$d/ps.ctl" \
      -hmm "$ps_model/en-us" -lm "$ps_model/en-us.lm.bin" -dict "$ps_model/cmudict-en-us.dict" \
      -hyp "$d/ps.raw" -logfn "$d/ps.log"
    t1=$(now)
    echo "$t1 - $t0" | bc > "$d/ps.seconds"
  fi
  helper ps "$d/ps.raw" "$d/ps.txt"
  rows=("pocketsphinx 0.8+5prealpha en-us (batch)|ps|$(cat "$d/ps.seconds")")

  # The bundled model, same audio, fp32 and int8 (RTF as decode reports it: after model load).
  for p in $precisions; do
    # shellcheck disable=SC2046,SC2086
    "$exe" --threads "$threads" decode --model "$model" --search "$search" $([[ -z $beam ]] || echo --beam "$beam") \
      $decode_args --precision "$p" "$csv_file" > "$d/$p.txt" 2> "$d/$p.log"
    wall=$(sed -n 's/.* decoded in \([0-9.]*\) s: RTF.*/\1/p' "$d/$p.log" | tail -1)
    rows+=("mamba-asr $(basename "$model") $p ($search${beam:+ beam $beam}${decode_args:+ $decode_args}, $threads threads)|$p|$wall")
    # The python scorer must agree with mamba-asr's own WER line for this output.
    own=$(sed -n 's/^%WER \([0-9.]*\) .*/\1/p' "$d/$p.log" | tail -1)
    mine=$(helper score "$d/ref.txt" "$d/$p.txt" | cut -d' ' -f1)
    [[ "$own" == "$mine" ]] ||
      { echo "pocketsphinx_baseline: scorer mismatch on $s/$p: mamba-asr $own, script $mine" >&2; exit 1; }
  done

  for r in "${rows[@]}"; do
    IFS='|' read -r name file wall <<< "$r"
    read -r wer _ _ cer _ _ missing < <(helper score "$d/ref.txt" "$d/$file.txt")
    (( missing == 0 )) || echo "pocketsphinx_baseline: $missing utterances without output from $name ($s)" >&2
    rtf=$(echo "scale=6; $wall / $secs" | bc)
    printf '| %s | %s | %.1f | %s | %s | %s | %.1f | %.4f |\n' "$s" "$n" "$secs" "$name" "$wer" "$cer" \
      "$wall" "$rtf" >> "$summary.tmp"
    echo "| $s | $name | $(helper voices "$d/ref.txt" "$d/$file.txt") |" >> "$summary.voices"
  done
done
{
  echo
  echo "WER % per voice (utterances):"
  echo
  echo "| set | system | voices |"
  echo "|---|---|---|"
  cat "$summary.voices"
} >> "$summary.tmp"
rm -f "$summary.voices"
mv "$summary.tmp" "$summary"
cat "$summary"

#!/usr/bin/env bash
# bench/chunked_wer.sh — how much a long recording loses to chunked decoding: a test set's
# utterances joined into one file (silence between them), decoded as one file by `mamba-asr
# decode` (chunked by default), against the same utterances decoded one by one.
#
#   bench/chunked_wer.sh MODEL CSV OUT [decode options for the joined file...]
#
# CSV: a SpeechBrain CSV with wav and wrd columns ($data_root: the CSV's folder), e.g. the test
# split of scripts/make_synth_corpus.sh. OUT: a folder for joined.wav, its reference and the
# decodes. PAUSE (default 0.5) seconds of silence go between utterances; MASR (default
# build/bin/mamba-asr) is the binary, SEARCH (default greedy) the search of both runs.
# Prints both WER lines and the utterances whose words differ, the joined file's words given to
# the utterance their middle falls in (utterance span plus half of each neighbouring pause).
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
model=$1 csv=$2 out=$3
shift 3
pause=${PAUSE:-0.5}
masr=${MASR:-build/bin/mamba-asr}
search=${SEARCH:-greedy}
PY=/usr/bin/python3
mkdir -p "$out"

# The utterances in CSV order, their spans in the joined file, and the joined reference.
"$PY" - "$csv" "$out" "$pause" <<'EOF'
import csv, os, subprocess, sys
path, out, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
root = os.path.dirname(os.path.abspath(path))
rows = list(csv.DictReader(open(path)))
if not rows or "wav" not in rows[0] or "wrd" not in rows[0]:
    sys.exit(f"chunked_wer: {path} needs wav and wrd columns")
rate = 16000
sil = os.path.join(out, "pause.wav")
subprocess.run(["sox", "-n", "-r", str(rate), "-c", "1", "-b", "16", sil, "trim", "0", str(pause)],
               check=True)
inputs, t = [], 0.0
with open(os.path.join(out, "spans.tsv"), "w") as spans, \
     open(os.path.join(out, "ref_utts.txt"), "w") as ref:
    for k, r in enumerate(rows):
        wav = r["wav"].replace("$data_root", root)
        n = int(subprocess.run(["soxi", "-s", wav], check=True, capture_output=True,
                               text=True).stdout)
        d = n / rate  # 16 kHz inputs (the synthetic corpus); soxi -s counts samples
        spans.write(f"{r['ID']}\t{t:.4f}\t{t + d:.4f}\t{r['wrd']}\n")
        ref.write(f"{r['ID']} {r['wrd']}\n")
        inputs += [wav] + ([sil] if k + 1 < len(rows) else [])
        t += d + pause
with open(os.path.join(out, "ref_joined.txt"), "w") as f:
    f.write("joined " + " ".join(r["wrd"] for r in rows) + "\n")
with open(os.path.join(out, "inputs.txt"), "w") as f:
    f.write("\n".join(inputs) + "\n")
EOF
mapfile -t inputs < "$out/inputs.txt"
sox "${inputs[@]}" -r 16000 -c 1 -b 16 "$out/joined.wav"
echo "chunked_wer: $(wc -l < "$out/spans.tsv") utterances, $(soxi -d "$out/joined.wav") joined" >&2

"$masr" -q decode --model "$model" --search "$search" --format json --ref "$out/ref_utts.txt" \
  "$csv" > "$out/one_by_one.jsonl" 2> "$out/one_by_one.log"
"$masr" -q decode --model "$model" --search "$search" --format json --ref "$out/ref_joined.txt" \
  "$@" "$out/joined.wav" > "$out/joined.json" 2> "$out/joined.log"
echo "one by one:  $(grep '^%WER' "$out/one_by_one.log")"
echo "joined file: $(grep '^%WER' "$out/joined.log")"

"$PY" - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
spans = [l.rstrip("\n").split("\t") for l in open(f"{out}/spans.tsv")]
single = {}
for line in open(f"{out}/one_by_one.jsonl"):
    j = json.loads(line)
    single[j["id"]] = j["text"].split()
joined = json.load(open(f"{out}/joined.json"))
words = [[] for _ in spans]
bounds = []  # the middle of each pause
for k in range(len(spans) - 1):
    bounds.append((float(spans[k][2]) + float(spans[k + 1][1])) / 2)
import bisect
for w in joined["words"]:
    words[bisect.bisect(bounds, (w["start"] + w["end"]) / 2)].append(w["word"])
differ = 0
for (uid, start, end, ref), hyp in zip(spans, words):
    if hyp != single.get(uid):
        differ += 1
        print(f"{uid} {float(start):.2f}-{float(end):.2f} s\n  ref:    {ref}\n"
              f"  single: {' '.join(single.get(uid, []))}\n  joined: {' '.join(hyp)}")
print(f"{differ} of {len(spans)} utterances differ")
EOF

#!/usr/bin/env bash
# tests/recipes/make_fake_librispeech.sh OUT_DIR [UTTERANCES]
# A tiny LibriSpeech tree in the real layout, from the synthetic corpus: OUT_DIR/LibriSpeech/
# <split>/<speaker>/<chapter>/<speaker>-<chapter>-<nnnn>.flac and <speaker>-<chapter>.trans.txt,
# for train-clean-100, dev-clean, test-clean and test-other. Deterministic.
set -euo pipefail
out="$1" n="${2:-120}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/../../scripts/make_synth_corpus.sh" --out "$out/synth" --utterances "$n" --seed 77 >&2
/usr/bin/python3 - "$out" <<'PY'
import csv, os, subprocess, sys
out = sys.argv[1]
layout = [("train", "train-clean-100"), ("valid", "dev-clean"), ("test", "test-clean"),
          ("test", "test-other")]
for split, name in layout:
    rows = list(csv.DictReader(open(f"{out}/synth/{split}.csv")))
    speakers = {}
    for i, r in enumerate(rows):
        spk = speakers.setdefault(r["spk_id"], str(100 + len(speakers)))
        chapter = str(5000 + i % 2)
        folder = f"{out}/LibriSpeech/{name}/{spk}/{chapter}"
        os.makedirs(folder, exist_ok=True)
        uid = f"{spk}-{chapter}-{i:04d}"
        flac = f"{folder}/{uid}.flac"
        if not os.path.exists(flac):
            subprocess.run(["sox", r["wav"], flac], check=True)
        with open(f"{folder}/{spk}-{chapter}.trans.txt", "a") as f:
            f.write(f"{uid} {r['wrd']}\n")
PY

#!/usr/bin/env bash
# tests/scripts/test_make_benchdata.sh — bench/make_benchdata.sh run from any folder: the corpus it
# synthesizes itself and one given with --from (absolute, relative and $data_root wav paths) both
# become Opus files listed in train/valid.csv, and joined utterances of 5 s and more whose
# transcripts are the parts' in reading order. Exit 77 (skipped) without espeak-ng, sox or
# opus-tools.
#   tests/scripts/test_make_benchdata.sh [SOURCE_DIR]
set -euo pipefail
src="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)"
# shellcheck source=checks.sh
source "$src/tests/scripts/checks.sh"
skip_without espeak-ng sox soxi opusenc opusdec /usr/bin/python3

# Every listed file exists and decodes; joined utterances last 5 s or more and carry their
# parts' words in order.
check() {  # name dir
  local name=$1 dir=$2
  /usr/bin/python3 - "$dir" <<'PY' && ok "$name: CSVs, files and joined transcripts" || bad "$name"
import csv, os, subprocess, sys
d = sys.argv[1]
def rows(name):
    with open(os.path.join(d, name)) as f:
        return list(csv.DictReader(f))
def path(r):
    return r["wav"].replace("$data_root", d)
train, valid, long = rows("train.csv"), rows("valid.csv"), rows("train_long.csv")
assert train and valid and long, (len(train), len(valid), len(long))
for r in train + valid + long:
    assert os.path.isfile(path(r)), path(r)
    assert path(r).endswith(".opus"), path(r)
words = " ".join(r["wrd"] for r in train).split()
joined = " ".join(r["wrd"] for r in long).split()
assert joined == words[:len(joined)], "joined transcripts are not the parts' words in order"
for r in long:
    assert float(r["duration"]) >= 5.0, r
    out = subprocess.run(["opusdec", "--quiet", "--rate", "16000", path(r), os.path.join(d, "x.wav")],
                         capture_output=True)
    assert out.returncode == 0, out.stderr
    secs = float(subprocess.run(["soxi", "-D", os.path.join(d, "x.wav")], capture_output=True,
                                text=True).stdout)
    assert abs(secs - float(r["duration"])) < 0.05, (secs, r["duration"])
os.remove(os.path.join(d, "x.wav"))
print(f"  {len(train)} train, {len(valid)} valid, {len(long)} joined")
PY
}

# 1. It synthesizes its own corpus, run from another folder with a relative --out.
mkdir -p "$tmp/cwd"
(cd "$tmp/cwd" && "$src/bench/make_benchdata.sh" --out own --utterances 12 --seed 3) > "$tmp/own.log" 2>&1 ||
  { cat "$tmp/own.log"; bad "make_benchdata without --from failed"; }
check "own corpus" "$tmp/cwd/own"

# 2. --from an existing corpus, its wav column in three spellings.
"$src/scripts/make_synth_corpus.sh" --out "$tmp/corpus" --seed 5 --utterances 12 > "$tmp/synth.log" 2>&1
/usr/bin/python3 - "$tmp/corpus" <<'PY'
import csv, os, sys
d = sys.argv[1]
for name in ("train.csv", "valid.csv"):
    p = os.path.join(d, name)
    rows = list(csv.DictReader(open(p)))
    for i, r in enumerate(rows):
        full = r["wav"].replace("$data_root", d)
        full = full if os.path.isabs(full) else os.path.join(d, full)
        r["wav"] = [full, os.path.relpath(full, d), "$data_root/" + os.path.relpath(full, d)][i % 3]
    with open(p, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader(); w.writerows(rows)
PY
"$src/bench/make_benchdata.sh" --out "$tmp/from" --from "$tmp/corpus" --seed 4 > "$tmp/from.log" 2>&1 ||
  { cat "$tmp/from.log"; bad "make_benchdata --from failed"; }
check "--from corpus" "$tmp/from"
n_src=$(($(wc -l < "$tmp/corpus/train.csv") - 1))
n_out=$(($(wc -l < "$tmp/from/train.csv") - 1))
[[ $n_src -eq $n_out ]] && ok "--from keeps every training row ($n_out)" || bad "--from: $n_src rows in, $n_out out"

# 3. Bad input: a missing corpus and an unknown option fail with a message.
if "$src/bench/make_benchdata.sh" --out "$tmp/x" --from "$tmp/none" > "$tmp/err.log" 2>&1; then
  bad "--from a missing folder succeeded"
else
  grep -q "has no train.csv" "$tmp/err.log" && ok "--from a missing folder is an error" || bad "message: $(cat "$tmp/err.log")"
fi
if "$src/bench/make_benchdata.sh" --bogus 2> "$tmp/err.log"; then bad "--bogus accepted"; else ok "unknown option refused"; fi

checks_done test_make_benchdata

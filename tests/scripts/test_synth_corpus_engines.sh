#!/usr/bin/env bash
# tests/scripts/test_synth_corpus_engines.sh — the corpus generator's engines, voices and conditions
# (scripts/make_synth_corpus.sh, docs/synth-corpus.md): the classic plan is unchanged, reserved
# voices and text are refused outside --eval, every engine and voice gives non-silent audio, the
# same seed gives identical CSVs and bit-identical audio, the CSV columns, every condition flag
# changes the audio the way it should, --eval writes only eval.csv, and --lm-text leaves out every
# held-out sentence. Exit 77 (skipped) when a synthesizer or text package is missing.
#   tests/scripts/test_synth_corpus_engines.sh [SOURCE_DIR]
set -euo pipefail

src="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)"
gen="$src/scripts/make_synth_corpus.sh"
py="$src/scripts/synth_corpus.py"
PY=/usr/bin/python3

have() {  # a tool on PATH, or in MASR_SYNTH_ROOT's prefix when that is set
  if [[ -n "${MASR_SYNTH_ROOT:-}" ]]; then [[ -x "$MASR_SYNTH_ROOT/usr/bin/$1" ]]; else command -v "$1" >/dev/null; fi
}
root="${MASR_SYNTH_ROOT:-}"
for t in espeak-ng sox festival flite opusenc opusdec toast untoast bible; do
  have "$t" || { echo "SKIP: '$t' is missing (scripts/setup.sh installs it)"; exit 77; }
done
for f in /usr/share/games/fortunes/fortunes /usr/share/games/fortunes/anarchism \
         /usr/share/wordnet/data.noun /usr/share/festival/voices/english/ked_diphone \
         /usr/share/festival/voices/us/cmu_us_slt_arctic_hts; do
  [[ -e "$root$f" ]] || { echo "SKIP: $root$f is missing (scripts/setup.sh installs it)"; exit 77; }
done
"$PY" -c "import numpy" 2>/dev/null || { echo "SKIP: numpy for $PY is missing"; exit 77; }

# shellcheck source=checks.sh
source "$src/tests/scripts/checks.sh"
t0=$(date +%s)

# 1. The classic planner (no new option) is unchanged: the plan of earlier versions, byte for byte.
got=$("$PY" "$py" plan --seed 1234 --utterances 300 2>/dev/null | sha256sum | cut -d' ' -f1)
[[ "$got" == 0d1f0d2c390dce6d38deb527c73b20b6d9cf374de1880a96d796cba5a7e2ac1d ]] &&
  ok "classic plan unchanged" || bad "classic plan changed: $got"

# 2. Reserved voices and text are refused for train/valid/test (exit 2, a message saying why).
refuse() {  # refuse WHAT ARGS...
  local what="$1" out rc=0; shift
  out=$("$gen" --out "$tmp/refused" --utterances 2 "$@" 2>&1) || rc=$?
  if [[ $rc -eq 2 && "$out" == *"$what"* ]]; then ok "refused: $*"; else bad "not refused ($rc): $* :: $out"; fi
}
for v in flite:awb flite:rms flite:slt festival:slt_hts festival:cmu_us_slt_arctic_hts; do
  refuse "reserved for evaluation" --voices "espeak:en-us,$v"
done
refuse "reserved for evaluation" --text fortunes,manpages
refuse "--lm-text is for training corpora" --eval --lm-text "$tmp/x.txt"
refuse "unknown condition 'echo'" --conditions noise,echo
refuse "unknown engine 'mbrola'" --engines espeak,mbrola
refuse "--text-offset is for extended training corpora" --text-offset 5
refuse "--text-offset is for extended training corpora" --eval --text-offset 5
refuse "--text-offset -1: must be 0 or more" --engines espeak --text-offset -1
[[ ! -e "$tmp/refused/train.csv" ]] && ok "nothing written when refused" || bad "a refused run wrote train.csv"

# 3. Every engine and voice produces audio (train voices here, reserved ones in 6).
"$gen" --out "$tmp/voices" --utterances 6 --seed 5 --jobs 2 \
  --voices espeak:en-us,festival:kal,festival:ked,flite:kal,flite:kal16 2> "$tmp/voices.log" ||
  { cat "$tmp/voices.log"; bad "voices corpus"; }

# 4. Determinism: all engines, all conditions, all text sources; twice with one seed, once with another.
corpus() {  # corpus DIR SEED [more options]
  local dir="$1" seed="$2"; shift 2
  "$gen" --out "$dir" --utterances 14 --seed "$seed" --jobs 2 --engines all --conditions all \
    --condition-prob 0.5 --text all "$@" 2> "$dir.log" || { cat "$dir.log"; bad "corpus $dir"; }
}
corpus "$tmp/a" 7 --lm-text "$tmp/a/lm.txt"
corpus "$tmp/b" 7
"$PY" "$py" plan --seed 8 --utterances 14 --engines all --conditions all --condition-prob 0.5 \
  --text all > "$tmp/plan8.tsv" 2>/dev/null
hashes() { (cd "$1/wav" && find . -name '*.wav' | sort | xargs sha256sum); }
same=1
for s in train valid test; do
  cmp -s <(sed "s#$tmp/a/#X/#" "$tmp/a/$s.csv") <(sed "s#$tmp/b/#X/#" "$tmp/b/$s.csv") || same=0
done
[[ $same == 1 ]] && ok "same seed: identical CSVs" || bad "same seed: CSVs differ"
[[ "$(hashes "$tmp/a")" == "$(hashes "$tmp/b")" && $(hashes "$tmp/a" | wc -l) == 14 ]] &&
  ok "same seed: bit-identical audio (14 WAVs)" || bad "same seed: audio differs"
cmp -s "$tmp/a/plan.tsv" "$tmp/plan8.tsv" && bad "another seed: same plan" || ok "another seed: another plan"
before=$(hashes "$tmp/a")
"$gen" --out "$tmp/a" --utterances 14 --seed 7 --jobs 2 --engines all --conditions all \
  --condition-prob 0.5 --text all 2> "$tmp/resume.log"
grep -q "(14 already there)" "$tmp/resume.log" && [[ "$(hashes "$tmp/a")" == "$before" ]] &&
  ok "resume keeps every WAV" || bad "resume: $(cat "$tmp/resume.log")"

# --text-offset: the same rows (speakers, conditions, splits), the valid and test rows unchanged,
# other training sentences under IDs marked -o500-.
for o in 0 500; do
  "$PY" "$py" plan --seed 7 --utterances 60 --engines all --conditions all --condition-prob 0.5 \
    --text all --text-offset "$o" > "$tmp/off$o.tsv" 2>/dev/null
done
"$PY" - "$tmp/off0.tsv" "$tmp/off500.tsv" <<'PY' && ok "--text-offset: valid/test kept, training text moved" || bad "--text-offset"
import sys
a = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
b = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
assert len(a) == len(b) == 60, (len(a), len(b))
train = [(x, y) for x, y in zip(a, b) if x[1] == "train"]
held = [(x, y) for x, y in zip(a, b) if x[1] != "train"]
assert train and held
assert all(x == y for x, y in held), "valid/test rows changed"
for x, y in train:
    prefix, number = x[0].rsplit("-", 1)
    assert y[0] == f"{prefix}-o500-{number}", (x[0], y[0])
    assert x[2:5] == y[2:5] and x[6:] == y[6:], "speaker, speed, pitch, engine or condition moved"
assert sum(x[5] != y[5] for x, y in train) == len(train), "a training sentence stayed"
assert not {r[5] for r in b if r[1] == "train"} & {r[5] for r in b if r[1] != "train"}, "a held sentence in training"
PY

# 5. Every condition flag: one clean utterance and one per factor with the planner's own parameters
#    (a plan with every factor at probability 1, split into single factors); same voice and text.
"$PY" "$py" plan --seed 3 --utterances 2 --voices espeak:en-us --conditions all --condition-prob 1 \
  2>/dev/null > "$tmp/all1.tsv"
"$PY" "$py" plan --seed 3 --utterances 2 --voices espeak:en-us --conditions none \
  2>/dev/null > "$tmp/none.tsv"
cmp -s <(cut -f1-7 "$tmp/all1.tsv") <(cut -f1-7 "$tmp/none.tsv") &&
  ok "conditions change no speaker, text or id" || bad "conditions changed other draws"
"$PY" - "$tmp/all1.tsv" "$tmp/cond.tsv" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
row = rows[0]
parts = dict(p.partition("=")[::2] for p in row[7].split(";"))
parts.setdefault("opus", "12")  # one codec per utterance: the other one may be missing
out = open(sys.argv[2], "w")
for name in ["clean", "speed", "pitch", "tempo", "reverb", "noise", "gain", "telephone", "opus", "gsm"]:
    cond = "clean" if name == "clean" else (name + ("=" + parts[name] if parts.get(name) else ""))
    out.write("\t".join([f"u-{name}", "train"] + row[2:7] + [cond]) + "\n")
PY
"$PY" "$py" synth --plan "$tmp/cond.tsv" --out "$tmp/cond" --jobs 2 2> "$tmp/cond.log" ||
  { cat "$tmp/cond.log"; bad "condition synthesis"; }
"$PY" "$py" csv --plan "$tmp/cond.tsv" --wav-dir "$tmp/cond/wav" --out "$tmp/cond" 2>/dev/null

# 6. --eval: reserved voices, manual-page text (fortunes where no manual pages are installed), only
#    eval.csv.
eval_text=()
ls "$root"/usr/share/man/man1/*.1.gz >/dev/null 2>&1 || eval_text=(--text fortunes)
"$gen" --out "$tmp/eval" --utterances 5 --seed 2 --jobs 2 --eval "${eval_text[@]}" 2> "$tmp/eval.log" ||
  { cat "$tmp/eval.log"; bad "eval corpus"; }

# Checks on the files (numpy): CSV columns, audio levels, condition effects, LM text, eval.
"$PY" - "$tmp" "$py" <<'PY' || fails=$((fails + 1))
import csv, os, re, subprocess, sys, wave
import numpy as np
tmp, py = sys.argv[1], sys.argv[2]
failed = 0
def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    failed += not cond
def audio(path):
    with wave.open(path) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2), path
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768
def rms(x):
    return float(np.sqrt(np.mean(x ** 2)))
def high_band(x, hz):  # share of the energy above hz
    spec = np.abs(np.fft.rfft(x)) ** 2
    return float(spec[int(hz / 8000 * (len(spec) - 1)):].sum() / spec.sum())
def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))
words = re.compile(r"^[A-Z']+( [A-Z']+)*$")

# CSV columns and every voice audible
header = ["ID", "duration", "wav", "spk_id", "wrd", "condition"]
for corpus in ("voices", "a"):
    spk = {}
    for split in ("train", "valid", "test"):
        r = rows(f"{tmp}/{corpus}/{split}.csv")
        check(r[0] == header, f"{corpus}/{split}.csv header {','.join(r[0])}")
        for row in r[1:]:
            x = audio(row[2])
            check(abs(float(row[1]) - len(x) / 16000) < 1e-6 and len(x) > 8000 and rms(x) > 0.001
                  and words.match(row[4]) and row[5] and os.path.basename(row[2]) == row[0] + ".wav",
                  f"{row[0]}: {row[1]} s, rms {rms(x):.4f}, {row[5]}")
            spk.setdefault(split, set()).add(row[3])
    check(not (spk["train"] & (spk["valid"] | spk["test"])) and not (spk["valid"] & spk["test"]),
          f"{corpus}: speakers split")
voices = {re.sub(r"(\+.*|-\d\d)$", "", s) for s in
          sum([[r[3] for r in rows(f"{tmp}/voices/{s}.csv")[1:]] for s in ("train", "valid", "test")], [])}
check(voices == {"en-us", "festival-kal", "festival-ked", "flite-kal", "flite-kal16"},
      f"every voice produced audio: {sorted(voices)}")
engines = {r[3].split("-")[0] if r[3].startswith(("festival", "flite")) else "espeak"
           for s in ("train", "valid", "test") for r in rows(f"{tmp}/a/{s}.csv")[1:]}
check(engines == {"espeak", "festival", "flite"}, f"all engines in the mixed corpus: {sorted(engines)}")

# condition effects against the clean utterance
wav = {r[0][2:]: (audio(r[2]), r[5]) for r in rows(f"{tmp}/cond/train.csv")[1:]}
clean, _ = wav["clean"]
for name, (x, cond) in wav.items():
    if name == "clean":
        continue
    value = cond.partition("=")[2]
    differs = len(x) != len(clean) or not np.array_equal(x, clean)
    check(differs and cond.startswith(name), f"{name} ({cond}) changes the audio")
    n = min(len(x), len(clean))
    if name in ("speed", "tempo"):
        ratio = len(clean) / len(x)
        check(abs(ratio / float(value) - 1) < 0.04, f"{name}: duration ratio {ratio:.3f} ~ {value}")
    elif name == "pitch":
        check(abs(len(x) / len(clean) - 1) < 0.02, f"pitch keeps the duration")
    elif name == "reverb":
        check(abs((len(x) - len(clean)) / 16000 - 0.3) < 0.01, "reverb: 0.3 s tail")
    elif name == "noise":
        kind, snr, _ = value.split("/")
        noise = x[:n] - clean[:n] * (rms(x[:n]) / rms(clean[:n]))
        measured = 20 * np.log10(rms(clean[:n]) / max(rms(noise), 1e-9))
        check(abs(measured - float(snr)) < 3, f"noise: SNR {measured:.1f} dB ~ {snr}")
    elif name == "gain":
        measured = 20 * np.log10(rms(x) / rms(clean))
        target = float(value)
        check(abs(measured - target) < 1 if target < 0 else measured > 0.5,
              f"gain: {measured:+.1f} dB ~ {target:+.1f}")
    elif name in ("telephone", "gsm"):
        cut = 3600 if name == "telephone" else 4100
        check(high_band(x, cut) < min(0.001, 0.1 * high_band(clean, cut)),
              f"{name}: energy share above {cut} Hz {high_band(x, cut):.1e} (clean {high_band(clean, cut):.1e})")
    elif name == "opus":
        check(abs(len(x) - len(clean)) < 1600, "opus keeps the duration")

# LM text: normalized, tens of thousands of sentences, none of valid/test
lm = open(f"{tmp}/a/lm.txt").read().splitlines()
held = {r[4] for s in ("valid", "test") for r in rows(f"{tmp}/a/{s}.csv")[1:]}
check(len(lm) > 50000 and len(set(lm)) == len(lm) and all(words.match(s) for s in lm),
      f"lm.txt: {len(lm)} distinct normalized sentences")
check(held and not held & set(lm), f"lm.txt has none of the {len(held)} valid/test sentences")
train_text = {r[4] for r in rows(f"{tmp}/a/train.csv")[1:]}
check(not held & train_text, "valid/test sentences are not training sentences")

# eval: only eval.csv, reserved voices only, text not in any training source
check(sorted(f for f in os.listdir(f"{tmp}/eval") if f.endswith(".csv")) == ["eval.csv"],
      "--eval writes only eval.csv")
ev = rows(f"{tmp}/eval/eval.csv")
check(ev[0] == header, "eval.csv header")
reserved = ("flite-awb", "flite-rms", "flite-slt", "festival-slt_hts")
for row in ev[1:]:
    x = audio(row[2])
    check(row[3].startswith(reserved) and len(x) > 8000 and rms(x) > 0.001,
          f"eval {row[0]}: {row[3]}, rms {rms(x):.4f}")
check({re.sub(r"-\d\d$", "", r[3]) for r in ev[1:]} == set(reserved), "every reserved voice in eval")
sys.exit(1 if failed else 0)
PY

echo "test_synth_corpus_engines: $(( $(date +%s) - t0 )) s"
checks_done test_synth_corpus_engines

#!/usr/bin/python3
# scripts/synth_corpus.py
# Helper of make_synth_corpus.sh (standard library only): `plan` picks sentences, speakers, speeds
# and pitches from a seed; `csv` writes SpeechBrain's train/valid/test CSVs from the synthesized WAVs;
# `lmtext` writes LM text: the sentence pool minus every sentence of valid.csv and test.csv.
import argparse
import csv
import glob
import os
import random
import re
import sys
import wave

# espeak-ng base voices (gmw/ English accents shipped with espeak-ng-data) and voice variants.
BASE_VOICES = ["en-us", "en-us-nyc", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan",
               "en-gb-x-gbcwmd", "en-029"]
VARIANTS = ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5"]

FORTUNE_DIR = "/usr/share/games/fortunes"
ABBREVIATION = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|vs|etc|Inc|Ltd|Co|No|Vol|Gen|Col|"
                          r"Capt|Lt|Sgt|Rev|Gov|Sen|Rep|Mt|Ft|e\.g|i\.e|[A-Za-z])\.\s*$")
ATTRIBUTION = re.compile(r"^\s*(?:--|―|-- )")
# Anything outside these means code, URLs, symbols or foreign text: the sentence is dropped.
ALLOWED = re.compile(r"^[A-Za-z' ,.;:!?\"()\-]*$")


def fortunes_text():
    """Yields each fortune (a paragraph of text) from every fortune file, in sorted file order."""
    for path in sorted(glob.glob(os.path.join(FORTUNE_DIR, "*"))):
        if os.path.isdir(path) or path.endswith((".dat", ".u8")) or os.path.islink(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            chunk = []
            for line in f:
                if line.strip() == "%":
                    yield chunk
                    chunk = []
                elif not ATTRIBUTION.match(line):
                    chunk.append(line.strip())
            yield chunk


def split_sentences(text):
    parts = re.split(r"(?<=[.!?])\s+", text)
    merged = []
    for part in parts:
        # "Mr. Smith", "J. R. R. Tolkien": the period did not end a sentence.
        if merged and ABBREVIATION.search(merged[-1]):
            merged[-1] += " " + part
        else:
            merged.append(part)
    return merged


def normalize(sentence, min_words, max_words, max_chars):
    """LibriSpeech style: upper case A-Z, apostrophes and single spaces; None if unusable."""
    sentence = sentence.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    if not ALLOWED.match(sentence) or ABBREVIATION.search(sentence + "."):
        return None  # digits, symbols, non-ASCII, or an initial / abbreviation left in the text
    words = re.sub(r"[^A-Za-z']+", " ", sentence.replace("-", " ")).split()
    words = [w.strip("'") for w in words]
    words = [w.upper() for w in words if w]
    if any(len(w) == 1 and w not in ("A", "I", "O") for w in words):
        return None  # spelled letters or initials
    if not (min_words <= len(words) <= max_words):
        return None
    text = " ".join(words)
    return text if len(text) <= max_chars else None


def sentence_pool(min_words, max_words, max_chars):
    seen, pool = set(), []
    for chunk in fortunes_text():
        text = " ".join(line for line in chunk if line)
        for sentence in split_sentences(text):
            norm = normalize(sentence.strip(), min_words, max_words, max_chars)
            if norm and norm not in seen:
                seen.add(norm)
                pool.append(norm)
    return pool


def speakers_by_split(rng, valid_share, test_share):
    speakers = [f"{v}+{x}" for v in BASE_VOICES for x in VARIANTS]
    rng.shuffle(speakers)
    n_test = max(1, round(len(speakers) * test_share))
    n_valid = max(1, round(len(speakers) * valid_share))
    return {"test": speakers[:n_test], "valid": speakers[n_test:n_test + n_valid],
            "train": speakers[n_test + n_valid:]}


def plan(args):
    rng = random.Random(args.seed)
    pool = sentence_pool(args.min_words, args.max_words, args.max_chars)
    rng.shuffle(pool)
    splits = speakers_by_split(rng, args.valid_share, args.test_share)
    # Each speaker keeps a base speed (words per minute) and pitch; utterances jitter around them.
    style = {s: (rng.randint(135, 185), rng.randint(30, 70)) for ss in splits.values() for s in ss}
    target_s = args.hours * 3600.0 if args.hours else None
    rows, total_s, i = [], 0.0, 0
    while (target_s is None and i < args.utterances) or (target_s is not None and total_s < target_s):
        r = rng.random()
        split = "test" if r < args.test_share else "valid" if r < args.test_share + args.valid_share else "train"
        if i < 3:  # small corpora still get every split
            split = ["train", "valid", "test"][i]
        speaker = rng.choice(splits[split])
        base_speed, base_pitch = style[speaker]
        speed = base_speed + rng.randint(-10, 10)
        pitch = min(99, max(0, base_pitch + rng.randint(-5, 5)))
        text = pool[i % len(pool)]
        utt_id = "{}-{:06d}".format(re.sub(r"[^a-z0-9]+", "_", speaker), i)
        rows.append((utt_id, split, speaker, speed, pitch, text))
        total_s += 0.4 + len(text.split()) * 60.0 / speed  # estimate; the CSVs use the real length
        i += 1
    out = sys.stdout
    for row in rows:
        out.write("\t".join(str(x) for x in row) + "\n")
    print(f"synth: {len(rows)} utterances, {len(pool)} distinct sentences, ~{total_s / 3600:.2f} h "
          f"estimated, speakers train/valid/test {len(splits['train'])}/{len(splits['valid'])}/"
          f"{len(splits['test'])}", file=sys.stderr)


def write_csvs(args):
    rows = {"train": [], "valid": [], "test": []}
    with open(args.plan, encoding="utf-8") as f:
        for line in f:
            utt_id, split, speaker, _, _, text = line.rstrip("\n").split("\t")
            path = os.path.abspath(os.path.join(args.wav_dir, split, utt_id + ".wav"))
            with wave.open(path, "rb") as w:
                duration = w.getnframes() / w.getframerate()
            rows[split].append([utt_id, str(duration), path, speaker, text])
    for split, items in rows.items():
        with open(os.path.join(args.out, split + ".csv"), "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
            writer.writerow(["ID", "duration", "wav", "spk_id", "wrd"])
            writer.writerows(items)
        hours = sum(float(r[1]) for r in items) / 3600
        print(f"synth: {split}.csv: {len(items)} utterances, {hours:.3f} h", file=sys.stderr)


def write_lm_text(args):
    """lm_train.txt / lm_valid.txt: the pool without the held-out sentences (zero overlap, checked)."""
    held_out = set()
    for split in ("valid", "test"):
        with open(os.path.join(args.data, split + ".csv"), newline="", encoding="utf-8") as f:
            held_out.update(" ".join(row["wrd"].split()) for row in csv.DictReader(f))
    pool = sentence_pool(args.min_words, args.max_words, args.max_chars)
    kept = [s for s in pool if s not in held_out]
    rng = random.Random(args.seed)
    rng.shuffle(kept)
    n_valid = max(1, round(len(kept) * args.valid_share))
    parts = {"lm_valid.txt": kept[:n_valid], "lm_train.txt": kept[n_valid:]}
    overlap = held_out.intersection(kept)
    if overlap:
        sys.exit(f"synth: lmtext: {len(overlap)} held-out sentences in the LM text, e.g. "
                 f"{next(iter(overlap))!r}")
    os.makedirs(args.out, exist_ok=True)
    for name, sentences in parts.items():
        tmp = os.path.join(args.out, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(s + "\n" for s in sentences)
        os.replace(tmp, os.path.join(args.out, name))
    print(f"synth: lmtext: {len(pool)} pool sentences, {len(pool) - len(kept)} removed "
          f"(in valid.csv/test.csv, {len(held_out)} held-out sentences), "
          f"{len(parts['lm_train.txt'])} train / {len(parts['lm_valid.txt'])} valid; "
          f"overlap with valid+test: 0", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("plan")
    pp.add_argument("--seed", type=int, default=1234)
    pp.add_argument("--utterances", type=int, default=100)
    pp.add_argument("--hours", type=float, default=None)
    pp.add_argument("--min-words", type=int, default=3)
    pp.add_argument("--max-words", type=int, default=30)
    pp.add_argument("--max-chars", type=int, default=200)
    pp.add_argument("--valid-share", type=float, default=0.05)
    pp.add_argument("--test-share", type=float, default=0.05)
    pc = sub.add_parser("csv")
    pc.add_argument("--plan", required=True)
    pc.add_argument("--wav-dir", required=True)
    pc.add_argument("--out", required=True)
    pl = sub.add_parser("lmtext")
    pl.add_argument("--data", required=True, help="the corpus folder (valid.csv, test.csv)")
    pl.add_argument("--out", required=True)
    pl.add_argument("--seed", type=int, default=1234)
    pl.add_argument("--valid-share", type=float, default=0.02)
    pl.add_argument("--min-words", type=int, default=3)
    pl.add_argument("--max-words", type=int, default=30)
    pl.add_argument("--max-chars", type=int, default=200)
    args = p.parse_args()
    {"plan": plan, "csv": write_csvs, "lmtext": write_lm_text}[args.command](args)


if __name__ == "__main__":
    main()

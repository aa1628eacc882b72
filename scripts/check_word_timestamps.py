#!/usr/bin/python3
"""Checks `mamba-asr decode --format json` word timestamps against espeak-ng's true word boundaries.

    check_word_timestamps.py --bin build/bin/mamba-asr --model MODEL.masr --plan PLAN.tsv \
        [--split test] [--limit 60] [--search greedy,ctc-beam] [--offset S] [--min-fraction F]

1. Synthesizes the first --limit utterances of --split from make_synth_corpus.sh's plan with
   scripts/espeak_word_timings.py (same voice, speed and pitch as the corpus; each word's true
   start and end come from espeak-ng's WORD / PHONEME / END events) into a temporary folder, and
   scales them by --gain-db (-3 dB, as make_synth_corpus.sh's `sox ... gain -3`).
2. Decodes them with `BIN decode --model MODEL --format json --search S` for every search S.
3. Aligns each hypothesis to its reference by word-level Levenshtein alignment. A word counts
   only when the alignment pairs it with an identical reference word (a recognized word) and
   espeak-ng gave that reference word both a start and an end (it gives none to words it speaks
   as one with their neighbour, e.g. "no one").
4. Reports, per search, the number of counted words and, for starts and ends separately, the
   median / p90 / max absolute error, the mean and median signed error (predicted - true: the
   bias; a correction is minus the bias) and the fraction within --tolerance (0.1 s).

--offset S (or --start-offset / --end-offset, added to it) is added to the predicted times before
they are compared, to try a correction without rebuilding. The exit code is 1 when, for some
search, the fraction of starts or of ends within the tolerance is below --min-fraction, 2 on
errors (synthesis or decoding failed), 0 otherwise.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import wave
from array import array

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    print(f"check_word_timestamps: {message}", file=sys.stderr)
    sys.exit(2)


def synthesize(args, folder):
    """{id: {"wav", "text", "words": [{"word", "start", "end"}]}} from espeak_word_timings.py."""
    cmd = [args.python, os.path.join(HERE, "espeak_word_timings.py"), "--out", folder,
           "--plan", args.plan, "--split", args.split, "--limit", str(args.limit)]
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        fail(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr}")
    refs = {}
    for line in run.stdout.splitlines():
        u = json.loads(line)
        refs[u["id"]] = u
    if not refs:
        fail(f"no '{args.split}' utterances in {args.plan}")
    if args.gain_db:
        scale = 10.0 ** (args.gain_db / 20.0)
        for u in refs.values():
            scale_wav(u["wav"], scale)
    return refs


def scale_wav(path, scale):
    with wave.open(path, "rb") as r:
        params = r.getparams()
        if params.sampwidth != 2:
            fail(f"{path}: expected 16-bit samples")
        samples = array("h", r.readframes(params.nframes))
    if sys.byteorder != "little":
        samples.byteswap()
    for i, v in enumerate(samples):
        samples[i] = max(-32768, min(32767, int(round(v * scale))))
    if sys.byteorder != "little":
        samples.byteswap()
    with wave.open(path, "wb") as w:
        w.setparams(params)
        w.writeframes(samples.tobytes())


def decode(args, refs, search):
    """{id: [{"word", "start", "end", "confidence"}]} from `BIN decode --format json`."""
    cmd = [args.bin, "decode", "--model", args.model, "--format", "json", "--search", search]
    cmd += args.decode_arg or []
    cmd += [refs[uid]["wav"] for uid in sorted(refs)]
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        fail(f"decoding failed ({run.returncode}): {' '.join(cmd[:8])} ...\n{run.stderr[-2000:]}")
    hyps = {}
    for line in run.stdout.splitlines():
        if line.strip():
            j = json.loads(line)
            hyps[j["id"]] = j["words"]
    missing = sorted(set(refs) - set(hyps))
    if missing:
        fail(f"{search}: no decoding for {len(missing)} utterances, e.g. {missing[0]}")
    return hyps


def align(ref, hyp):
    """Levenshtein alignment of two word lists: [(ref_index, hyp_index)] of the aligned pairs
    (substitutions and matches; insertions and deletions are left out)."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]), d[i - 1][j] + 1,
                          d[i][j - 1] + 1)
    pairs, i, j = [], n, m
    while i > 0 and j > 0:
        if d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif d[i][j] == d[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    pairs.reverse()
    return pairs


def matched_words(refs, hyps, start_offset, end_offset):
    """One record per counted word: id, word, true and predicted start/end (offsets applied)."""
    out, stats = [], {"ref_words": 0, "recognized": 0, "untimed": 0}
    for uid in sorted(refs):
        ref = refs[uid]["words"]
        hyp = hyps[uid]
        stats["ref_words"] += len(ref)
        for i, j in align([w["word"] for w in ref], [w["word"].upper() for w in hyp]):
            r, h = ref[i], hyp[j]
            if r["word"] != h["word"].upper():
                continue
            stats["recognized"] += 1
            if r["start"] is None or r["end"] is None:
                stats["untimed"] += 1
                continue
            out.append({"id": uid, "index": i, "word": r["word"],
                        "true_start": r["start"], "true_end": r["end"],
                        "start": h["start"] + start_offset, "end": h["end"] + end_offset})
    return out, stats


def quantile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(errors, tolerance):
    """errors: signed (predicted - true) seconds."""
    absolute = sorted(abs(e) for e in errors)
    signed = sorted(errors)
    n = len(errors)
    return {
        "median_abs": quantile(absolute, 0.5), "p90_abs": quantile(absolute, 0.9),
        "max_abs": absolute[-1] if absolute else float("nan"),
        "mean_signed": sum(errors) / n if n else float("nan"),
        "median_signed": quantile(signed, 0.5),
        # a tiny epsilon so that 0.1 s written as 0.1000000001 by float arithmetic still counts
        "within": sum(a <= tolerance + 1e-9 for a in absolute) / n if n else 0.0,
    }


def slope(xs, ys):
    """Least-squares slope of ys on xs (error drift per second of audio)."""
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[1:]))
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "bin", "mamba-asr"),
                    help="the mamba-asr binary (default: build/bin/mamba-asr)")
    ap.add_argument("--model", required=True, help="a CTC model (.masr)")
    ap.add_argument("--plan", required=True, help="make_synth_corpus.sh's plan.tsv")
    ap.add_argument("--split", default="test", help="plan split to synthesize (default: test)")
    ap.add_argument("--limit", type=int, default=60, help="first N utterances of the split")
    ap.add_argument("--search", default="ctc-beam",
                    help="comma-separated searches, e.g. greedy,ctc-beam (default: ctc-beam)")
    ap.add_argument("--decode-arg", action="append",
                    help="extra argument for mamba-asr decode (repeatable, e.g. --decode-arg=--beam=20)")
    ap.add_argument("--offset", type=float, default=0.0,
                    help="seconds added to predicted starts and ends before comparing")
    ap.add_argument("--start-offset", type=float, default=0.0, help="added to starts (+ --offset)")
    ap.add_argument("--end-offset", type=float, default=0.0, help="added to ends (+ --offset)")
    ap.add_argument("--tolerance", type=float, default=0.1, help="seconds (default 0.1)")
    ap.add_argument("--min-fraction", type=float, default=0.0,
                    help="exit 1 if the fraction of starts or of ends within the tolerance is lower")
    ap.add_argument("--gain-db", type=float, default=-3.0,
                    help="gain applied to the synthesized audio (make_synth_corpus.sh: -3)")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="interpreter for espeak_word_timings.py (needs libespeak-ng)")
    ap.add_argument("--keep", help="synthesize into this folder and keep it (default: a temp folder)")
    ap.add_argument("--words-out", help="write every counted word (JSON lines) to this file")
    ap.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    args = ap.parse_args()
    if not os.path.isfile(args.bin) or not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not an executable")
    if not os.path.isfile(args.model) and not os.path.isdir(args.model):
        fail(f"no model at {args.model}")
    searches = [s for s in args.search.split(",") if s]
    start_offset = args.offset + args.start_offset
    end_offset = args.offset + args.end_offset

    folder = args.keep or tempfile.mkdtemp(prefix="masr_timestamps_")
    try:
        refs = synthesize(args, folder)
        results, below = {}, []
        words_out = open(args.words_out, "w", encoding="utf-8") if args.words_out else None
        for search in searches:
            hyps = decode(args, refs, search)
            words, stats = matched_words(refs, hyps, start_offset, end_offset)
            if words_out:
                for w in words:
                    words_out.write(json.dumps(dict(w, search=search)) + "\n")
            start_err = [w["start"] - w["true_start"] for w in words]
            end_err = [w["end"] - w["true_end"] for w in words]
            r = dict(stats, utterances=len(refs), words=len(words),
                     start=summarize(start_err, args.tolerance),
                     end=summarize(end_err, args.tolerance))
            r["start"]["drift_per_s"] = slope([w["true_start"] for w in words], start_err)
            r["end"]["drift_per_s"] = slope([w["true_end"] for w in words], end_err)
            results[search] = r
            if not words or min(r["start"]["within"], r["end"]["within"]) < args.min_fraction:
                below.append(search)
        if words_out:
            words_out.close()
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    if args.json:
        print(json.dumps({"split": args.split, "start_offset": start_offset,
                          "end_offset": end_offset, "tolerance": args.tolerance,
                          "results": results}, indent=1))
    else:
        print(f"{len(refs)} '{args.split}' utterances of {args.plan}; offsets added: start "
              f"{start_offset:+.3f} s, end {end_offset:+.3f} s; tolerance {args.tolerance:.3f} s")
        print(f"{'search':<9} {'words':>10}  {'':<5} {'median':>7} {'p90':>7} {'max':>7} "
              f"{'bias':>7} {'mean':>7} {'drift':>7} {'within':>7}")
        for search, r in results.items():
            counted = f"{r['words']}/{r['ref_words']}"
            for k in ("start", "end"):
                s = r[k]
                print(f"{search if k == 'start' else '':<9} {counted if k == 'start' else '':>10}  "
                      f"{k:<5} {s['median_abs'] * 1000:6.0f}ms {s['p90_abs'] * 1000:5.0f}ms "
                      f"{s['max_abs'] * 1000:5.0f}ms {s['median_signed'] * 1000:+5.0f}ms "
                      f"{s['mean_signed'] * 1000:+5.0f}ms {s['drift_per_s'] * 1000:+4.1f}ms/s "
                      f"{s['within'] * 100:6.1f}%")
        print("words: counted (recognized exactly and timed by espeak-ng) / reference words; "
              "median/p90/max: |predicted - true|; bias: median of predicted - true (mean: its "
              "mean); drift: slope of the error over the utterance; within: |error| <= tolerance")
    if below:
        print(f"FAIL: {', '.join(below)}: fewer than {args.min_fraction:.0%} of starts or ends "
              f"within {args.tolerance * 1000:.0f} ms", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

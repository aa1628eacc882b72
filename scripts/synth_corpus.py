#!/usr/bin/python3
# scripts/synth_corpus.py
# Helper of make_synth_corpus.sh (standard library only; docs/synth-corpus.md):
#   plan    picks sentences, speakers (engine, voice, speed, pitch) and channel conditions from a seed
#   synth   synthesizes the plan's missing WAVs with parallel worker processes
#   csv     writes SpeechBrain's train/valid/test CSVs (or eval.csv) from the synthesized WAVs
#   lmtext  writes LM text: the sentence pool minus every sentence of valid.csv, test.csv, eval.csv
#   pool    prints the normalized sentence pool of some text sources (and counts on stderr)
#
# Two planners. Without --engines/--voices/--conditions/--text/--eval the *classic* planner runs:
# espeak-ng only, 96 speakers, fortunes text, a 6-column plan and a 5-column CSV, bit-identical to
# the corpora of earlier versions. Any of those options selects the *extended* planner: several
# engines, all espeak-ng variants, virtual festival/flite speakers, per-utterance conditions, an
# 8-column plan and a `condition` CSV column.
import argparse
import array
import csv
import glob
import gzip
import multiprocessing
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import wave

# ---------------------------------------------------------------- voices ----------------------------

# espeak-ng base voices (gmw/ English accents shipped with espeak-ng-data) and voice variants.
BASE_VOICES = ["en-us", "en-us-nyc", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan",
               "en-gb-x-gbcwmd", "en-029"]
VARIANTS = ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5"]  # classic
# Every variant of espeak-ng-data/voices/!v (espeak-ng 1.51), for the extended planner. Fixed here
# rather than listed at run time, so that the plan does not depend on the installed files.
ALL_VARIANTS = [
    "adam", "Alex", "Alicia", "Andrea", "Andy", "Annie", "antonio", "aunty", "belinda", "benjamin",
    "boris", "caleb", "david", "Demonic", "Denis", "Diogo", "ed", "edward", "edward2", "Gene",
    "Gene2", "gustave", "announcer", "Henrique", "Hugo", "iven", "iven2", "iven3", "iven4", "Jacky",
    "john", "kaukovalta", "Lee", "linda", "marcelo", "Marco", "Mario", "max", "Michael", "michel",
    "miguel", "Mike", "Mr", "Nguyen", "pablo", "paul", "pedro", "quincy", "RicishayMax",
    "RicishayMax2", "RicishayMax3", "rob", "robert", "robosoft", "robosoft2", "robosoft3",
    "robosoft4", "robosoft5", "robosoft6", "robosoft7", "robosoft8", "steph", "steph2", "steph3",
    "Storm", "Tweaky", "UniRobot", "zac", "anika", "anikaRobot", "AnxiousAndy", "fast", "f1", "f2",
    "f3", "f4", "f5", "whisperf", "grandpa", "klatt", "klatt2", "klatt3", "klatt4", "klatt5",
    "klatt6", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "norbert", "sandro", "shelby",
    "travis", "victor", "whisper", "croak", "grandma"]

# festival and flite voices: short name -> (engine's own name, nominal F0 in Hz or None when the
# voice takes no pitch target). Each becomes VIRTUAL_SPEAKERS speakers with their own speed/pitch.
FESTIVAL_VOICES = {"kal": ("kal_diphone", 105), "ked": ("ked_diphone", 105),
                   "slt_hts": ("cmu_us_slt_arctic_hts", None)}
FLITE_VOICES = {"kal": ("kal", 100), "kal16": ("kal16", 100), "awb": ("awb", 110),
                "rms": ("rms", 100), "slt": ("slt", 170)}
# Reserved for evaluation: never in train, valid or test, only with --eval (docs/synth-corpus.md).
RESERVED = {("flite", "awb"), ("flite", "rms"), ("flite", "slt"), ("festival", "slt_hts")}
VIRTUAL_SPEAKERS = 16
ENGINES = ["espeak", "festival", "flite"]
TRAIN_VOICES = {"espeak": BASE_VOICES, "festival": ["kal", "ked"], "flite": ["kal", "kal16"]}
EVAL_VOICES = {"festival": ["slt_hts"], "flite": ["awb", "rms", "slt"]}

# Channel / speaker conditions in processing order (each an opt-in flag; docs/synth-corpus.md).
CONDITIONS = ["speed", "pitch", "tempo", "reverb", "noise", "gain", "telephone", "opus", "gsm"]
NOISES = ["white", "pink", "brown"]

# ---------------------------------------------------------------- tools -----------------------------


def synth_root():
    """MASR_SYNTH_ROOT: a folder the synthesizers' .deb files were extracted into (synth_deps.sh)."""
    return os.environ.get("MASR_SYNTH_ROOT", "").rstrip("/")


def data_path(path):
    """A file of a package: under MASR_SYNTH_ROOT when that is set, else the system's."""
    root = synth_root()
    return root + path if root else path


def tool_env():
    """Environment for the synthesizers. Only the child processes get the private prefix's library
    path; this Python keeps the system's libraries."""
    env = dict(os.environ)
    root = synth_root()
    if root:
        libs = []
        for pattern in ("/usr/lib/*-linux-gnu", "/lib/*-linux-gnu", "/usr/lib"):
            libs += sorted(glob.glob(root + pattern))
        pulse = glob.glob(root + "/usr/lib/*-linux-gnu/pulseaudio")
        env["PATH"] = root + "/usr/bin:" + root + "/bin:" + env.get("PATH", "")
        env["LD_LIBRARY_PATH"] = ":".join(libs + pulse + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
        sox_modules = glob.glob(root + "/usr/lib/*-linux-gnu/sox")
        if sox_modules:
            env["LTDL_LIBRARY_PATH"] = sox_modules[0]
        espeak_data = glob.glob(root + "/usr/lib/*-linux-gnu/espeak-ng-data")
        if espeak_data:
            env["ESPEAK_DATA_PATH"] = os.path.dirname(espeak_data[0])
    env["LC_ALL"] = "C"
    return env


def tool(name):
    root = synth_root()
    if root:
        for d in ("/usr/bin/", "/bin/"):
            if os.path.exists(root + d + name):
                return root + d + name
        return None
    return shutil.which(name)


def festival_cmd():
    cmd = [tool("festival")]
    if synth_root():  # init.scm comes from --datadir; voices and lexicons are found near it
        cmd += ["--datadir", data_path("/usr/share/festival"),
                "--libdir", data_path("/usr/share/festival")]
    return cmd


def need_tools(names):
    missing = [n for n in names if tool(n) is None]
    if missing:
        where = f" under MASR_SYNTH_ROOT={synth_root()}" if synth_root() else ""
        fail(f"{', '.join(missing)} missing{where}; run scripts/setup.sh (or scripts/synth_deps.sh "
             f"install on a machine without a package archive)", 1)


def fail(message, code=2):
    print(f"make_synth_corpus: {message}", file=sys.stderr)
    sys.exit(code)

# ---------------------------------------------------------------- text ------------------------------


# The files of the `fortunes` and `fortunes-min` packages (Debian 12): a fixed list, so that other
# fortune packages installed on the machine (other languages among them) never change the pool.
FORTUNES_FILES = sorted([
    "art", "ascii-art", "computers", "cookie", "debian", "definitions", "disclaimer", "drugs",
    "education", "ethnic", "food", "fortunes", "goedel", "humorists", "kids", "knghtbrd", "law",
    "linux", "linuxcookie", "literature", "love", "magic", "medicine", "men-women", "miscellaneous",
    "news", "paradoxum", "people", "perl", "pets", "platitudes", "politics", "pratchett", "riddles",
    "science", "songs-poems", "sports", "startrek", "tao", "translate-me", "wisdom", "work", "zippy"])
# Text sources for training, validation, test and LM text, in pool order: name -> Debian package.
TEXT_SOURCES = {"fortunes": "fortunes, fortunes-min", "anarchism": "fortune-anarchism",
                "kjv": "bible-kjv, bible-kjv-text", "wordnet": "wordnet-base"}
EVAL_TEXT_SOURCES = {"manpages": "the installed manual pages (section 1)"}

ABBREVIATION = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|vs|etc|Inc|Ltd|Co|No|Vol|Gen|Col|"
                          r"Capt|Lt|Sgt|Rev|Gov|Sen|Rep|Mt|Ft|e\.g|i\.e|[A-Za-z])\.\s*$")
ATTRIBUTION = re.compile(r"^\s*(?:--|―|-- )")
# Anything outside these means code, URLs, symbols or foreign text: the sentence is dropped.
ALLOWED = re.compile(r"^[A-Za-z' ,.;:!?\"()\-]*$")


def fortune_chunks(names):
    """Yields each fortune (its lines) of the named fortune files, in the given order."""
    folder = data_path("/usr/share/games/fortunes")
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            fail(f"{path} is missing; run scripts/setup.sh", 1)
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


def fortune_sentences(names):
    for chunk in fortune_chunks(names):
        yield from split_sentences(" ".join(line for line in chunk if line))


def kjv_sentences():
    """King James Bible verses through the `bible` program; a sentence of more than 30 words is
    cut at its colons and semicolons."""
    bible = tool("bible")
    if bible is None:
        fail("'bible' (bible-kjv) is missing; run scripts/setup.sh", 1)
    cmd = [bible, "-l0"]
    if synth_root():
        cmd += ["-p", data_path("/usr/lib")]
    text = subprocess.run(cmd + ["gen1:1-rev22:21"], env=tool_env(), check=True,
                          capture_output=True, text=True, errors="replace").stdout
    verse = re.compile(r"^\s+\d+ (.*)$")
    for line in text.splitlines():
        m = verse.match(line)
        if not m:
            continue
        for sentence in split_sentences(m.group(1)):
            if len(sentence.split()) > 30:
                yield from re.split(r"[:;]\s+", sentence)
            else:
                yield sentence


def wordnet_sentences():
    """The quoted usage examples of WordNet's glosses ("he rode a bicycle to work")."""
    for part in ("adj", "adv", "noun", "verb"):
        path = data_path(f"/usr/share/wordnet/data.{part}")
        if not os.path.isfile(path):
            fail(f"{path} is missing; run scripts/setup.sh", 1)
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or " | " not in line:
                    continue  # the licence header
                for example in re.findall(r'"([^"]+)"', line.split(" | ", 1)[1]):
                    yield example


TROFF_ESCAPE = re.compile(r"\\(?:f(?:\[[^]]*\]|\(..|.)|s[-+]?\d|\(..|\[[^]]*\]|\*(?:\(..|\[[^]]*\]|.)|"
                          r"[&|^%:~0-]|e|.)")
TROFF_CHARS = {"\\-": "-", "\\(aq": "'", "\\(em": " ", "\\(en": " ", "\\(dq": '"', "\\e": " ",
               "\\ ": " ", "\\~": " "}


def manpage_sentences(limit):
    """Eval only: prose of section-1 manual pages (troff requests and escapes stripped), in sorted
    file order until `limit` raw sentences."""
    count = 0
    for path in sorted(glob.glob(data_path("/usr/share/man/man1/*.1.gz"))):
        if os.path.islink(path):
            continue
        try:
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except (OSError, EOFError):
            continue
        prose = []
        for line in lines:
            if line.startswith((".", "'")):
                prose.append("\n")  # a request ends the paragraph
                continue
            prose.append(TROFF_ESCAPE.sub(lambda m: TROFF_CHARS.get(m.group(0), ""), line))
        for para in " ".join(prose).split("\n"):
            for sentence in split_sentences(" ".join(para.split())):
                yield sentence
                count += 1
        if count >= limit:
            return


def parse_text_sources(spec, eval_mode):
    allowed = dict(TEXT_SOURCES)
    if eval_mode:
        allowed.update(EVAL_TEXT_SOURCES)
    names = list(TEXT_SOURCES) if spec == "all" else [s for s in spec.split(",") if s]
    for name in names:
        if name in EVAL_TEXT_SOURCES and not eval_mode:
            fail(f"--text {name}: manual-page text is reserved for evaluation (--eval)")
        if name not in allowed:
            fail(f"--text: unknown text source '{name}' (known: {', '.join(allowed)}, all)")
    if not names:
        fail("--text: no text source")
    return names


def sentence_pool(min_words, max_words, max_chars, sources=("fortunes",), manpage_limit=0,
                  counts=None):
    seen, pool = set(), []
    for source in sources:
        raw = {"fortunes": lambda: fortune_sentences(FORTUNES_FILES),
               "anarchism": lambda: fortune_sentences(["anarchism"]),
               "kjv": kjv_sentences, "wordnet": wordnet_sentences,
               "manpages": lambda: manpage_sentences(manpage_limit)}[source]()
        before = len(pool)
        for sentence in raw:
            norm = normalize(sentence.strip(), min_words, max_words, max_chars)
            if norm and norm not in seen:
                seen.add(norm)
                pool.append(norm)
        if counts is not None:
            counts[source] = len(pool) - before
    return pool

# ---------------------------------------------------------------- classic planner -------------------


def speakers_by_split(rng, valid_share, test_share):
    speakers = [f"{v}+{x}" for v in BASE_VOICES for x in VARIANTS]
    rng.shuffle(speakers)
    n_test = max(1, round(len(speakers) * test_share))
    n_valid = max(1, round(len(speakers) * valid_share))
    return {"test": speakers[:n_test], "valid": speakers[n_test:n_test + n_valid],
            "train": speakers[n_test + n_valid:]}


def plan_classic(args):
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

# ---------------------------------------------------------------- extended planner ------------------


class Speaker:
    def __init__(self, name, engine, voice, speed, pitch):
        self.name, self.engine, self.voice, self.speed, self.pitch = name, engine, voice, speed, pitch


def parse_voice(token):
    """'espeak:en-us', 'espeak:en-us+f3', 'festival:kal', 'festival:kal_diphone', 'flite:slt', ...
    -> (engine, short voice name, espeak variant or None)."""
    engine, _, voice = token.partition(":")
    if engine not in ENGINES or not voice:
        fail(f"--voices: '{token}' is not ENGINE:VOICE with ENGINE one of {', '.join(ENGINES)}")
    if engine == "espeak":
        base, _, variant = voice.partition("+")
        if base not in BASE_VOICES or (variant and variant not in ALL_VARIANTS):
            fail(f"--voices: unknown espeak-ng voice '{voice}' (voices: {', '.join(BASE_VOICES)}; "
                 f"variants: espeak-ng --voices=variant)")
        return engine, base, variant or None
    table = FESTIVAL_VOICES if engine == "festival" else FLITE_VOICES
    for short, (full, _) in table.items():
        if voice in (short, full):
            return engine, short, None
    fail(f"--voices: unknown {engine} voice '{voice}' (known: {', '.join(table)})")


def voice_inventory(args):
    """{engine: [(voice, espeak variant or None)]} for this run; reserved voices refused unless
    --eval."""
    engines = parse_engines(args.engines)
    if args.voices:
        chosen = [parse_voice(t) for t in args.voices.split(",") if t]
        if args.engines is not None:
            for engine, voice, _ in chosen:
                if engine not in engines:
                    fail(f"--voices {engine}:{voice}: engine '{engine}' is not in --engines")
    elif args.eval:
        chosen = [(e, v, None) for e, vs in EVAL_VOICES.items() if e in engines for v in vs]
    else:
        chosen = [(e, v, None) for e in engines for v in TRAIN_VOICES[e]]
    for engine, voice, _ in chosen:
        if (engine, voice) in RESERVED and not args.eval:
            fail(f"{engine} voice '{voice}' is reserved for evaluation and never used for "
                 f"train/valid/test; build a held-out set with --eval (docs/synth-corpus.md)")
    inventory = {}
    for engine, voice, variant in chosen:
        if (voice, variant) not in inventory.setdefault(engine, []):
            inventory[engine].append((voice, variant))
    if not inventory:
        fail("no voice selected")
    return inventory


def parse_engines(spec):
    """'espeak,festival:0.5' -> {engine: weight}; None or 'all' -> every engine, weight 1."""
    if spec is None or spec == "all":
        return {e: 1.0 for e in ENGINES}
    weights = {}
    for token in spec.split(","):
        name, _, weight = token.partition(":")
        if name not in ENGINES:
            fail(f"--engines: unknown engine '{name}' (known: {', '.join(ENGINES)}, all)")
        try:
            weights[name] = float(weight) if weight else 1.0
        except ValueError:
            fail(f"--engines: weight '{weight}' of '{name}' is not a number")
        if weights[name] <= 0:
            fail(f"--engines: weight of '{name}' must be positive")
    return weights


def parse_conditions(spec, default_prob):
    """'noise,reverb:0.3' or 'all' or 'none' -> {condition: probability} in CONDITIONS order."""
    if not 0 <= default_prob <= 1:
        fail(f"--condition-prob {default_prob} is not within 0..1")
    if spec in (None, "", "none"):
        return {}
    items = {}
    for token in (CONDITIONS if spec == "all" else spec.split(",")):
        name, _, prob = token.partition(":")
        if name not in CONDITIONS:
            fail(f"--conditions: unknown condition '{name}' (known: {', '.join(CONDITIONS)}, all, none)")
        try:
            p = float(prob) if prob else default_prob
        except ValueError:
            fail(f"--conditions: probability '{prob}' of '{name}' is not a number")
        if not 0 <= p <= 1:
            fail(f"--conditions: probability {p} of '{name}' is not within 0..1")
        items[name] = p
    return {c: items[c] for c in CONDITIONS if c in items}


def make_speakers(inventory, seed):
    """Every speaker of every engine, with its base speed and pitch (deterministic from the seed)."""
    speakers = {}
    for engine, voices in inventory.items():
        rng = random.Random(f"{seed}/speakers/{engine}")
        out = []
        for voice, variant in voices:
            if engine == "espeak":
                for v in ([variant] if variant else ALL_VARIANTS):
                    name = f"{voice}+{v}"
                    out.append(Speaker(name, engine, name, rng.randint(135, 185), rng.randint(30, 70)))
                continue
            full, f0 = (FESTIVAL_VOICES if engine == "festival" else FLITE_VOICES)[voice]
            # the HTS voice takes neither speed nor pitch targets: one speaker
            for k in range(1 if full == "cmu_us_slt_arctic_hts" else VIRTUAL_SPEAKERS):
                # speed: percent of the voice's own rate; pitch: target mean F0 in Hz
                speed = 100 if full == "cmu_us_slt_arctic_hts" else rng.randint(80, 125)
                pitch = round(f0 * rng.uniform(0.8, 1.3)) if f0 else 0
                out.append(Speaker(f"{engine}-{voice}-{k:02d}", engine, full, speed, pitch))
        speakers[engine] = out
    return speakers


def split_speakers(speakers, seed, valid_share, test_share):
    """Per engine, speakers shuffled and split: test first, then valid, the rest train."""
    splits = {}
    for engine, items in speakers.items():
        items = list(items)
        random.Random(f"{seed}/split/{engine}").shuffle(items)
        n_test = max(1, round(len(items) * test_share))
        n_valid = max(1, round(len(items) * valid_share))
        if len(items) < n_test + n_valid + 1:
            fail(f"engine '{engine}' has {len(items)} speakers: too few for train/valid/test")
        splits[engine] = {"test": items[:n_test], "valid": items[n_test:n_test + n_valid],
                          "train": items[n_test + n_valid:]}
    return splits


def draw_conditions(streams, conditions):
    """The next utterance's condition string: each enabled factor draws from its own random stream,
    so that enabling one factor changes no other draw (docs/synth-corpus.md gives the ranges)."""
    parts = []
    codec = None
    for name, prob in conditions.items():
        rng = streams[name]
        if rng.random() >= prob:
            continue
        if name == "speed":
            parts.append("speed={:.3f}".format(rng.choice([-1, 1]) * rng.uniform(0.03, 0.12) + 1))
        elif name == "pitch":
            parts.append("pitch={:+d}".format(rng.choice([-1, 1]) * rng.randint(100, 400)))
        elif name == "tempo":
            parts.append("tempo={:.3f}".format(rng.choice([-1, 1]) * rng.uniform(0.05, 0.2) + 1))
        elif name == "reverb":
            parts.append("reverb={}/{}/{}".format(rng.randint(20, 90), rng.randint(20, 80),
                                                  rng.randint(20, 100)))
        elif name == "noise":
            parts.append("noise={}/{:.1f}/{:.2f}".format(rng.choice(NOISES), rng.uniform(5, 30),
                                                         rng.uniform(0, 20)))
        elif name == "gain":
            parts.append("gain={:+.1f}".format(rng.choice([rng.uniform(-24, -3), rng.uniform(3, 10)])))
        elif name == "telephone":
            parts.append("telephone")
        elif name in ("opus", "gsm"):
            value = "opus={}".format(rng.randint(8, 16)) if name == "opus" else "gsm"
            if codec is None:
                codec = value
            elif rng.random() < 0.5:  # one codec per utterance: both drawn, a coin picks
                codec = value
    if codec:
        parts.append(codec)
    return ";".join(parts) or "clean"


# Estimated seconds of an utterance: SCALE[engine] * (0.4 + words * 60 / (WPM[engine] * speed)),
# fitted on a few hundred synthesized sentences (the CSVs report the real durations).
EST_SCALE = {"espeak": 0.82, "festival": 0.79, "flite": 0.71}
EST_WPM = {"espeak": 1.0, "festival": 1.6, "flite": 1.6}  # espeak speed is in wpm, the others in %


def plan_extended(args):
    inventory = voice_inventory(args)
    conditions = parse_conditions(args.conditions, args.condition_prob)
    sources = parse_text_sources(args.text or ("manpages" if args.eval else "fortunes"), args.eval)
    counts = {}
    manpage_limit = max(20000, 20 * (args.utterances or 0), int(20000 * (args.hours or 0)))
    pool = sentence_pool(args.min_words, args.max_words, args.max_chars, sources, manpage_limit,
                         counts)
    if args.eval and any(s in EVAL_TEXT_SOURCES for s in sources):
        # eval text never shares a sentence with any training text source
        train_text = set(sentence_pool(args.min_words, args.max_words, args.max_chars,
                                       list(TEXT_SOURCES)))
        pool = [s for s in pool if s not in train_text]
    if not pool:
        fail("the text sources gave no sentence", 1)
    random.Random(f"{args.seed}/text").shuffle(pool)
    speakers = make_speakers(inventory, args.seed)
    weights = parse_engines(args.engines)
    engines = [e for e in ENGINES if e in speakers]
    engine_weights = [weights.get(e, 1.0) for e in engines]
    if args.eval:
        splits = {e: {"eval": speakers[e]} for e in engines}
        held, train_pool = [], pool
    else:
        splits = split_speakers(speakers, args.seed, args.valid_share, args.test_share)
        # valid/test speak sentences of their own slice of the pool, never a training sentence
        n_held = min(len(pool) // 2, max(1, round(len(pool) * (args.valid_share + args.test_share))))
        held, train_pool = pool[:n_held], pool[n_held:]
    target_s = args.hours * 3600.0 if args.hours else None
    rows, total_s, i, n_train, n_held_used = [], 0.0, 0, 0, 0
    rng = random.Random(f"{args.seed}/utterances")
    uncovered = [(e, v) for e in engines for v, _ in dict.fromkeys(inventory[e])]
    streams = {name: random.Random(f"{args.seed}/{name}") for name in CONDITIONS}
    while (target_s is None and i < args.utterances) or (target_s is not None and total_s < target_s):
        if args.eval:
            split = "eval"
        else:
            r = rng.random()
            split = ("test" if r < args.test_share else
                     "valid" if r < args.test_share + args.valid_share else "train")
            if i < 3:  # small corpora still get every split
                split = ["train", "valid", "test"][i]
        if uncovered:  # small corpora still get every voice, then engines by weight
            engine, voice = uncovered[0]
            speaker = rng.choice([s for s in splits[engine][split]
                                  if voice_key(engine, s.name)[1] == voice] or splits[engine][split])
            uncovered = [v for v in uncovered if v != voice_key(engine, speaker.name)]
        else:
            engine = rng.choices(engines, engine_weights)[0]
            speaker = rng.choice(splits[engine][split])
        if engine == "espeak":
            speed = speaker.speed + rng.randint(-10, 10)
            pitch = min(99, max(0, speaker.pitch + rng.randint(-5, 5)))
        else:
            speed = speaker.speed if speaker.voice == "cmu_us_slt_arctic_hts" else \
                speaker.speed + rng.randint(-5, 5)
            pitch = round(speaker.pitch * rng.uniform(0.95, 1.05)) if speaker.pitch else 0
        if split == "train" or args.eval:
            # --text-offset: other sentences for the same rows (speakers, conditions), so that
            # corpora made for successive trainings differ in text and share valid/test
            text = train_pool[(n_train + args.text_offset) % len(train_pool)]
            n_train += 1
        else:
            text = held[n_held_used % len(held)]
            n_held_used += 1
        condition = draw_conditions(streams, conditions)
        utt_id = "{}-{}{:06d}".format(re.sub(r"[^a-z0-9]+", "_", speaker.name.lower()),
                                      f"o{args.text_offset}-" if split == "train" and args.text_offset
                                      else "", i)
        rows.append((utt_id, split, speaker.name, speed, pitch, text, engine, condition))
        factor = 1.0
        for part in condition.split(";"):
            key, _, value = part.partition("=")
            if key in ("speed", "tempo"):
                factor *= float(value)
        total_s += EST_SCALE[engine] * (0.4 + len(text.split()) * 60.0 / (EST_WPM[engine] * speed)) \
            / factor
        i += 1
    for row in rows:
        assert row[1] == "eval" or (row[6], voice_key(row[6], row[2])) not in RESERVED, row
        sys.stdout.write("\t".join(str(x) for x in row) + "\n")
    n_speakers = {s: sum(len(v.get(s, [])) for v in splits.values())
                  for s in (["eval"] if args.eval else ["train", "valid", "test"])}
    print(f"synth: {len(rows)} utterances, {len(pool)} distinct sentences "
          f"({', '.join(f'{k} {v}' for k, v in counts.items())}), ~{total_s / 3600:.2f} h estimated, "
          f"engines {','.join(engines)}, speakers "
          + "/".join(str(n) for n in n_speakers.values()) + " (" + "/".join(n_speakers) + ")"
          + (f", conditions {','.join(f'{k}:{v:g}' for k, v in conditions.items())}"
             if conditions else ""), file=sys.stderr)


def voice_key(engine, speaker):
    """The (engine, short voice name) of a speaker name of the extended plan."""
    if engine == "espeak":
        return engine, speaker.split("+")[0]
    return engine, speaker.split("-")[1]


def plan(args):
    extended = (args.eval or args.engines is not None or args.voices is not None
                or args.conditions is not None or args.text is not None)
    if args.text_offset < 0:
        fail(f"--text-offset {args.text_offset}: must be 0 or more")
    if args.text_offset and (args.eval or not extended):
        fail("--text-offset is for extended training corpora (--engines/--voices/--conditions/--text), "
             "not for --eval or the classic corpus")
    (plan_extended if extended else plan_classic)(args)

# ---------------------------------------------------------------- synthesis -------------------------


def run_cmd(cmd, utt_id, stdin=None):
    result = subprocess.run(cmd, env=TOOL_ENV, input=stdin, capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"{utt_id}: {' '.join(cmd)} exited with {result.returncode}: "
                           f"{result.stderr.decode(errors='replace').strip()[:400]}")
    return result.stdout


def run_pipe(first, second, utt_id):
    """first | second, both checked."""
    p1 = subprocess.Popen(first, env=TOOL_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p2 = subprocess.Popen(second, env=TOOL_ENV, stdin=p1.stdout, stderr=subprocess.PIPE)
    p1.stdout.close()
    err2 = p2.communicate()[1]
    err1 = p1.stderr.read()
    p1.wait()
    for p, cmd, err in ((p1, first, err1), (p2, second, err2)):
        if p.returncode != 0:
            raise RuntimeError(f"{utt_id}: {' '.join(cmd)} exited with {p.returncode}: "
                               f"{err.decode(errors='replace').strip()[:400]}")


def read_samples(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, path
        samples = array.array("h")
        samples.frombytes(w.readframes(w.getnframes()))
        if sys.byteorder == "big":
            samples.byteswap()
        return samples, w.getframerate()


def rms(samples):
    return (sum(x * x for x in samples) / max(1, len(samples))) ** 0.5


def sox_cmd():
    return [TOOLS["sox"], "-R", "-D", "-V1"]


def postprocess(row, raw, work, final):
    """Engine output -> 16 kHz 16-bit mono WAV with the row's conditions (docs/synth-corpus.md).
    Steps: sox (resample, speed, pitch, tempo, reverb, peak -3 dBFS) -> noise mix -> sox (gain,
    telephone band) -> codec; each WAV written is 16 kHz 16-bit mono, the last one is renamed into
    place."""
    utt_id, condition = row[0], row[7]
    cond = dict(part.partition("=")[::2] for part in condition.split(";")) if condition != "clean" else {}
    wav16 = ["-r", "16000", "-b", "16", "-c", "1", "-t", "wav"]
    effects = ["rate", "16000"]
    if "speed" in cond:
        effects += ["speed", cond["speed"], "rate", "16000"]
    if "pitch" in cond:
        effects += ["pitch", cond["pitch"]]
    if "tempo" in cond:
        effects += ["tempo", "-s", cond["tempo"]]
    if "reverb" in cond:
        reverberance, damping, room = cond["reverb"].split("/")
        effects += ["pad", "0", "0.3", "reverb", reverberance, damping, room]
    stage = os.path.join(work, utt_id + ".a.wav")
    run_cmd(sox_cmd() + [raw] + wav16 + [stage] + effects + ["gain", "-n", "-3"], utt_id)
    if "noise" in cond:
        kind, snr, offset = cond["noise"].split("/")
        speech, rate = read_samples(stage)
        seconds = "{:.4f}".format(len(speech) / rate)
        noise = os.path.join(work, utt_id + ".n.wav")
        # sox's generator is repeatable (-R); the offset picks this utterance's stretch of it
        run_cmd(sox_cmd() + ["-n"] + wav16 + [noise, "synth",
                             "{:.4f}".format(len(speech) / rate + float(offset)), kind + "noise",
                             "trim", offset, seconds], utt_id)
        noise_samples, _ = read_samples(noise)
        scale = rms(speech) / max(1e-9, rms(noise_samples)) / 10 ** (float(snr) / 20)
        mixed = os.path.join(work, utt_id + ".m.wav")
        # both halved against clipping, then the peak set to -3 dBFS again
        run_cmd(sox_cmd() + ["-m", "-v", "0.5", stage, "-v", "{:.6f}".format(0.5 * scale), noise]
                + wav16 + [mixed, "gain", "-n", "-3"], utt_id)
        stage = mixed
    effects = []
    if "gain" in cond:
        effects += ["gain", "-l", cond["gain"]]
    if "telephone" in cond:
        effects += ["sinc", "300-3400", "rate", "8000", "rate", "16000"]
    if effects:
        out = os.path.join(work, utt_id + ".b.wav")
        run_cmd(sox_cmd() + [stage] + wav16 + [out] + effects, utt_id)
        stage = out
    if "opus" in cond:
        coded = os.path.join(work, utt_id + ".opus")
        run_cmd([TOOLS["opusenc"], "--quiet", "--speech", "--bitrate", cond["opus"], "--serial", "1",
                 stage, coded], utt_id)
        stage = os.path.join(work, utt_id + ".e.wav")  # 16-bit PCM, mono like its input
        run_cmd([TOOLS["opusdec"], "--quiet", "--rate", "16000", "--no-dither", coded, stage],
                utt_id)
    elif "gsm" in cond:  # GSM 06.10 full rate at 8 kHz, libgsm's toast and untoast
        raw = ["-t", "raw", "-e", "signed", "-b", "16", "-c", "1", "-r", "8000"]
        pcm8 = run_cmd(sox_cmd() + [stage] + raw + ["-"], utt_id)
        decoded = run_cmd([TOOLS["untoast"], "-l", "-c"], utt_id,
                          run_cmd([TOOLS["toast"], "-l", "-c"], utt_id, pcm8))
        stage = os.path.join(work, utt_id + ".e.wav")
        run_cmd(sox_cmd() + raw + ["-"] + wav16 + [stage], utt_id, decoded)
    os.replace(stage, final)


def synth_chunk(task):
    """One work item: rows of one engine (and, for festival, one voice). Returns the ids done."""
    out_dir, tmp_dir, rows = task
    work = tempfile.mkdtemp(prefix="chunk", dir=tmp_dir)
    try:
        engine = rows[0][6] if len(rows[0]) > 6 else "classic"
        raws = {}
        if engine == "classic":
            for row in rows:  # the classic command, unchanged: bit-identical corpora
                utt_id, split, voice, speed, pitch, text = row[:6]
                final = os.path.join(out_dir, "wav", split, utt_id + ".wav")
                run_pipe([TOOLS["espeak-ng"], "-v", voice, "-s", str(speed), "-p", str(pitch),
                          "--stdout", text.lower()],
                         sox_cmd() + ["-t", "wav", "-", "-r", "16000", "-b", "16", "-c", "1",
                                      "-t", "wav", final + ".tmp", "gain", "-3"], utt_id)
                os.replace(final + ".tmp", final)
            return len(rows)
        for row in rows:
            raws[row[0]] = os.path.join(work, row[0] + ".raw.wav")
        if engine == "espeak":
            for row in rows:
                utt_id, _, voice, speed, pitch, text = row[:6]
                run_cmd([TOOLS["espeak-ng"], "-v", voice, "-s", str(speed), "-p", str(pitch),
                         "-w", raws[utt_id], text.lower()], utt_id)
        elif engine == "flite":
            for row in rows:
                utt_id, _, speaker, speed, pitch, text = row[:6]
                voice = FLITE_VOICES[speaker.split("-")[1]][0]
                cmd = [TOOLS["flite"], "-voice", voice, "--setf",
                       "duration_stretch={:.4f}".format(100.0 / int(speed))]
                if int(pitch):
                    cmd += ["--setf", f"int_f0_target_mean={int(pitch)}"]
                run_cmd(cmd + ["-t", text.lower(), "-o", raws[utt_id]], utt_id)
        elif engine == "festival":
            voice = FESTIVAL_VOICES[rows[0][2].split("-")[1]][0]
            script = [f"({'voice_' + voice})",
                      "(define (masr_say txt stretch f0 out)",
                      "  (Parameter.set 'Duration_Stretch stretch)",
                      "  (if (> f0 0) (set! int_lr_params (list (list 'target_f0_mean f0)"
                      " '(target_f0_std 14) '(model_f0_mean 170) '(model_f0_std 34))))",
                      "  (utt.save.wave (utt.synth (eval (list 'Utterance 'Text txt))) out 'riff))"]
            for row in rows:
                utt_id, _, _, speed, pitch, text = row[:6]
                script.append('(masr_say "{}" {:.4f} {} "{}")'.format(
                    text.lower(), 100.0 / int(speed), int(pitch), raws[utt_id]))
            path = os.path.join(work, "say.scm")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(script) + "\n")
            run_cmd(FESTIVAL + ["-b", path], rows[0][0])
        for row in rows:
            if not os.path.exists(raws[row[0]]) or os.path.getsize(raws[row[0]]) <= 44:
                raise RuntimeError(f"{row[0]}: {engine} wrote no audio")
            final = os.path.join(out_dir, "wav", row[1], row[0] + ".wav")
            postprocess(row, raws[row[0]], work, final)
        return len(rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)


TOOLS, TOOL_ENV, FESTIVAL = {}, {}, []


def init_worker(tools, env, festival):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    TOOLS.update(tools)
    TOOL_ENV.update(env)
    FESTIVAL[:] = festival


def read_plan(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def synth(args):
    rows = read_plan(args.plan)
    engines = {r[6] if len(r) > 6 else "classic" for r in rows}
    conditions = {c.split("=")[0] for r in rows if len(r) > 7 for c in r[7].split(";")}
    needed = ["sox"]
    needed += ["espeak-ng"] if engines & {"classic", "espeak"} else []
    needed += ["festival"] if "festival" in engines else []
    needed += ["flite"] if "flite" in engines else []
    needed += ["opusenc", "opusdec"] if "opus" in conditions else []
    needed += ["toast", "untoast"] if "gsm" in conditions else []
    need_tools(needed)
    tools = {name: tool(name) for name in needed}
    festival = festival_cmd() if "festival" in engines else []
    for split in {r[1] for r in rows}:
        os.makedirs(os.path.join(args.out, "wav", split), exist_ok=True)
    todo = [r for r in rows if not os.path.exists(os.path.join(args.out, "wav", r[1], r[0] + ".wav"))]
    # work items: festival rows grouped by voice (one festival process per item: its start-up
    # costs more than a sentence), the others in small groups for even load
    groups = {}
    for r in todo:
        engine = r[6] if len(r) > 6 else "classic"
        groups.setdefault((engine, r[2].split("-")[1] if engine == "festival" else ""), []).append(r)
    # this run's own scratch folder: an eval set and a training corpus may be made into one DIR at once
    tmp_dir = tempfile.mkdtemp(prefix=".synth-", dir=args.out)
    tasks = []
    for key, items in groups.items():
        if key[0] == "festival":  # up to 24 sentences per festival process
            size = max(1, min(24, -(-len(items) // args.jobs)))
        else:  # about four items per job, at most 8 sentences each
            size = max(1, min(8, len(items) // (4 * args.jobs)))
        tasks += [(args.out, tmp_dir, items[k:k + size]) for k in range(0, len(items), size)]
    tasks.sort(key=lambda t: len(t[2][0]) < 7 or t[2][0][6] != "festival")  # the slow ones first
    start = time.time()
    print(f"make_synth_corpus: {len(rows)} utterances ({len(rows) - len(todo)} already there), "
          f"{args.jobs} jobs, into {args.out}", file=sys.stderr)
    done, last = len(rows) - len(todo), time.time()
    if tasks:
        with multiprocessing.Pool(args.jobs, init_worker, (tools, tool_env(), festival)) as pool:
            try:
                for n in pool.imap_unordered(synth_chunk, tasks):
                    done += n
                    if time.time() - last >= 10:
                        last = time.time()
                        print(f"make_synth_corpus: {done}/{len(rows)} wavs ({last - start:.0f} s)",
                              file=sys.stderr)
            except Exception as e:  # any worker error ends the run, with its message
                pool.terminate()
                shutil.rmtree(tmp_dir, ignore_errors=True)
                fail(f"synthesis failed (rerun to resume): {e}", 1)
    shutil.rmtree(tmp_dir, ignore_errors=True)
    elapsed = time.time() - start
    print(f"make_synth_corpus: synthesized {len(todo)} utterances in {elapsed:.0f} s"
          + (f" ({len(todo) / elapsed:.1f} utterances/s)" if todo and elapsed > 0 else ""),
          file=sys.stderr)

# ---------------------------------------------------------------- CSVs and LM text ------------------


def write_csvs(args):
    plan_rows = read_plan(args.plan)
    extended = any(len(r) > 6 for r in plan_rows)
    splits = ["eval"] if plan_rows and plan_rows[0][1] == "eval" else ["train", "valid", "test"]
    rows = {s: [] for s in splits}
    for r in plan_rows:
        utt_id, split, speaker, text = r[0], r[1], r[2], r[5]
        path = os.path.abspath(os.path.join(args.wav_dir, split, utt_id + ".wav"))
        with wave.open(path, "rb") as w:
            duration = w.getnframes() / w.getframerate()
        rows[split].append([utt_id, str(duration), path, speaker, text] + ([r[7]] if extended else []))
    header = ["ID", "duration", "wav", "spk_id", "wrd"] + (["condition"] if extended else [])
    for split, items in rows.items():
        with open(os.path.join(args.out, split + ".csv"), "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(items)
        hours = sum(float(r[1]) for r in items) / 3600
        print(f"synth: {split}.csv: {len(items)} utterances, {hours:.3f} h", file=sys.stderr)


def held_out_sentences(data):
    held_out = set()
    for split in ("valid", "test", "eval"):
        path = os.path.join(data, split + ".csv")
        if os.path.exists(path):
            with open(path, newline="", encoding="utf-8") as f:
                held_out.update(" ".join(row["wrd"].split()) for row in csv.DictReader(f))
    return held_out


def write_lm_text(args):
    """lm_train.txt / lm_valid.txt (or one --out-file): the pool without the held-out sentences of
    valid.csv, test.csv and eval.csv (zero overlap, checked)."""
    held_out = held_out_sentences(args.data)
    sources = parse_text_sources(args.text, False)
    pool = sentence_pool(args.min_words, args.max_words, args.max_chars, sources)
    kept = [s for s in pool if s not in held_out]
    rng = random.Random(args.seed)
    rng.shuffle(kept)
    overlap = held_out.intersection(kept)
    if overlap:
        sys.exit(f"synth: lmtext: {len(overlap)} held-out sentences in the LM text, e.g. "
                 f"{next(iter(overlap))!r}")
    if args.out_file:
        parts = {args.out_file: kept}
    else:
        n_valid = max(1, round(len(kept) * args.valid_share))
        parts = {os.path.join(args.out, "lm_valid.txt"): kept[:n_valid],
                 os.path.join(args.out, "lm_train.txt"): kept[n_valid:]}
    for path, sentences in parts.items():
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.writelines(s + "\n" for s in sentences)
        os.replace(path + ".tmp", path)
    print(f"synth: lmtext ({','.join(sources)}): {len(pool)} pool sentences, "
          f"{len(pool) - len(kept)} removed (in valid/test/eval CSVs, {len(held_out)} held-out "
          f"sentences), " + ", ".join(f"{os.path.basename(p)} {len(s)}" for p, s in parts.items())
          + "; overlap with held-out: 0", file=sys.stderr)


def print_pool(args):
    counts = {}
    sources = parse_text_sources(args.text, args.eval)
    pool = sentence_pool(args.min_words, args.max_words, args.max_chars, sources,
                         args.manpage_limit, counts)
    sys.stdout.writelines(s + "\n" for s in pool)
    print(f"synth: pool: {len(pool)} distinct sentences: "
          + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)


def add_text_limits(p):
    p.add_argument("--min-words", type=int, default=3)
    p.add_argument("--max-words", type=int, default=30)
    p.add_argument("--max-chars", type=int, default=200)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("plan")
    pp.add_argument("--seed", type=int, default=1234)
    pp.add_argument("--utterances", type=int, default=100)
    pp.add_argument("--hours", type=float, default=None)
    add_text_limits(pp)
    pp.add_argument("--valid-share", type=float, default=0.05)
    pp.add_argument("--test-share", type=float, default=0.05)
    pp.add_argument("--engines", default=None, help="espeak,festival,flite[:weight] or all")
    pp.add_argument("--voices", default=None, help="ENGINE:VOICE,... (espeak:en-us, flite:kal16)")
    pp.add_argument("--conditions", default=None, help=f"{','.join(CONDITIONS)}[:prob], all, none")
    pp.add_argument("--condition-prob", type=float, default=0.3)
    pp.add_argument("--text", default=None, help=f"{','.join(TEXT_SOURCES)} or all")
    pp.add_argument("--eval", action="store_true", help="reserved voices and text; eval split only")
    pp.add_argument("--text-offset", type=int, default=0,
                    help="extended training corpora: the training split's sentences start this far "
                         "into its pool (valid/test unchanged; training IDs carry -oN)")
    ps = sub.add_parser("synth")
    ps.add_argument("--plan", required=True)
    ps.add_argument("--out", required=True)
    ps.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    pc = sub.add_parser("csv")
    pc.add_argument("--plan", required=True)
    pc.add_argument("--wav-dir", required=True)
    pc.add_argument("--out", required=True)
    pl = sub.add_parser("lmtext")
    pl.add_argument("--data", required=True, help="the corpus folder (valid.csv, test.csv)")
    pl.add_argument("--out", help="folder for lm_train.txt and lm_valid.txt")
    pl.add_argument("--out-file", help="instead of --out: one file with every kept sentence")
    pl.add_argument("--text", default="fortunes", help=f"{','.join(TEXT_SOURCES)} or all")
    pl.add_argument("--seed", type=int, default=1234)
    pl.add_argument("--valid-share", type=float, default=0.02)
    add_text_limits(pl)
    po = sub.add_parser("pool")
    po.add_argument("--text", default="all")
    po.add_argument("--eval", action="store_true")
    po.add_argument("--manpage-limit", type=int, default=20000)
    add_text_limits(po)
    args = p.parse_args()
    if args.command == "lmtext" and not (args.out or args.out_file):
        p.error("lmtext needs --out or --out-file")
    {"plan": plan, "synth": synth, "csv": write_csvs, "lmtext": write_lm_text,
     "pool": print_pool}[args.command](args)


if __name__ == "__main__":
    main()

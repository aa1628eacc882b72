#!/usr/bin/python3
# fuzz/make_seeds.py
# Writes the seed inputs of each fuzz target into fuzz/corpus/<target>/ (the fuzzers add what they
# find next to them). Needs Debian's python3 with torch (for the model file's state section).
import io
import os
import shutil
import struct
import subprocess
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    with open(os.path.join(CORPUS, target, "seed_" + name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def hparams_seeds():
    for folder in ("tests/fixtures/hparams", "hparams/CTC", "hparams/LM"):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if name.endswith(".yaml") and "large" not in name:
                with open(os.path.join(ROOT, folder, name), "rb") as f:
                    put("hparams", name, f.read())
    put("hparams", "refs.yaml", "a: 3\nb: !ref <a> * 2 + 1\nc: !ref <b> // 0\nd: [!ref <a>, {x: 1}]\n"
        "e: !new:torch.nn.Linear {in_features: !ref <a>, out_features: 2}\n\0b: 5\n")


def arpa_seeds():
    put("arpa", "bigram.arpa", "\\data\\\nngram 1=4\nngram 2=2\n\n\\1-grams:\n-1.0\t<s>\t-0.5\n"
        "-0.5 a -0.3\n-0.7 b\n-1.2 </s>\n\n\\2-grams:\n-0.2 <s> a\n-0.4 a b\n\n\\end\\\n")
    put("arpa", "trigram.arpa", "\\data\\\nngram 1=3\nngram 2=1\nngram 3=1\n\n\\1-grams:\n"
        "-1 <unk>\n-0.5 <s> -0.2\n-0.3 x -0.1\n\n\\2-grams:\n-0.2 <s> x -0.05\n\n\\3-grams:\n"
        "-0.1 <s> x x\n\n\\end\\\n")


def manifest_seeds():
    put("manifest", "csv", "\0ID,duration,wav,spk_id,wrd,extra\nu1,1.5,$data_root/a.wav,s1,HELLO,x\n"
        'u2, 2.0,"b,c.wav",s2,"SAY ""HI""\nTHERE",\n')
    put("manifest", "list", "\1# comment\n/data/a.wav\n\nrel/b.flac\n")
    put("manifest", "kaldi", "\2u1 /a.wav\nu2 /b.wav\n\0u1 HELLO\nu2 WORLD\n\0u1 s1\nu2 s2\n\0u1 1.0\nu2 2\n")


def audio_seeds():
    import numpy as np
    tone = (0.5 * np.sin(np.arange(64) * 0.3)).astype(np.float32)
    tmp = os.path.join(CORPUS, ".tmp_audio")
    os.makedirs(tmp, exist_ok=True)
    raw = os.path.join(tmp, "tone.f32")
    tone.tofile(raw)
    for name, args in [("s16.wav", ["-b", "16", "-e", "signed"]), ("u8.wav", ["-b", "8", "-e", "unsigned"]),
                       ("f32.wav", ["-b", "32", "-e", "floating-point"]), ("s24.flac", ["-b", "24"]),
                       ("s16.aiff", ["-b", "16"]), ("s16.au", ["-b", "16"]), ("stereo.wav", ["-b", "16"])]:
        out = os.path.join(tmp, name)
        channels = "2" if name.startswith("stereo") else "1"
        subprocess.run(["sox", "-t", "f32", "-r", "16000", "-c", channels, raw] + args + [out], check=True)
        with open(out, "rb") as f:
            put("audio", name, f.read())
    # Ogg Opus (opus-tools): the reader decodes single-stream Opus itself (lib/audio/ogg_opus.h).
    opus = os.path.join(tmp, "stereo.opus")
    subprocess.run(["opusenc", "--quiet", os.path.join(tmp, "stereo.wav"), opus], check=True)
    with open(opus, "rb") as f:
        put("audio", "stereo.opus", f.read())
    shutil.rmtree(tmp)


def checkpoint_seeds():
    import torch
    state = io.BytesIO()
    torch.save({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "n": torch.tensor([7])}, state)
    sections = [(b"model_type", b"ctc"), (b"hparams.yaml", b"d_model: 4\n"), (b"state", state.getvalue())]
    body = b"MASRMODL" + struct.pack("<II", 1, len(sections))
    for name, data in sections:
        body += struct.pack("<I", len(name)) + name + struct.pack("<Q", len(data)) + data
    put("checkpoint", "model.masr", body + struct.pack("<I", zlib.crc32(body)) + b"MASR_END")


if __name__ == "__main__":
    targets = sys.argv[1:] or ["hparams", "arpa", "manifest", "audio", "checkpoint"]
    for target in targets:
        globals()[target + "_seeds"]()

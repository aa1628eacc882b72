#!/usr/bin/python3
"""Parity fixtures written by SpeechBrain's current code (branch main at the commit named in
tests/fixtures/speechbrain/SOURCE.md), for the model kinds SpeechBrain added after v1.0.0 or that
Mamba-ASR's files do not use: the Conformer with RoPE attention, the Transformer with the residual
convolution front end, the Branchformer (S2S and CTC), and the CTC Conformer with its waveform
augmentation. Same layout as make_upstream_fixtures.py (tests/fixtures/upstream/<name>/:
model.ckpt, normalizer.ckpt, expected.pt, overrides.json), read by
tests/models/test_upstream_parity.cpp.

Each model is built from SpeechBrain's own hparams file (tests/fixtures/speechbrain/main/...),
shrunk by the overrides below, every parameter moved off its initial value; expected.pt holds two
random waveforms and the upstream outputs for each alone: CTC log-probabilities and, for S2S,
decoder log-probabilities for a fixed prefix.

    git -C SPEECHBRAIN_GIT archive <commit> speechbrain | tar -x -C /tmp/sb
    PYTHONPATH=/tmp/sb:<dir with hyperpyyaml/ and ruamel/>:tests/models \\
        /usr/bin/python3 tests/models/make_speechbrain_fixtures.py tests/fixtures/upstream
"""
import json
import os
import sys

import torch

import speechbrain_main

speechbrain_main.import_speechbrain()

MAIN = "tests/fixtures/speechbrain/main/ASR"
S2S = {"d_model": 32, "nhead": 4, "d_ffn": 64, "num_encoder_layers": 2, "num_decoder_layers": 1,
       "output_neurons": 48}
# Samples of each waveform: the Branchformer's gating convolution (kernel 31) reflects 15 frames
# at each end, so every utterance needs more than 15 encoder frames (> 0.6 s).
SAMPLES = (20800, 14400)
PREFIX = [1, 5, 17, 28, 7]

# name, hparams file, overrides (the C++ test applies them too), kind
FAMILIES = [
    ("sb_conformer_rope_s2s", f"{MAIN}/transformer/hparams/conformer_large.yaml", S2S, "s2s"),
    ("sb_transformer_residual_s2s", f"{MAIN}/transformer/hparams/transformer.yaml", S2S, "s2s"),
    ("sb_branchformer_s2s", f"{MAIN}/transformer/hparams/branchformer_large.yaml",
     {"d_model": 32, "nhead": 4, "csgu_linear_units": 96, "num_encoder_layers": 2,
      "num_decoder_layers": 1, "output_neurons": 48, "d_ffn": 64}, "s2s"),
    ("sb_conformer_ctc", f"{MAIN}/CTC/hparams/conformer_large.yaml",
     {"d_model": 32, "nhead": 4, "d_ffn": 64, "num_encoder_layers": 2}, "ctc"),
    ("sb_branchformer_ctc", f"{MAIN}/CTC/hparams/branchformer_large.yaml",
     {"d_model": 32, "nhead": 4, "csgu_linear_units": 96, "num_encoder_layers": 2}, "ctc"),
    # HyperMixing (its hypernetwork is d_ffn wide in the Conformer, 4 d_model in the Branchformer).
    ("sb_hyperconformer_s2s", f"{MAIN}/transformer/hparams/hyperconformer_8M.yaml", S2S, "s2s"),
    ("sb_hyperbranchformer_s2s", f"{MAIN}/transformer/hparams/hyperbranchformer_13M.yaml",
     {"d_model": 32, "nhead": 4, "csgu_linear_units": 96, "num_encoder_layers": 2,
      "num_decoder_layers": 1, "output_neurons": 48, "d_ffn": 64}, "s2s"),
]


def perturb(module, generator):
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))


def overrides_for(path, overrides):
    """Only the keys the file defines (d_ffn is absent from the Branchformer files)."""
    text = open(path).read()
    return {k: v for k, v in overrides.items() if f"\n{k}:" in text}


def main(out_root):
    generator = torch.Generator().manual_seed(2026)
    wavs = [0.1 * torch.randn(1, n, generator=generator) for n in SAMPLES]
    for name, hparams, overrides, kind in FAMILIES:
        overrides = overrides_for(hparams, overrides)
        hp = speechbrain_main.load_blocks(hparams, overrides, speechbrain_main.DROP)
        folder = os.path.join(out_root, name)
        os.makedirs(folder, exist_ok=True)
        expected = {"prefix": torch.tensor([PREFIX])}
        model, modules = hp["model"], hp["modules"]
        perturb(model, generator)
        model.eval()
        normalize = hp["normalize"]
        shortest = min(w.shape[1] for w in wavs)
        feats = hp["compute_features"](torch.cat([w[:, :shortest] for w in wavs]))
        normalize.train()
        normalize(feats, torch.ones(feats.shape[0]), epoch=1)
        normalize.eval()
        torch.save(model.state_dict(), os.path.join(folder, "model.ckpt"))
        torch.save(normalize._statistics_dict(), os.path.join(folder, "normalizer.ckpt"))
        with torch.no_grad():
            for i, wav in enumerate(wavs):
                expected[f"wav{i}"] = wav.clone()
                f = normalize(hp["compute_features"](wav), torch.ones(1), epoch=1)
                enc = modules["Transformer"].encode(modules["CNN"](f), torch.ones(1))
                expected[f"p_ctc{i}"] = torch.log_softmax(modules["ctc_lin"](enc), -1)
                if kind == "s2s":
                    dec, _ = modules["Transformer"].decode(expected["prefix"], enc)
                    expected[f"p_seq{i}"] = torch.log_softmax(modules["seq_lin"](dec), -1)
        torch.save(expected, os.path.join(folder, "expected.pt"))
        with open(os.path.join(folder, "overrides.json"), "w") as f:
            json.dump({"hparams": hparams, "overrides": overrides, "kind": kind}, f, indent=1)
        n = sum(p.numel() for p in model.parameters())
        print(f"{name}: {n:,} parameters -> {folder}")
    print("notes:", speechbrain_main.NOTES)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/upstream")

#!/usr/bin/python3
"""Parity fixtures written by the upstream code itself (Mamba-ASR's modules + SpeechBrain v1.0.0),
for tests/models/test_upstream_parity.cpp.

For each model family below, the upstream classes are built from our own hparams file (its
`!new:` names are upstream's: modules.TransformerASR.TransformerASR, speechbrain....), every
parameter is moved off its initial value (so a weight landing under the wrong name cannot go
unnoticed), and the script writes what the Python recipes write: a CKPT folder with `model.ckpt`
(the `model` ModuleList's state dict) and `normalizer.ckpt`, and for the language model the LM
recipe's `model.ckpt` (the TransformerLM's state dict). `expected.pt` holds two random waveforms and the upstream
outputs for each decoded alone (batch of one): CTC log-probabilities, decoder log-probabilities
for a fixed prefix, LM logits.

Run from the repository root, after ../shared/pyref/stage.sh has staged the upstream code in .ref/
(pass the einops repository too, for these CPU runs), with Debian's python3-torch:

    /usr/bin/python3 tests/models/make_upstream_fixtures.py tests/fixtures/upstream

The mamba_ssm CUDA extension is replaced by .ref/localstubs' pure-PyTorch selective scan (the
reference recurrence in float32), as ../shared/pyref does for CPU runs.
"""
import json
import os
import re
import sys

sys.path.insert(0, ".ref/scripts")
import refcompat  # noqa: E402

refcompat.setup_paths(local=True)
import torch  # noqa: E402

refcompat.compat()
refcompat.import_speechbrain()
from hyperpyyaml import load_hyperpyyaml  # noqa: E402

# Blocks that build objects the forward pass never touches (searchers, loggers, files).
DROP = {"tokenizer", "ctc_scorer", "transformerlm_scorer", "scorer_test_search",
        "scorer_valid_search", "valid_search", "test_search", "checkpointer", "epoch_counter",
        "train_logger", "error_rate_computer", "acc_computer", "pretrainer", "speed_perturb",
        "wandb_logger", "use_wandb", "resume"}

# name, hparams file, overrides (the C++ test applies them too), kind
FAMILIES = [
    ("conmamba_ctc", "hparams/CTC/conmamba_tiny.yaml", {"d_model": 32, "d_ffn": 64}, "ctc"),
    ("conmamba_s2s", "hparams/S2S/conmamba_tiny.yaml",
     {"d_model": 32, "d_ffn": 64, "num_decoder_layers": 1, "output_neurons": 48}, "s2s"),
    ("transformer_lm", "hparams/LM/transformer_tiny.yaml", {"d_model": 32}, "lm"),
]
PREFIX = [1, 5, 17, 28, 7]  # bos + four tokens (all models have at least 31)


def load(path, overrides):
    blocks, cur = [], None
    for line in open(path).read().splitlines(keepends=True):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):", line)
        if m:
            cur = [m.group(1), []]
            blocks.append(cur)
        if cur is None:
            blocks.append(["", [line]])
        else:
            cur[1].append(line)
    text = "".join("".join(b[1]) for b in blocks if b[0] not in DROP)
    return load_hyperpyyaml(text, overrides=dict(overrides, data_folder="/tmp/unused"))


def perturb(module, generator):
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))


def main(out_root):
    generator = torch.Generator().manual_seed(2024)
    wavs = [0.1 * torch.randn(1, n, generator=generator) for n in (20800, 14400)]
    for name, hparams, overrides, kind in FAMILIES:
        hp = load(hparams, overrides)
        folder = os.path.join(out_root, name)
        os.makedirs(folder, exist_ok=True)
        expected = {"prefix": torch.tensor([PREFIX])}
        if kind == "lm":
            lm_model = hp["model"]
            perturb(lm_model, generator)
            lm_model.eval()
            torch.save(lm_model.state_dict(), os.path.join(folder, "model.ckpt"))
            with torch.no_grad():
                expected["lm_logits"] = lm_model(expected["prefix"])
            n = sum(p.numel() for p in lm_model.parameters())
        else:
            model, modules = hp["model"], hp["modules"]
            perturb(model, generator)
            model.eval()
            normalize = hp["normalize"]
            # Global statistics from one training batch of random features, as after a first step.
            feats = hp["compute_features"](torch.cat([w[:, :14400] for w in wavs]))
            normalize.train()
            normalize(feats, torch.ones(feats.shape[0]), epoch=1)
            normalize.eval()
            torch.save(model.state_dict(), os.path.join(folder, "model.ckpt"))
            torch.save(normalize._statistics_dict(), os.path.join(folder, "normalizer.ckpt"))
            with torch.no_grad():
                for i, wav in enumerate(wavs):
                    expected[f"wav{i}"] = wav
                    f = normalize(hp["compute_features"](wav), torch.ones(1), epoch=1)
                    enc = modules["Transformer"].encode(modules["CNN"](f), torch.ones(1))
                    expected[f"p_ctc{i}"] = torch.log_softmax(modules["ctc_lin"](enc), -1)
                    if kind == "s2s":
                        dec, _ = modules["Transformer"].decode(expected["prefix"], enc)
                        expected[f"p_seq{i}"] = torch.log_softmax(modules["seq_lin"](dec), -1)
            n = sum(p.numel() for p in model.parameters())
        torch.save(expected, os.path.join(folder, "expected.pt"))
        with open(os.path.join(folder, "overrides.json"), "w") as f:
            json.dump({"hparams": hparams, "overrides": overrides, "kind": kind}, f, indent=1)
        print(f"{name}: {n:,} parameters -> {folder}")
    print("notes:", refcompat.NOTES)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/upstream")

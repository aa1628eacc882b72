#!/usr/bin/python3
"""Parity fixtures written by the upstream code itself (Mamba-ASR's modules + SpeechBrain v1.0.0),
for tests/models/test_upstream_parity.cpp.

For each model family below (ConMamba with a CTC head, a Transformer decoder or a Mamba decoder;
Conformer from Mamba-ASR's and from SpeechBrain's TransformerASR; a Transformer encoder; the
TransformerLM), the upstream classes are built from our own hparams file (its
`!new:` names are upstream's: modules.TransformerASR.TransformerASR, speechbrain....), every
parameter is moved off its initial value (so a weight landing under the wrong name cannot go
unnoticed), and the script writes what the Python recipes write: a CKPT folder with `model.ckpt`
(the `model` ModuleList's state dict) and `normalizer.ckpt`, and for the language model the LM
recipe's `model.ckpt` (the TransformerLM's state dict). The normalizer file takes the name the
recipe's checkpointer gives it (`normalizer` in Mamba-ASR's files, `normalize` in SpeechBrain's
conformer_small.yaml). `expected.pt` holds two random waveforms and the upstream
outputs for each decoded alone (batch of one): CTC log-probabilities, decoder log-probabilities
for a fixed prefix, LM logits. For the S2S families whose hparams file has a test search
(`ctc_weight_decode`, `test_search`'s temperature), `beam_search.pt` holds what SpeechBrain's
own S2STransformerBeamSearcher finds for each waveform alone at beam sizes BEAMS (CTC scored
on every token as the recipe's full CTCScorer, no LM, top-k = beam): per beam k and waveform i,
`beam{k}_tokens{i}` (k, L) int64 hypotheses best first (the tokens the searcher returns, i.e.
after its undo_padding, padded with -1), `beam{k}_scores{i}` (k) their scores, and the search
settings under `settings`. New files only: expected.pt and the checkpoints stay byte-identical.

Run from the repository root, after ../shared/pyref/stage.sh has staged the upstream code in .ref/
(pass the einops repository too, for these CPU runs), with Debian's python3-torch:

    /usr/bin/python3 tests/models/make_upstream_fixtures.py tests/fixtures/upstream

The mamba_ssm CUDA extension is replaced by .ref/localstubs' pure-PyTorch selective scan (the
reference recurrence in float32), as ../shared/pyref does for CPU runs. The Mamba decoder builds
mamba_ssm's unidirectional `Mamba` block (mamba_ssm/modules/mamba_simple.py), which .ref/ stages
only as a placeholder; stage the real file from state-spaces/mamba v1.1.1 (the release whose
selective_scan_interface.py Mamba-ASR vendors in modules/mamba/) next to it:

    mkdir -p .ref/mamba_ssm_v1 && git -C MAMBA_GIT_DIR archive v1.1.1 \
        mamba_ssm/modules/mamba_simple.py | tar -x -C .ref/mamba_ssm_v1 --strip-components=2

It runs on Mamba-ASR's copy of selective_scan_interface.py and the same stand-in kernels.
"""
import importlib.util
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


def install_mamba_ssm():
    """mamba_ssm as a package of two modules: ops.selective_scan_interface (Mamba-ASR's vendored
    copy) and modules.mamba_simple (state-spaces/mamba v1.1.1's file, unchanged)."""
    source = os.path.join(".ref", "mamba_ssm_v1", "mamba_simple.py")
    if not os.path.exists(source):
        sys.exit(f"{source} is missing: see this script's docstring for staging it")
    import types
    from modules.mamba import selective_scan_interface
    for name in ("mamba_ssm", "mamba_ssm.ops", "mamba_ssm.modules"):
        package = types.ModuleType(name)
        package.__path__ = []  # a package: its other submodules (triton) fail to import
        sys.modules[name] = package
    sys.modules["mamba_ssm.ops.selective_scan_interface"] = selective_scan_interface
    spec = importlib.util.spec_from_file_location("mamba_ssm.modules.mamba_simple", source)
    mamba_simple = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mamba_simple
    spec.loader.exec_module(mamba_simple)
    sys.modules["mamba_ssm"].Mamba = mamba_simple.Mamba
    refcompat.note("mamba_ssm.Mamba: state-spaces/mamba v1.1.1 mamba_simple.py on the stand-in kernels")


install_mamba_ssm()

# Blocks that build objects the forward pass never touches (searchers, loggers, files).
DROP = {"tokenizer", "ctc_scorer", "transformerlm_scorer", "scorer_test_search",
        "scorer_valid_search", "valid_search", "test_search", "checkpointer", "epoch_counter",
        "train_logger", "error_rate_computer", "acc_computer", "pretrainer", "speed_perturb",
        "wandb_logger", "use_wandb", "resume"}

# The full-size recipes' pretrained LM (d_model 768, 12 layers) is no part of the ASR checkpoint
# and slow to build; the tiny recipes' LMs stay (dropping them would change the random initial
# values of the modules built after them, and so the fixtures made before this rule).
DROP_LM = DROP | {"lm_model"}

# The families made from full-size recipes: shrunk further (d_model 16, 0.6 s and 0.4 s of
# audio) so that each fixture stays near 0.5 MB; a third of that is the absolute position table
# `positional_encoding_decoder.pe` (max_length 2500 x d_model) that the state dict carries.
SMALL = {"d_model": 16, "d_ffn": 64, "num_encoder_layers": 2}
SMALL_S2S = dict(SMALL, num_decoder_layers=1, output_neurons=48)
SHORT = (9600, 6400)  # samples of each waveform kept

# name, hparams file, overrides (the C++ test applies them too), kind, samples per waveform
# (None: all). New families go last: the waveforms and perturbations come from one generator, so
# earlier fixtures stay unchanged.
FAMILIES = [
    ("conmamba_ctc", "hparams/CTC/conmamba_tiny.yaml", {"d_model": 32, "d_ffn": 64}, "ctc", None),
    ("conmamba_s2s", "hparams/S2S/conmamba_tiny.yaml",
     {"d_model": 32, "d_ffn": 64, "num_decoder_layers": 1, "output_neurons": 48}, "s2s", None),
    ("transformer_lm", "hparams/LM/transformer_tiny.yaml", {"d_model": 32}, "lm", None),
    # ConMamba encoder + Mamba decoder (Mamba-ASR's MambaDecoder on mamba_ssm.Mamba).
    ("conmambamamba_s2s", "hparams/S2S/conmambamamba_small.yaml", SMALL_S2S, "s2s", SHORT),
    # Conformer encoder + Transformer decoder: SpeechBrain's own TransformerASR and Conformer.
    ("conformer_s2s", "hparams/S2S/conformer_small.yaml", SMALL_S2S, "s2s", SHORT),
    # Conformer encoder with a CTC head: Mamba-ASR's TransformerASR and modules/Conformer.py.
    ("conformer_ctc", "hparams/CTC/conformer_large.yaml", SMALL, "ctc", SHORT),
    # Transformer encoder + Transformer decoder (SpeechBrain's TransformerASR, regularMHA); the
    # hparams file is already small.
    ("transformer_s2s", "tests/fixtures/upstream/transformer_s2s.yaml", {}, "s2s", SHORT),
]
PREFIX = [1, 5, 17, 28, 7]  # bos + four tokens (all models have at least 31)
BEAMS = (2, 3, 4)  # beam sizes of the recorded SpeechBrain searches


def test_search_temperature(path):
    """The decoder temperature of the hparams file's test_search (None if it has none)."""
    m = re.search(r"^test_search:.*?^ +temperature: ([0-9.]+)\s*$", open(path).read(), re.M | re.S)
    return float(m.group(1)) if m else None


def record_beam_search(hp, hparams, modules, encoded, folder):
    """SpeechBrain's S2STransformerBeamSearcher on each encoded waveform alone (see docstring)."""
    temperature = test_search_temperature(hparams)
    if temperature is None or "ctc_weight_decode" not in hp:
        return None
    from speechbrain.decoders import S2STransformerBeamSearcher
    from speechbrain.decoders.scorer import CTCScorer, ScorerBuilder
    settings = {"ctc_weight": float(hp["ctc_weight_decode"]), "temperature": temperature,
                "min_decode_ratio": float(hp["min_decode_ratio"]),
                "max_decode_ratio": float(hp["max_decode_ratio"]),
                "bos": hp["bos_index"], "eos": hp["eos_index"], "blank": hp["blank_index"]}
    out = {"settings": settings, "beams": torch.tensor(BEAMS)}
    for k in BEAMS:
        ctc = CTCScorer(ctc_fc=modules["ctc_lin"], blank_index=settings["blank"],
                        eos_index=settings["eos"])
        searcher = S2STransformerBeamSearcher(
            modules=[modules["Transformer"], modules["seq_lin"]], temperature=temperature,
            bos_index=settings["bos"], eos_index=settings["eos"],
            min_decode_ratio=settings["min_decode_ratio"],
            max_decode_ratio=settings["max_decode_ratio"], beam_size=k,
            using_eos_threshold=False, length_normalization=True, return_topk=True, topk=k,
            scorer=ScorerBuilder(full_scorers=[ctc], weights={"ctc": settings["ctc_weight"]}))
        for i, enc in enumerate(encoded):
            with torch.no_grad():
                hyps, lengths, scores, _ = searcher(enc, torch.ones(1))
            # The searcher's own undo_padding: round(length * L) tokens of each hypothesis.
            counts = torch.round(lengths[0] * hyps.shape[-1]).long()
            tokens = torch.full((k, int(counts.max())), -1, dtype=torch.long)
            for j in range(k):
                tokens[j, :counts[j]] = hyps[0, j, :counts[j]]
            out[f"beam{k}_tokens{i}"] = tokens
            out[f"beam{k}_scores{i}"] = scores[0].clone()
    torch.save(out, os.path.join(folder, "beam_search.pt"))
    return settings


def normalizer_name(path):
    """The name the recipe's checkpointer saves InputNormalization under."""
    m = re.search(r"^ +(\w+): !ref <normalize>\s*$", open(path).read().split("checkpointer:")[-1],
                  re.M)
    return m.group(1) if m else "normalizer"


def load(path, overrides, drop):
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
    text = "".join("".join(b[1]) for b in blocks if b[0] not in drop)
    return load_hyperpyyaml(text, overrides=dict(overrides, data_folder="/tmp/unused"))


def perturb(module, generator):
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))


def main(out_root):
    generator = torch.Generator().manual_seed(2024)
    all_wavs = [0.1 * torch.randn(1, n, generator=generator) for n in (20800, 14400)]
    for name, hparams, overrides, kind, samples in FAMILIES:
        wavs = all_wavs if samples is None else [w[:, :n] for w, n in zip(all_wavs, samples)]
        hp = load(hparams, overrides, DROP if "tiny" in hparams else DROP_LM)  # see DROP_LM
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
            shortest = min(w.shape[1] for w in wavs)
            feats = hp["compute_features"](torch.cat([w[:, :shortest] for w in wavs]))
            normalize.train()
            normalize(feats, torch.ones(feats.shape[0]), epoch=1)
            normalize.eval()
            torch.save(model.state_dict(), os.path.join(folder, "model.ckpt"))
            torch.save(normalize._statistics_dict(),
                       os.path.join(folder, normalizer_name(hparams) + ".ckpt"))
            encoded = []
            with torch.no_grad():
                for i, wav in enumerate(wavs):
                    expected[f"wav{i}"] = wav.clone()  # not a view of the longer waveform
                    f = normalize(hp["compute_features"](wav), torch.ones(1), epoch=1)
                    enc = modules["Transformer"].encode(modules["CNN"](f), torch.ones(1))
                    encoded.append(enc)
                    expected[f"p_ctc{i}"] = torch.log_softmax(modules["ctc_lin"](enc), -1)
                    if kind == "s2s":
                        dec, _ = modules["Transformer"].decode(expected["prefix"], enc)
                        expected[f"p_seq{i}"] = torch.log_softmax(modules["seq_lin"](dec), -1)
            n = sum(p.numel() for p in model.parameters())
            if kind == "s2s" and record_beam_search(hp, hparams, modules, encoded, folder):
                print(f"{name}: SpeechBrain beam search (beams {BEAMS}) -> beam_search.pt")
        torch.save(expected, os.path.join(folder, "expected.pt"))
        with open(os.path.join(folder, "overrides.json"), "w") as f:
            json.dump({"hparams": hparams, "overrides": overrides, "kind": kind}, f, indent=1)
        print(f"{name}: {n:,} parameters -> {folder}")
    print("notes:", refcompat.NOTES)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/upstream")

# tests/models/speechbrain_checkpoint.py
# Writes a SpeechBrain/Mamba-ASR style CKPT folder for a tiny CTC ConMamba, with the upstream
# state-dict key names and shapes written out by hand from the upstream module definitions
# (not from mamba-asr), plus pure-torch reference outputs for the test to compare against.
#
# Run with Debian's /usr/bin/python3 (torch 1.13):
#   speechbrain_checkpoint.py OUT_DIR D_MODEL D_FFN LAYERS D_STATE VOCAB
# OUT_DIR/ckpt/{model.ckpt,normalizer.ckpt}: what SpeechBrain's Checkpointer saves
# OUT_DIR/expected/<our name>.npy: every tensor under the name mamba-asr should give it
# OUT_DIR/{feats,cnn_out,enc_in,ctc_out}.npy: a CNN front end and a CTC head in plain torch
import collections
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

out, d, d_ffn, layers, d_state, vocab = sys.argv[1], *map(int, sys.argv[2:7])
d_inner, d_conv, kernel = 2 * d, 4, 31
dt_rank = math.ceil(d / 16)
g = torch.Generator().manual_seed(1234)


def rand(*shape):
    return torch.randn(*shape, generator=g) * 0.2


state = collections.OrderedDict()
# 0: speechbrain.lobes.models.convolution.ConvolutionFrontEnd (2 blocks, 1 layer each;
# Conv2d wrapper `.conv`, LayerNorm(input_shape[2:]) over (F, C) wrapper `.norm`)
for b, (cin, cout, freq) in enumerate([(1, 64, 40), (64, 32, 20)]):
    p = f"0.convblock_{b}.convs."
    state[p + "conv_0.conv.weight"] = rand(cout, cin, 3, 3)
    state[p + "conv_0.conv.bias"] = rand(cout)
    state[p + "norm_0.norm.weight"] = 1 + rand(freq, cout)
    state[p + "norm_0.norm.bias"] = rand(freq, cout)
# 1: TransformerASR: custom_src_module = ModuleList(Linear(640, d), Dropout)
state["1.custom_src_module.layers.0.w.weight"] = rand(d, 640)
state["1.custom_src_module.layers.0.w.bias"] = rand(d)
# RelPosMHAXL: positional_encoding is RelPosEncXL (inv_freq, a buffer in some SpeechBrain
# versions) and positional_encoding_decoder an absolute PositionalEncoding (buffer pe).
state["1.positional_encoding.inv_freq"] = torch.exp(
    torch.arange(0, d, 2, dtype=torch.float32) * -(math.log(10000.0) / d))
pos = torch.arange(0, 2500).float().unsqueeze(1)
pe = torch.zeros(2500, d)
pe[:, 0::2] = torch.sin(pos * state["1.positional_encoding.inv_freq"])
pe[:, 1::2] = torch.cos(pos * state["1.positional_encoding.inv_freq"])
state["1.positional_encoding_decoder.pe"] = pe.unsqueeze(0)
for i in range(layers):
    p = f"1.encoder.layers.{i}."
    # BiMamba v2 (mamba_ssm naming, `_b` for the backward direction)
    state[p + "mamba.A_log"] = rand(d_inner, d_state)
    state[p + "mamba.D"] = rand(d_inner)
    state[p + "mamba.in_proj.weight"] = rand(2 * d_inner, d)
    for s in ["", "_b"]:
        state[p + f"mamba.conv1d{s}.weight"] = rand(d_inner, 1, d_conv)
        state[p + f"mamba.conv1d{s}.bias"] = rand(d_inner)
        state[p + f"mamba.x_proj{s}.weight"] = rand(dt_rank + 2 * d_state, d_inner)
        state[p + f"mamba.dt_proj{s}.weight"] = rand(d_inner, dt_rank)
        state[p + f"mamba.dt_proj{s}.bias"] = rand(d_inner)
    state[p + "mamba.A_b_log"] = rand(d_inner, d_state)
    state[p + "mamba.D_b"] = rand(d_inner)
    state[p + "mamba.out_proj.weight"] = rand(d, d_inner)
    # ConvolutionModule: layer_norm, bottleneck (Conv1d 1x1, GLU), depthwise conv, after_conv
    # (LayerNorm, activation, Linear, Dropout)
    c = p + "convolution_module."
    state[c + "layer_norm.weight"] = 1 + rand(d)
    state[c + "layer_norm.bias"] = rand(d)
    state[c + "bottleneck.0.weight"] = rand(2 * d, d, 1)
    state[c + "bottleneck.0.bias"] = rand(2 * d)
    state[c + "conv.weight"] = rand(d, 1, kernel)
    state[c + "conv.bias"] = rand(d)
    state[c + "after_conv.0.weight"] = 1 + rand(d)
    state[c + "after_conv.0.bias"] = rand(d)
    state[c + "after_conv.2.weight"] = rand(d, d)
    state[c + "after_conv.2.bias"] = rand(d)
    # macaron FFNs: Sequential(LayerNorm, PositionalwiseFeedForward(ffn = Linear, act, Dropout,
    # Linear), Dropout)
    for f in ["ffn_module1", "ffn_module2"]:
        state[p + f + ".0.weight"] = 1 + rand(d)
        state[p + f + ".0.bias"] = rand(d)
        state[p + f + ".1.ffn.0.weight"] = rand(d_ffn, d)
        state[p + f + ".1.ffn.0.bias"] = rand(d_ffn)
        state[p + f + ".1.ffn.3.weight"] = rand(d, d_ffn)
        state[p + f + ".1.ffn.3.bias"] = rand(d)
    for n in ["norm1", "norm2"]:
        state[p + n + ".norm.weight"] = 1 + rand(d)
        state[p + n + ".norm.bias"] = rand(d)
state["1.encoder.norm.norm.weight"] = 1 + rand(d)
state["1.encoder.norm.norm.bias"] = rand(d)
# 2: ctc_lin (speechbrain.nnet.linear.Linear: `.w`); CTC recipes have no seq_lin
state["2.w.weight"] = rand(vocab, d)
state["2.w.bias"] = rand(vocab)

os.makedirs(f"{out}/ckpt", exist_ok=True)
os.makedirs(f"{out}/expected", exist_ok=True)
torch.save(state, f"{out}/ckpt/model.ckpt")
normalizer = {"count": 7, "glob_mean": rand(80), "glob_std": 1 + rand(80).abs(),
              "spk_dict_mean": {}, "spk_dict_std": {}, "spk_dict_count": {}}
torch.save(normalizer, f"{out}/ckpt/normalizer.ckpt")

prefix = {"0": "CNN", "1": "Transformer", "2": "ctc_lin"}
for key, tensor in state.items():
    if key.endswith("positional_encoding.inv_freq"):
        continue  # recomputed by mamba-asr, not stored
    head, rest = key.split(".", 1)
    np.save(f"{out}/expected/{prefix[head]}.{rest}.npy", tensor.numpy())
np.save(f"{out}/expected/normalize.count.npy", np.array(7, dtype=np.int64))
np.save(f"{out}/expected/normalize.glob_mean.npy", normalizer["glob_mean"].numpy())
np.save(f"{out}/expected/normalize.glob_std.npy", normalizer["glob_std"].numpy())

# The CNN front end (SpeechBrain semantics): per block, Conv2d on (B, C, F, T) (SpeechBrain's
# transpose(1, -1)) with reflect "same" padding of 1 and stride 2, LayerNorm over (F, C),
# LeakyReLU(0.01).
feats = torch.randn(2, 37, 80, generator=g)
x = feats.unsqueeze(-1)  # (B, T, F, C)
for b in range(2):
    p = f"0.convblock_{b}.convs."
    y = F.pad(x.transpose(1, -1), (1, 1, 1, 1), mode="reflect")  # (B, C, F, T)
    y = F.conv2d(y, state[p + "conv_0.conv.weight"], state[p + "conv_0.conv.bias"], stride=2)
    y = y.transpose(1, -1)  # (B, T, F, C)
    y = F.layer_norm(y, y.shape[2:], state[p + "norm_0.norm.weight"],
                     state[p + "norm_0.norm.bias"], eps=1e-5)
    x = F.leaky_relu(y, 0.01)
np.save(f"{out}/feats.npy", feats.numpy())
np.save(f"{out}/cnn_out.npy", x.contiguous().numpy())

enc = torch.randn(2, 5, d, generator=g)
ctc = F.log_softmax(F.linear(enc, state["2.w.weight"], state["2.w.bias"]), -1)
np.save(f"{out}/enc_in.npy", enc.numpy())
np.save(f"{out}/ctc_out.npy", ctc.numpy())
print(f"wrote {len(state)} tensors to {out}/ckpt")

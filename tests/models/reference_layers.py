# tests/models/reference_layers.py
# Independent PyTorch (Python) references for test_reference_layers.cpp: the bidirectional Mamba
# block as xi-j/Mamba-ASR computes it (flip the input, causal conv, sequential selective scan,
# flip back, average), SpeechBrain's RelPosMHAXL and its ConvolutionFrontEnd, written from their
# definitions with plain loops where that makes them obviously right.
# Usage: reference_layers.py IN.pt OUT.pt   (tensors in a dict, as torch::pickle_save writes)
import math
import sys

import torch
import torch.nn.functional as F


def selective_scan(u, delta, A, B, C, D, z, delta_bias):
    # u, delta, z: (d, T); A: (d, N); B, C: (N, T). Step by step over time.
    delta = F.softplus(delta + delta_bias[:, None])
    d, T = u.shape
    h = torch.zeros(d, A.shape[1], dtype=torch.float64)
    ys = []
    for t in range(T):
        h = torch.exp(delta[:, t, None] * A) * h + delta[:, t, None] * B[None, :, t] * u[:, t, None]
        ys.append((h * C[None, :, t]).sum(-1) + D * u[:, t])
    return torch.stack(ys, -1) * F.silu(z)


def mamba_direction(x, z, p, suffix, a_name, d_name):
    # x, z: (d_inner, T), already in the direction's time order.
    w, b = p["conv1d%s.weight" % suffix], p["conv1d%s.bias" % suffix]
    k = w.shape[-1]
    xp = F.pad(x, (k - 1, 0))
    conv = torch.stack([(xp[:, t:t + k] * w[:, 0, :]).sum(-1) for t in range(x.shape[1])], -1)
    u = F.silu(conv + b[:, None])
    x_dbl = p["x_proj%s.weight" % suffix] @ u
    N = p[a_name].shape[1]
    R = x_dbl.shape[0] - 2 * N
    delta = p["dt_proj%s.weight" % suffix] @ x_dbl[:R]
    A = -torch.exp(p[a_name])
    return selective_scan(u, delta, A, x_dbl[R:R + N], x_dbl[R + N:], p[d_name], z,
                          p["dt_proj%s.bias" % suffix])


def bimamba(h, p):
    # h: (T, d_model) one utterance.
    xz = p["in_proj.weight"] @ h.t()
    d_inner = xz.shape[0] // 2
    x, z = xz[:d_inner], xz[d_inner:]
    y = mamba_direction(x, z, p, "", "A_log", "D")
    y_b = mamba_direction(x.flip(-1), z.flip(-1), p, "_b", "A_b_log", "D_b").flip(-1)
    return (p["out_proj.weight"] @ (0.5 * y + 0.5 * y_b)).t()


def rel_pos_mha(x, p, nhead):
    # x: (T, d). Scores q.k + q.r(i-j) with learned biases u, v, scaled by 1/sqrt(d).
    T, d = x.shape
    hd = d // nhead
    qkv = (x @ p["in_proj_weight"].t()).view(T, nhead, 3 * hd)
    q, k, v = qkv[..., :hd], qkv[..., hd:2 * hd], qkv[..., 2 * hd:]
    inv_freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * -(math.log(10000.0) / d))
    def rel_embedding(r):  # relative position r = i - j (SpeechBrain: sine shared by +r and -r)
        a = abs(r) * inv_freq
        return torch.stack([torch.sin(a), torch.cos(a)], -1).reshape(d)
    bu = p["pos_bias_u"].reshape(nhead, hd)
    bv = p["pos_bias_v"].reshape(nhead, hd)
    out = torch.zeros(T, nhead, hd, dtype=torch.float64)
    for h in range(nhead):
        scores = torch.zeros(T, T, dtype=torch.float64)
        for i in range(T):
            for j in range(T):
                r = (p["linear_pos.weight"] @ rel_embedding(i - j)).view(nhead, hd)[h]
                scores[i, j] = ((q[i, h] + bu[h]) @ k[j, h] + (q[i, h] + bv[h]) @ r) / math.sqrt(d)
        out[:, h] = torch.softmax(scores, -1) @ v[:, h]
    return out.reshape(T, d) @ p["out_proj.weight"].t() + p["out_proj.bias"]


def frontend(feats, p, blocks):
    # feats: (T, F). Conv2d over (F, T) with reflect padding 1, LayerNorm over (F, C), LeakyReLU.
    x = feats.t()[None, None]  # (1, 1, F, T)
    for i in range(blocks):
        pre = "convblock_%d.convs." % i
        x = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), p[pre + "conv_0.conv.weight"],
                     p[pre + "conv_0.conv.bias"], stride=2)
        y = x[0].permute(2, 1, 0)  # (T, F, C)
        mean = y.mean(dim=(1, 2), keepdim=True)
        var = y.var(dim=(1, 2), unbiased=False, keepdim=True)
        y = (y - mean) / torch.sqrt(var + 1e-5) * p[pre + "norm_0.norm.weight"] + p[pre + "norm_0.norm.bias"]
        x = F.leaky_relu(y, 0.01).permute(2, 1, 0)[None]
    return x[0].permute(2, 1, 0)  # (T, F, C)


def main():
    data = torch.load(sys.argv[1])
    data = {k: v.double() for k, v in data.items()}
    def prefixed(prefix):
        return {k[len(prefix):]: v for k, v in data.items() if k.startswith(prefix)}
    mamba_p, mha_p, cnn_p = prefixed("mamba."), prefixed("mha."), prefixed("cnn.")
    lengths = data["mamba_lengths"].long().tolist()
    out = {}
    for b, n in enumerate(lengths):
        out["mamba_%d" % b] = bimamba(data["mamba_x"][b, :n], mamba_p).float()
    out["mha"] = rel_pos_mha(data["mha_x"][0], mha_p, int(data["mha_nhead"].item())).float()
    out["cnn"] = frontend(data["cnn_x"][0], cnn_p, 2).float()
    torch.save(out, sys.argv[2])


if __name__ == "__main__":
    main()

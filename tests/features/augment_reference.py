#!/usr/bin/python3
# tests/features/augment_reference.py
# Independent reference for test_augment.cpp: SpeechBrain v1.0's SpectrogramDrop and Warping draw
# order and formulas, written with PyTorch, seeded with torch.Generator(seed).
#   augment_reference.py drop IN OUT B T F seed len_low len_high count_low count_high dim
#   augment_reference.py warp IN OUT B T F seed window mode dim
#   augment_reference.py randamp|doclip IN OUT B T 1 seed low high   (waveforms: F = 1)
#   augment_reference.py dropbit IN OUT B T 1 seed int16|int8|float16
#   augment_reference.py pink IN OUT B T 1 seed alpha,alpha,... sample_rate   (IN: white noise)
import sys

import numpy as np
import torch


def drop(x, g, len_low, len_high, count_low, count_high, dim):
    batch, extent = x.shape[0], x.shape[dim]
    n = int(torch.randint(count_low, count_high + 1, (1,), generator=g))
    if n == 0:
        return x
    lengths = torch.randint(len_low, len_high, (batch, n), generator=g)
    pos = torch.randint(0, max(1, extent - int(lengths.max())), (batch, n), generator=g)
    d = torch.arange(extent).view(1, 1, -1)
    mask = ((pos.unsqueeze(2) <= d) & (d < (pos + lengths).unsqueeze(2))).any(dim=1)
    mask = mask.unsqueeze(2) if dim == 1 else mask.unsqueeze(1)
    return x.masked_fill(mask, x.mean())


def warp(x, g, window, mode, dim):
    if dim == 2:
        x = x.transpose(1, 2)
    y = x.unsqueeze(1).clone()
    length = y.shape[2]
    if length - window <= window:
        return x if dim == 1 else x.transpose(1, 2)
    c = int(torch.randint(window, length - window, (1,), generator=g))
    w = int(torch.randint(c - window, c + window, (1,), generator=g)) + 1
    f = y.shape[3]
    left = torch.nn.functional.interpolate(y[:, :, :c], (w, f), mode=mode, align_corners=True)
    right = torch.nn.functional.interpolate(y[:, :, c:], (length - w, f), mode=mode,
                                            align_corners=True)
    out = torch.cat([left, right], dim=2).squeeze(1)
    return out if dim == 1 else out.transpose(1, 2)


def randamp(w, g, low, high):
    # RandAmp: each row over its peak, times a gain drawn per row.
    peak = w.abs().max(dim=1, keepdim=True).values
    gain = (torch.rand(w.shape[0], generator=g) * (high - low) + low).unsqueeze(1)
    return w / peak * gain


def doclip(w, g, low, high):
    # DoClip: one level for the batch; rows over their peaks, clamped, scaled by peak / level.
    peak = w.abs().max(dim=1, keepdim=True).values
    level = torch.rand(1, generator=g)[0] * (high - low) + low
    return (w / peak).clamp(-level, level) * peak / level


def dropbit(w, target):
    # DropBitResolution with a fixed target.
    if target == "float16":
        return w.half().float()
    bits, dtype = {"int16": (16, torch.int16), "int8": (8, torch.int8)}[target]
    scale = (2 ** (bits - 1) - 1) / w.abs().max()
    return (w * scale).to(dtype).float() / scale


def pink(white, alpha, sample_rate):
    # pink_noise_like after its draws: the white noise's spectrum times 1/f^alpha.
    length = white.shape[1]
    f = torch.linspace(0, sample_rate / 2, int(length / 2))
    mask = 1 / torch.pow(f.unsqueeze(0), alpha.unsqueeze(1))
    mask[:, 0] = mask[:, 1]
    up = torch.flip(mask, dims=(1,))
    if length % 2:
        mask = torch.cat([mask, mask[:, int(length / 2) - 1].unsqueeze(1), up], dim=1)
    else:
        mask = torch.cat([mask, up], dim=1)
    return torch.fft.ifft(torch.fft.fft(white, dim=1) * mask, dim=1).real


def main():
    kind, src, dst = sys.argv[1:4]
    b, t, f, seed = (int(v) for v in sys.argv[4:8])
    x = torch.from_numpy(np.fromfile(src, dtype=np.float32).reshape(b, t, f))
    g = torch.Generator().manual_seed(seed)
    rest = sys.argv[8:]
    if kind == "drop":
        y = drop(x, g, *(int(v) for v in rest))
    elif kind in ("randamp", "doclip"):
        f = randamp if kind == "randamp" else doclip
        y = f(x[:, :, 0], g, float(rest[0]), float(rest[1])).unsqueeze(2)
    elif kind == "pink":
        alpha = torch.tensor([float(a) for a in rest[0].split(",")])
        y = pink(x[:, :, 0], alpha, float(rest[1])).unsqueeze(2)
    elif kind == "dropbit":
        y = dropbit(x[:, :, 0], rest[0]).unsqueeze(2)
    else:
        y = warp(x, g, int(rest[0]), rest[1], int(rest[2]))
    y.contiguous().numpy().astype(np.float32).tofile(dst)


if __name__ == "__main__":
    main()

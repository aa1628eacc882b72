#!/usr/bin/python3
# tests/features/fbank_reference.py
# Independent references for tests/features/test_fbank.cpp: SpeechBrain's Fbank evaluated from
# its formulas in float64 NumPy (docs/features.md), the same through torch.stft in float32 (what
# SpeechBrain runs), and torchaudio.compliance.kaldi.fbank.
#
# Usage: fbank_reference.py JOBS  where each line of JOBS is
#   sb    IN.npy OUT.npy sample_rate n_fft win_ms hop_ms n_mels
#   sbtorch IN.npy OUT.npy sample_rate n_fft win_ms hop_ms n_mels
#   kaldi IN.npy OUT.npy sample_rate frame_ms shift_ms bins snip_edges(0/1) use_energy(0/1)
import sys

import numpy as np
import torch
import torchaudio.compliance.kaldi as kaldi


def sb_fbank_numpy(x, sr, n_fft, win_ms, hop_ms, n_mels):
    win = int(round(sr / 1000.0 * win_ms))
    hop = int(round(sr / 1000.0 * hop_ms))
    n = np.arange(win)
    window = np.zeros(n_fft)
    left = (n_fft - win) // 2
    window[left:left + win] = 0.54 - 0.46 * np.cos(2 * np.pi * n / win)  # periodic Hamming
    padded = np.concatenate([np.zeros(n_fft // 2), x, np.zeros(n_fft // 2)])
    frames = 1 + len(x) // hop
    idx = np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]
    spec = np.fft.rfft(padded[idx] * window, n=n_fft, axis=1)
    power = spec.real ** 2 + spec.imag ** 2
    to_mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)
    mel = np.linspace(to_mel(0.0), to_mel(sr / 2.0), n_mels + 2)
    hz = 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    band = (hz[1:] - hz[:-1])[:-1]
    centre = hz[1:-1]
    freqs = np.linspace(0, sr // 2, n_fft // 2 + 1)
    slope = (freqs[:, None] - centre[None, :]) / band[None, :]
    fb = np.maximum(0.0, np.minimum(1.0 + slope, 1.0 - slope))
    db = 10.0 * np.log10(np.maximum(power @ fb, 1e-10))
    return np.maximum(db, db.max() - 80.0).astype(np.float32)


def sb_fbank_torch(x, sr, n_fft, win_ms, hop_ms, n_mels):
    win = int(round(sr / 1000.0 * win_ms))
    hop = int(round(sr / 1000.0 * hop_ms))
    wav = torch.from_numpy(x.astype(np.float32))[None]
    stft = torch.stft(wav, n_fft, hop, win, torch.hamming_window(win), center=True,
                      pad_mode="constant", normalized=False, onesided=True, return_complex=True)
    power = torch.view_as_real(stft).pow(2).sum(-1).transpose(1, 2)  # (1, frames, bins)
    to_mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)
    mel = torch.linspace(to_mel(0.0), to_mel(sr / 2.0), n_mels + 2)
    hz = 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    band = (hz[1:] - hz[:-1])[:-1]
    centre = hz[1:-1]
    freqs = torch.linspace(0, sr // 2, n_fft // 2 + 1)
    slope = (freqs[:, None] - centre[None, :]) / band[None, :]
    fb = torch.clamp(torch.min(1.0 + slope, 1.0 - slope), min=0.0)
    db = 10.0 * torch.log10(torch.clamp(power @ fb, min=1e-10))
    return torch.max(db, db.amax(dim=(-2, -1)) - 80.0)[0].numpy()


def main():
    for line in open(sys.argv[1]):
        f = line.split()
        if not f:
            continue
        x = np.load(f[1]).astype(np.float64).reshape(-1)
        if f[0] == "sb":
            out = sb_fbank_numpy(x, int(f[3]), int(f[4]), float(f[5]), float(f[6]), int(f[7]))
        elif f[0] == "sbtorch":
            out = sb_fbank_torch(x, int(f[3]), int(f[4]), float(f[5]), float(f[6]), int(f[7]))
        elif f[0] == "kaldi":
            wav = torch.from_numpy(x.astype(np.float32))[None]
            out = kaldi.fbank(wav, sample_frequency=float(f[3]), frame_length=float(f[4]),
                              frame_shift=float(f[5]), num_mel_bins=int(f[6]),
                              snip_edges=f[7] == "1", use_energy=f[8] == "1", dither=0.0).numpy()
        else:
            raise SystemExit("unknown job " + f[0])
        np.save(f[2], out.astype(np.float32))


if __name__ == "__main__":
    main()

// lib/toolkit/benchmarks.h
// The benchmarks of `mamba-asr bench` that measure one layer of the library each, registered by
// toolkit::register_all (runtime/benchmark.h is the protocol: warm-up, repetitions, median and
// spread, machine-readable output).
#pragma once

namespace masr::toolkit {

// "features": SpeechBrain Fbank (80 mels) on 10 s of audio, batch 1 and 16 (features_bench.cpp).
void register_features_bench();

// "loader": a small synthetic WAV corpus read through a manifest, DynamicBatchSampler and
// DataLoader (read, resample, speed perturbation, SpeechBrain Fbank, padding) with 0, 1 and 2
// workers; throughput in audio seconds per second (loader_bench.cpp).
void register_loader_bench();

// "scan": the CPU selective scan, forward and forward+backward, at ConMamba-S and ConMamba-L
// layer shapes (scan_bench.cpp).
void register_scan_bench();

// "encoder": encoder forward speed on CPU (encoder_bench.cpp).
void register_encoder_bench();

// "s2s-step", "decode-files", "s2s-decode-rtf": S2S beam search per step, a trained model's
// file-to-text pipeline, a full-size S2S model's decoding RTF (decode_bench.cpp).
void register_decode_bench();

}  // namespace masr::toolkit

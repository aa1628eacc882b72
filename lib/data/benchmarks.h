// lib/data/benchmarks.h
// Benchmarks of the data pipeline, registered with `mamba-asr bench` (runtime/benchmark.h).
#pragma once

namespace masr::data {

// Registers "loader": a small synthetic WAV corpus read through a manifest, DynamicBatchSampler
// and DataLoader (read, resample, speed perturbation, SpeechBrain Fbank, padding) with 0, 1 and
// 2 workers; throughput in audio seconds per second.
void register_data_benchmarks();

}  // namespace masr::data

// lib/features/short_input.h
// The input error for a waveform shorter than one analysis window (Fbank, Kaldi fbank).
#pragma once

#include <cstdint>
#include <string>

namespace masr::features {

// Throws an input error such as "Fbank: 120 samples; expected at least 400 (one 25 ms window at
// 16000 Hz)". window_ms is printed in its shortest form (25, 25.5); window_word names the unit
// ("window", "frame").
[[noreturn]] void throw_short_input(const std::string& extractor, int64_t samples,
                                    int64_t window_samples, double window_ms,
                                    const std::string& window_word, int64_t sample_rate);

}  // namespace masr::features

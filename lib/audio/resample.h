// lib/audio/resample.h
// Sample-rate conversion with libsoxr (high quality, linear phase), for loading audio at the
// model's rate and for speed perturbation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace masr::audio {

// Output length is round(n * to / from). from == to returns a copy. Rates must be positive.
std::vector<float> resample(const float* x, size_t n, int from, int to);
// The length resample gives n samples: round(n * to / from) (n when the rates are equal).
int64_t resampled_length(int64_t n, int from, int to);
inline std::vector<float> resample(const std::vector<float>& x, int from, int to) {
  return resample(x.data(), x.size(), from, to);
}

}  // namespace masr::audio

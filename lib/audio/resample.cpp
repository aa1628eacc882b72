// lib/audio/resample.cpp
// One-shot libsoxr conversion: the whole signal at once, so no streaming state is needed.
#include "audio/resample.h"

#include <soxr.h>

#include <cmath>
#include <string>

#include "core/error.h"

namespace masr::audio {

int64_t resampled_length(int64_t n, int from, int to) {
  if (from == to || n == 0) return n;
  return std::llround(static_cast<double>(n) * static_cast<double>(to) / static_cast<double>(from));
}

std::vector<float> resample(const float* x, size_t n, int from, int to) {
  if (from <= 0 || to <= 0) {
    throw_input_error("resample: sample rates must be positive (got " + std::to_string(from) +
                      " -> " + std::to_string(to) + ")");
  }
  if (from == to || n == 0) return std::vector<float>(x, x + n);
  const size_t out_len = static_cast<size_t>(resampled_length(static_cast<int64_t>(n), from, to));
  // Fewer input samples than one output period (e.g. 64 samples at 3.9 MHz to 16 kHz): nothing
  // to convert, and soxr must not be handed an empty output buffer (it crashes on it).
  if (out_len == 0) return {};
  std::vector<float> out(out_len);
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  size_t done = 0;
  const soxr_error_t error =
      soxr_oneshot(from, to, 1, x, n, nullptr, out.data(), out_len, &done, &io, &quality, nullptr);
  if (error != nullptr) {
    throw Error(ErrorKind::kInternal, "resample " + std::to_string(from) + " -> " +
                                          std::to_string(to) + " Hz failed: " + error);
  }
  out.resize(done);
  // soxr may return a sample less than round(n*to/from); pad so lengths are predictable.
  out.resize(out_len, 0.0f);
  return out;
}

}  // namespace masr::audio

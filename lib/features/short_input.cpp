// lib/features/short_input.cpp
// The too-short-waveform error of the feature extractors.
#include "features/short_input.h"

#include <sstream>

#include "core/error.h"

namespace masr::features {

void throw_short_input(const std::string& extractor, int64_t samples, int64_t window_samples,
                       double window_ms, const std::string& window_word, int64_t sample_rate) {
  std::ostringstream ms;
  ms << window_ms;
  throw_input_error(extractor + ": " + std::to_string(samples) + " samples; expected at least " +
                    std::to_string(window_samples) + " (one " + ms.str() + " ms " + window_word +
                    " at " + std::to_string(sample_rate) + " Hz)");
}

}  // namespace masr::features

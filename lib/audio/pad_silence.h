// lib/audio/pad_silence.h
// Random silence around a training utterance (a mamba-asr augmentation; SpeechBrain has none).
// Corpora cut their utterances tightly, or with one synthesizer's fixed margins, and a model
// trained on them learns that margin: decoded alone with 10 ms more silence in front, the bundled
// model's validation WER moved by a point. Chunked decoding of long files and streaming after an
// endpoint feed the model stretches whose margins differ from the corpus's. A lead drawn from
// [0, max_lead] and a tail from [0, max_tail] seconds of digital silence teach it every margin
// (docs/training.md, "Silence around utterances").
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace masr::audio {

struct PadSilenceConfig {
  double max_lead = 0.5;   // seconds of silence before the speech, at most
  double max_tail = 0.5;   // seconds after it, at most
  double prob = 1.0;       // the share of utterances padded; the rest are left as they are
  int sample_rate = 16000;

  void validate() const;  // throws masr::Error naming the bad value
};

class PadSilence {
 public:
  explicit PadSilence(PadSilenceConfig config);

  struct Result {
    int64_t lead = 0;  // samples added before
    int64_t tail = 0;  // and after
    std::vector<float> samples;
  };
  // Draws whether to pad, then each margin uniformly in whole samples, from `rng`; a seeded
  // generator reproduces the choice.
  Result operator()(const std::vector<float>& samples, std::mt19937_64& rng) const;
  // The margins operator() draws from `rng` (lead, tail; both 0 when it does not pad).
  std::pair<int64_t, int64_t> draw(std::mt19937_64& rng) const;
  // Deterministic: `lead` zeros, the samples, `tail` zeros.
  static std::vector<float> apply(const std::vector<float>& samples, int64_t lead, int64_t tail);

  const PadSilenceConfig& config() const { return config_; }

 private:
  PadSilenceConfig config_;
};

}  // namespace masr::audio

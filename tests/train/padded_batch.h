// tests/train/padded_batch.h
// A padded training batch built from utterances (waveform and token ids), as SpeechBrain's
// PaddedBatch builds it, for tests of the trainer's forward pass.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "train/asr_task.h"

namespace masr::testing {

struct Utterance {
  at::Tensor wav;               // (S) float
  std::vector<int64_t> tokens;  // without bos/eos
};

// The padded batch of `items` as the recipes' PaddedBatch builds it (zero padding, relative
// lengths, bos/eos sequences).
inline train::AsrBatch make_batch(const std::vector<Utterance>& items, int64_t bos, int64_t eos) {
  const int64_t n = static_cast<int64_t>(items.size());
  int64_t samples = 0, tokens = 0;
  for (const auto& u : items) {
    samples = std::max(samples, u.wav.size(0));
    tokens = std::max<int64_t>(tokens, static_cast<int64_t>(u.tokens.size()));
  }
  train::AsrBatch b;
  b.wav = torch::zeros({n, samples});
  b.wav_rel = torch::empty({n});
  b.tokens = torch::zeros({n, tokens}, torch::kLong);
  b.tokens_rel = torch::empty({n});
  b.tokens_bos = torch::zeros({n, tokens + 1}, torch::kLong);
  b.tokens_eos = torch::zeros({n, tokens + 1}, torch::kLong);
  b.tokens_eos_rel = torch::empty({n});
  for (int64_t i = 0; i < n; ++i) {
    const Utterance& u = items[static_cast<size_t>(i)];
    const int64_t len = static_cast<int64_t>(u.tokens.size());
    b.ids.push_back("u" + std::to_string(i));
    b.words.emplace_back("x");
    b.wav[i].narrow(0, 0, u.wav.size(0)).copy_(u.wav);
    b.wav_rel[i] = static_cast<float>(static_cast<double>(u.wav.size(0)) / samples);
    const at::Tensor t = torch::tensor(u.tokens, torch::kLong);
    b.tokens[i].narrow(0, 0, len).copy_(t);
    b.tokens_rel[i] = static_cast<float>(static_cast<double>(len) / tokens);
    b.tokens_bos[i][0] = bos;
    b.tokens_bos[i].narrow(0, 1, len).copy_(t);
    b.tokens_eos[i].narrow(0, 0, len).copy_(t);
    b.tokens_eos[i][len] = eos;
    b.tokens_eos_rel[i] = static_cast<float>(static_cast<double>(len + 1) / (tokens + 1));
  }
  return b;
}

}  // namespace masr::testing

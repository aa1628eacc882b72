// lib/features/augment/interface.h
// The interface every feature- or waveform-domain augmentation implements, and the seeded random
// draws they share, so that one seed reproduces a whole augmentation pipeline exactly.
#pragma once

#include <ATen/Tensor.h>
#include <ATen/core/Generator.h>

#include <cstdint>
#include <string>

#include "hparams/registry.h"

namespace masr::features {

// A padded batch and its relative lengths, as SpeechBrain passes them around.
struct AugmentBatch {
  at::Tensor x;        // (B, T, F) features or (B, T) waveforms
  at::Tensor lengths;  // (B,) float, relative lengths in (0, 1]
  // (B',) int64: for each output row, the input row it came from. Only the Augmenter, which can
  // concatenate or replicate rows, fills it (it replaces SpeechBrain's replicate_labels()).
  at::Tensor source;
};

class Augmentation : public hparams::Object {
 public:
  // Draws every random number from `generator` (a CPU generator), so the same generator state
  // gives the same output on any device. Never modifies `x` in place. `lengths` are on the host,
  // and so are the result's lengths and source whatever x's device: a training step reads
  // nothing back from the device for them.
  virtual AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                             at::Generator& generator) const = 0;
  // The Python class name ("SpectrogramDrop"), used in messages and summaries.
  virtual std::string name() const = 0;
};

// A CPU generator seeded with `seed`: the same seed gives the same draws as Python's
// `torch.Generator().manual_seed(seed)`.
at::Generator make_generator(uint64_t seed);

// One integer in [low, high) (torch.randint semantics: `high` is exclusive).
int64_t draw_int(at::Generator& generator, int64_t low, int64_t high);

// One float in [0, 1) (torch.rand).
double draw_uniform(at::Generator& generator);

// Throws an input error naming `who` unless x is a (batch, samples) waveform tensor.
void require_waveforms(const at::Tensor& x, const char* who);

// sqrt(sum(x^2) / valid) per row: the RMS over an utterance's valid samples, for x (B, T) whose
// samples past them are zero (or masked by the caller) and valid (B, 1) their counts.
at::Tensor valid_rms(const at::Tensor& x, const at::Tensor& valid);

}  // namespace masr::features

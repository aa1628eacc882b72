// lib/features/augment/interface.cpp
// Seeded random draws shared by the augmentations; all go through LibTorch's CPU generator so
// that draws match PyTorch's for the same seed and call order.
#include "features/augment/interface.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>

#include "core/error.h"

namespace masr::features {

at::Generator make_generator(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

int64_t draw_int(at::Generator& generator, int64_t low, int64_t high) {
  if (low >= high) {
    throw Error(ErrorKind::kInternal, "augment: cannot draw an integer from the empty range [" +
                                          std::to_string(low) + ", " + std::to_string(high) + ")");
  }
  return at::randint(low, high, {1}, generator, at::kLong).item<int64_t>();
}

double draw_uniform(at::Generator& generator) {
  return at::rand({1}, generator, at::kDouble).item<double>();
}

at::Tensor valid_rms(const at::Tensor& x, const at::Tensor& valid) {
  return (x.pow(2).sum(1, true) / valid).sqrt();
}

void require_waveforms(const at::Tensor& x, const char* who) {
  if (x.dim() != 2) {
    throw_input_error(std::string(who) + ": expected a (batch, samples) waveform tensor, got " +
                      std::to_string(x.dim()) + " dimensions");
  }
}

}  // namespace masr::features

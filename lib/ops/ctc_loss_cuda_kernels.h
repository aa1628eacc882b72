// lib/ops/ctc_loss_cuda_kernels.h
// Raw-pointer interface of the CUDA CTC loss kernels (ctc_loss_cuda_kernels.cu). Needs no CUDA or
// LibTorch header, so the kernel file builds with nvcc alone (a CI compile check).
#pragma once

#include <cstdint>

namespace masr::ops::cuda {

// Device pointers, all contiguous. log_probs: (batch, time, vocab) float; targets: (batch,
// max_target) int64; input_lengths, target_lengths: (batch) int64, read only on the device
// (clamped to [0, time] and [0, max_target]). An utterance has 2 L + 1 states (L its target
// length): blank, l_1, blank, l_2, ..., blank; buffers hold ctc_states(p) = 2 max_target + 1.
struct CtcParams {
  int64_t batch = 0, time = 0, vocab = 0, max_target = 0;
  int64_t blank = 0;
  bool zero_infinity = false;
  const float* log_probs = nullptr;
  const int64_t* targets = nullptr;
  const int64_t* input_lengths = nullptr;
  const int64_t* target_lengths = nullptr;
};

inline int64_t ctc_states(const CtcParams& p) { return 2 * p.max_target + 1; }

// The largest max_target the kernels take (shared memory holds a few values per state).
int64_t ctc_max_target();

// alphas: batch * time * ctc_states(p) floats, log alpha_t(s) for t < input length and s < 2 L + 1
// (the rest unwritten), kept for the backward. nll: (batch) the negative log-likelihoods; loss:
// (batch) the same with inf replaced by 0 when p.zero_infinity. Launch on `stream` (a
// cudaStream_t); return null, or the CUDA error's text.
const char* ctc_loss_forward(const CtcParams& p, float* alphas, float* nll, float* loss,
                             void* stream);

// grad_loss: d(objective)/d(loss) at grad_loss[b * grad_loss_stride]. Workspace: ab,
// batch * time * ctc_states(p) floats (log alpha + log beta); links, 2 * batch * ctc_states(p)
// int32 (per state: the next state of the same label, and whether it is the label's first).
// grad: (batch, time, vocab) float, every element written.
struct CtcGrads {
  const float* alphas = nullptr;
  const float* nll = nullptr;
  const float* grad_loss = nullptr;
  int64_t grad_loss_stride = 0;
  float* ab = nullptr;
  int32_t* links = nullptr;
  float* grad = nullptr;
};
const char* ctc_loss_backward(const CtcParams& p, const CtcGrads& g, void* stream);

}  // namespace masr::ops::cuda

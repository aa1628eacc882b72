// lib/models/mamba_step.h
// Recurrent stepping of a unidirectional nn::Mamba block (reference §2.4): the causal conv keeps
// its last d_conv - 1 inputs, the selective scan its (d_inner x d_state) state.
#pragma once

#include <ATen/Tensor.h>

#include "nn/mamba.h"

namespace masr::models {

struct MambaStepState {
  at::Tensor conv;  // (N, d_inner, d_conv - 1): the conv's inputs before the next position
  at::Tensor ssm;   // float (N, d_inner, d_state)
  void reorder(const at::Tensor& rows);  // index_select on the row dimension
};

// The state before any input (zero conv history, zero SSM state) for `rows` rows.
MambaStepState mamba_initial_state(const nn::MambaImpl& mamba, int64_t rows,
                                   const at::TensorOptions& options);

// The state after consuming x (B, T, d_model), each row only its first lengths[b] frames
// (undefined: all T), in closed form: h = sum_t exp(A * sum_{s>t} delta_s) delta_t B_t u_t.
MambaStepState mamba_prefill(nn::MambaImpl& mamba, const at::Tensor& x, const at::Tensor& lengths);

// One position x (N, 1, d_model) -> (N, 1, d_model), advancing `state`; equals forward's output
// at that position. Throws a config error for a bidirectional block (it needs the future).
at::Tensor mamba_step(nn::MambaImpl& mamba, const at::Tensor& x, MambaStepState& state);

// n positions x (N, n, d_model) -> (N, n, d_model), one mamba_step each, advancing `state`.
at::Tensor mamba_chunk(nn::MambaImpl& mamba, const at::Tensor& x, MambaStepState& state);

}  // namespace masr::models

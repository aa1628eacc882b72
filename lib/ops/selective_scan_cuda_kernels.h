// lib/ops/selective_scan_cuda_kernels.h
// Raw-pointer interface of the CUDA selective-scan kernels (selective_scan_cuda_kernels.cu). Needs
// no CUDA or LibTorch header, so the kernel file builds with nvcc alone (a CI compile check).
#pragma once

#include <cstdint>

#include "ops/scan_params.h"

namespace masr::ops::cuda {

enum class ScanDtype { kFloat32, kFloat16, kBFloat16 };

// Where frame t of row r of utterance b lies in a (batch, rows, time) tensor: element
// b * batch + r * row + t. Time is always contiguous; the other two strides are free, so the
// kernels read and write (batch, channels, time) tensors and the Mamba block's time-major
// projections ((channels, batch * time) matrices: batch = time, row = batch * time) in place.
struct RowStrides {
  int64_t batch = 0, row = 0;
};

// Device pointers, shaped as ScanBuffers states: u, delta, z, B, C in `dtype`, each at its
// RowStrides (B, C: (batch, state, time)); A, D, bias float and contiguous. The output is
// out_scale * y (BiMamba averages its two directions with out_scale = 0.5).
struct ScanParams : ScanBuffers<void, float> {
  ScanDtype dtype = ScanDtype::kFloat32;
  RowStrides u_s, delta_s, z_s, B_s, C_s;
  float out_scale = 1.f;
};

// out: (batch, channels, time) in dtype at out_s. checkpoints: null (inference) or
// scan_checkpoint_floats() floats: the state every 32 steps, read by scan_backward.
struct ScanForwardIO {
  void* out = nullptr;
  RowStrides out_s;
  float* checkpoints = nullptr;
};

// Gradients, each at its RowStrides; du, ddelta, dz (null when z is): (batch, channels, time)
// in dtype; dB, dC: (batch, state, time) in dtype; dA_rows (batch, channels, state), dD_rows and dbias_rows
// (batch, channels): float, per utterance (the caller sums over batch). workspace:
// scan_workspace_floats() floats for the per-block dB/dC partial sums.
struct ScanBackwardIO {
  const void* dout = nullptr;
  const float* checkpoints = nullptr;
  void* du = nullptr;
  void* ddelta = nullptr;
  void* dz = nullptr;
  void* dB = nullptr;
  void* dC = nullptr;
  float* dA_rows = nullptr;
  float* dD_rows = nullptr;
  float* dbias_rows = nullptr;
  float* workspace = nullptr;
  RowStrides dout_s, du_s, ddelta_s, dz_s, dB_s, dC_s;
};

// The largest state size the kernels take.
int scan_max_state();
int64_t scan_checkpoint_floats(const ScanParams& p);
int64_t scan_workspace_floats(const ScanParams& p);

// Launch on `stream` (a cudaStream_t). Return null, or the CUDA error's text.
const char* scan_forward(const ScanParams& p, const ScanForwardIO& io, void* stream);
const char* scan_backward(const ScanParams& p, const ScanBackwardIO& io, void* stream);

// Two scans of the same channels, time, state and dtype in one launch (BiMamba's forward and
// reverse directions: the grid's rows cover p's utterances, then p1's). Fewer launches, and a
// batch too small to fill the GPU alone fills twice as much of it.
const char* scan_forward_pair(const ScanParams& p, const ScanForwardIO& io, const ScanParams& p1,
                          const ScanForwardIO& io1, void* stream);
const char* scan_backward_pair(const ScanParams& p, const ScanBackwardIO& io, const ScanParams& p1,
                           const ScanBackwardIO& io1, void* stream);

}  // namespace masr::ops::cuda

// lib/ops/selective_scan_cuda.h
// The selective scan on CUDA tensors (selective_scan_cuda_kernels.cu), for builds whose LibTorch
// has CUDA (MASR_WITH_CUDA): the autograd entry that selective_scan() dispatches to, and the raw
// forward/backward passes that tests and benchmarks call directly.
#pragma once

#include <ATen/Tensor.h>

#include "ops/selective_scan.h"

namespace masr::ops {

// True when this build has the CUDA kernels and they take these inputs: CUDA tensors in float32,
// float16 or bfloat16, state size up to 64.
bool cuda_scan_supports(const at::Tensor& u, const at::Tensor& A);

// The autograd entry (same contract as selective_scan; arguments already checked).
at::Tensor selective_scan_cuda(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                               const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                               const at::Tensor& z, const at::Tensor& delta_bias,
                               const at::Tensor& lengths, const ScanOptions& options);

// Both BiMamba directions in one launch per pass (same contract as selective_scan_bidirectional;
// arguments already checked, both CUDA-supported with the same dtype and state size).
std::pair<at::Tensor, at::Tensor> selective_scan_cuda_bidirectional(const ScanDirection& forward,
                                                                    const ScanDirection& reverse,
                                                                    const at::Tensor& z,
                                                                    const at::Tensor& lengths,
                                                                    bool delta_softplus,
                                                                    double output_scale = 1.0);

// The inputs of one scan as the kernels take them: u's dtype and time contiguous (any batch and
// row strides) for u, delta, z, B, C;
// float32 for A, D, delta_bias; int64 lengths on the device (all frames when absent).
struct CudaScanInputs {
  at::Tensor u, delta, A, B, C, D, z, bias, lengths;
  ScanOptions options;
};
CudaScanInputs prepare_cuda_scan(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                                 const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                                 const at::Tensor& z, const at::Tensor& delta_bias,
                                 const at::Tensor& lengths, const ScanOptions& options);

// Forward pass; with keep_checkpoints, also the states every 32 steps that backward needs.
struct CudaScanForward {
  at::Tensor out, checkpoints;
};
CudaScanForward cuda_scan_forward(const CudaScanInputs& in, bool keep_checkpoints);
// Two scans of the same shape in one launch.
std::pair<CudaScanForward, CudaScanForward> cuda_scan_forward_pair(const CudaScanInputs& first,
                                                               const CudaScanInputs& second,
                                                               bool keep_checkpoints);

// Backward pass (deterministic: no atomics). dA, dD, dbias are float32 and summed over batch.
struct CudaScanGrads {
  at::Tensor du, ddelta, dA, dB, dC, dD, dz, dbias;
};
CudaScanGrads cuda_scan_backward(const CudaScanInputs& in, const at::Tensor& checkpoints,
                                 const at::Tensor& dout);
std::pair<CudaScanGrads, CudaScanGrads> cuda_scan_backward_pair(
    const CudaScanInputs& first, const at::Tensor& first_checkpoints, const at::Tensor& first_dout,
    const CudaScanInputs& second, const at::Tensor& second_checkpoints,
    const at::Tensor& second_dout);

}  // namespace masr::ops

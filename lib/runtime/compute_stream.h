// lib/runtime/compute_stream.h
// One CUDA stream for all of a training run's (or a training benchmark's) work on its thread.
//
// cuBLAS keeps a workspace per (handle, stream): LibTorch gives each thread its own handle, and
// on Hopper each workspace is 32 MiB. A step run op by op on the default stream uses two (the
// training thread's and autograd's device thread's); a CUDA graph must be captured on another
// stream, which makes two more. With everything on the capture's stream, op by op and captured
// steps, validation and checkpoints share one pair: measured on one H200 (2026-11-29,
// ConMamba-L S2S bf16 16 x 30 s) the graphed step held 95 MiB more than the op-by-op step, and
// 99 of its MiB (71 of op by op's) were cuBLAS workspaces; on one stream it peaked at 12,844
// instead of 12,876 MiB, 1.5 % faster (bench/results/2026-11-29-h200-memory-bundle.md).
#pragma once

#include <ATen/Device.h>

#include <memory>

namespace masr::runtime {

// While it lives, a stream of LibTorch's pool is this thread's current stream on `device` (a
// CUDA device; elsewhere, or with MASR_COMPUTE_STREAM=0, it does nothing). Work queued on the
// previous current stream before it was made is ordered before the new stream's, and the new
// stream's work before what is queued after it ends. Train/cuda_graph_step.h captures on the
// current stream when it is not the default one.
class ComputeStream {
 public:
  explicit ComputeStream(const at::Device& device);
  ~ComputeStream();
  ComputeStream(const ComputeStream&) = delete;
  ComputeStream& operator=(const ComputeStream&) = delete;
  bool active() const { return impl_ != nullptr; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Makes cuBLAS's workspaces 8 MiB (CUBLAS_WORKSPACE_CONFIG=:4096:2, LibTorch's size before
// Hopper) instead of the 32 MiB LibTorch gives each one on Hopper, unless CUBLAS_WORKSPACE_CONFIG
// is set already; true when it set it. LibTorch reads the variable at its first cuBLAS workspace,
// so call it before any matrix product on a GPU. For steps replayed as CUDA graphs only: measured
// on an H200 (ConMamba-L S2S bf16 16 x 30 s, one stream, 2026-11-29) the graphed step ran at
// 98.7 ms against 98.3 and peaked 48 MiB lower (12,796 against 12,844 MiB), but steps op by op
// were slower (141.8 ms, p10-p90 126-176, against 121.0), the smaller workspaces' algorithms
// launching more kernels.
bool small_cublas_workspaces_for_graphs();

}  // namespace masr::runtime

// lib/ops/scan_params.h
// The selective scan's sizes, input buffers and flags as raw pointers: one struct for the CPU
// kernels (selective_scan_cpu.h) and the CUDA kernels (selective_scan_cuda_kernels.h). Plain C++
// with no LibTorch or CUDA header, so nvcc reads it with the kernel files.
#pragma once

#include <cstdint>

namespace masr::ops {

// Data: the element type of u, delta, B, C, z (the CPU's compute type; void on CUDA, where the
// dtype is a field). Param: the element type of A, D, bias. Shapes, each kernel's layout aside:
//   u, delta, z: (batch, channels, time)    A: (channels, state)    D, bias: (channels)
//   B, C: one state vector per frame        lengths: (batch) int64, each in [0, time]
// z, D and bias may be null (absent). softplus: delta <- softplus(delta + bias); reverse: the
// recurrence runs from each utterance's last valid frame to its first.
template <typename Data, typename Param>
struct ScanBuffers {
  int64_t batch = 0, channels = 0, time = 0, state = 0;
  const Data* u = nullptr;
  const Data* delta = nullptr;
  const Data* B = nullptr;
  const Data* C = nullptr;
  const Data* z = nullptr;
  const Param* A = nullptr;
  const Param* D = nullptr;
  const Param* bias = nullptr;
  const int64_t* lengths = nullptr;
  bool softplus = true;
  bool reverse = false;
};

}  // namespace masr::ops

// lib/ops/selective_scan_cpu.h
// The fused CPU selective scan on raw contiguous buffers (forward, and backward by recomputing
// each row's states). Internal to lib/ops: selective_scan.cpp wraps it in an autograd Function.
#pragma once

#include <cstdint>

#include "ops/scan_params.h"

namespace masr::ops::cpu {

// Every buffer is contiguous and in the compute type T (float or double), shaped as
// ScanBuffers states, with B and C time-major: (batch, time, state), i.e. the public
// (batch, state, time) transposed, so that one frame's state vector is contiguous for the inner
// loop.
template <typename T>
using ScanInputs = ScanBuffers<T, T>;

// Gradient buffers, all fully written by scan_backward (frames >= lengths[b] get zeros).
template <typename T>
struct ScanGrads {
  T* du = nullptr;          // (batch, channels, time)
  T* ddelta = nullptr;      // (batch, channels, time), w.r.t. delta before bias and softplus
  T* dz = nullptr;          // (batch, channels, time); ignored when z is absent
  T* dA_rows = nullptr;     // (batch, channels, state): per utterance; the caller sums over batch
  T* dD_rows = nullptr;     // (batch, channels): per utterance
  T* dbias_rows = nullptr;  // (batch, channels): per utterance
  T* dBt = nullptr;         // (batch, time, state)
  T* dCt = nullptr;         // (batch, time, state)
};

// out: (batch, channels, time).
template <typename T>
void scan_forward(const ScanInputs<T>& in, T* out);

// dout: (batch, channels, time), contiguous.
template <typename T>
void scan_backward(const ScanInputs<T>& in, const T* dout, const ScanGrads<T>& grads);

// The instruction set the float kernels dispatch to on this machine ("avx512", "avx2", "generic").
const char* scan_isa();

// Selects the float kernels of one instruction set (tests compare them; benchmarks can too).
// Returns false, changing nothing, when the name is unknown or this machine lacks it. Not safe
// while a scan runs on another thread.
bool set_scan_isa(const char* isa);

}  // namespace masr::ops::cpu

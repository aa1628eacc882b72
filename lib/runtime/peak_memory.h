// lib/runtime/peak_memory.h
// Peak memory of a measured region: the process's peak resident set on the CPU (VmHWM, reset
// through /proc/self/clear_refs) and the caching allocator's peak on a CUDA device.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/device.h"

namespace masr::runtime {

// Starts a region on `device` (resolved): resets the peak counter.
void reset_peak_memory(const DeviceChoice& device);
// The peak since the last reset in bytes: RSS high-water mark on the CPU (0 where /proc is
// absent), CUDA max allocated on a GPU.
int64_t peak_memory(const DeviceChoice& device);
// "RSS" or "CUDA max allocated", for reports.
const char* peak_memory_kind(const DeviceChoice& device);

// MASR_MEMLOG=1 (a diagnostic): logs the CUDA allocator's current allocation and its peak since
// the previous point on device `cuda_index`, then resets the peak, so that each point gives its
// phase's peak (a run's own peak figures then cover its last phase only). Without the variable,
// or in a build without CUDA, nothing.
void memory_point(int cuda_index, const char* what);

// Waits for the device's queued work (CUDA) so that wall-clock timings are complete.
void synchronize_device(const DeviceChoice& device);
// Applies a profile's CUDA process settings (TF32 matmul, cudnn benchmark); no-op on CPU builds.
void apply_cuda_settings(bool tf32, bool cudnn_benchmark);
// True when `what` is an out-of-memory error from LibTorch or the allocator.
bool is_out_of_memory(const std::string& what);

}  // namespace masr::runtime

// lib/runtime/peak_memory.cpp
// CUDA calls are compiled only in CUDA builds (MASR_WITH_CUDA), as in machine_cuda.cpp.
#include "runtime/peak_memory.h"

#include <ATen/Context.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/env.h"

#ifdef MASR_WITH_CUDA
#include <c10/core/Device.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

namespace masr::runtime {
namespace {

#ifdef MASR_WITH_CUDA
// LibTorch 2.x takes a c10::DeviceIndex (int8_t) where 1.13 took an int; both accept this.
c10::DeviceIndex cuda_index(const DeviceChoice& device) {
  return static_cast<c10::DeviceIndex>(device.cuda_ordinal());
}
#endif

int64_t read_vm_hwm() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    std::getline(in, key);
  }
  return 0;
}

}  // namespace

void reset_peak_memory(const DeviceChoice& device) {
  if (device.is_cuda()) {
#ifdef MASR_WITH_CUDA
    c10::cuda::CUDACachingAllocator::resetPeakStats(cuda_index(device));
#endif
    return;
  }
  // Writing 5 resets the peak RSS to the current RSS (Linux >= 4.0, proc(5)).
  std::ofstream clear("/proc/self/clear_refs");
  if (clear) clear << "5";
}

int64_t peak_memory(const DeviceChoice& device) {
  if (device.is_cuda()) {
#ifdef MASR_WITH_CUDA
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_index(device));
    return stats.allocated_bytes[0].peak;  // index 0: the aggregate over pool types
#else
    return 0;
#endif
  }
  return read_vm_hwm();
}

void memory_point(int cuda_index, const char* what) {
#ifdef MASR_WITH_CUDA
  static const bool on = env_is("MASR_MEMLOG", "1");
  if (!on || cuda_index < 0) return;
  const auto index = static_cast<c10::DeviceIndex>(cuda_index);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
  const double mib = 1024.0 * 1024.0;
  std::fprintf(stderr, "memory %-28s %10.1f MiB allocated, %10.1f MiB peak since the last point\n",
               what, static_cast<double>(stats.allocated_bytes[0].current) / mib,
               static_cast<double>(stats.allocated_bytes[0].peak) / mib);
  c10::cuda::CUDACachingAllocator::resetPeakStats(index);
#else
  (void)cuda_index;
  (void)what;
#endif
}

const char* peak_memory_kind(const DeviceChoice& device) {
  return device.is_cuda() ? "CUDA max allocated" : "RSS";
}

void synchronize_device(const DeviceChoice& device) {
#ifdef MASR_WITH_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();
#else
  (void)device;
#endif
}

void apply_cuda_settings(bool tf32, bool cudnn_benchmark) {
#ifdef MASR_WITH_CUDA
  // torch.set_float32_matmul_precision("high") lets matmuls use TF32 (Ampere and newer).
  at::globalContext().setFloat32MatmulPrecision(tf32 ? "high" : "highest");
  at::globalContext().setBenchmarkCuDNN(cudnn_benchmark);
#else
  (void)tf32, (void)cudnn_benchmark;
#endif
}

bool is_out_of_memory(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("OutOfMemory") != std::string::npos ||
         what.find("std::bad_alloc") != std::string::npos;
}

}  // namespace masr::runtime

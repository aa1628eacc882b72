// lib/runtime/device_copy.cpp
#include "runtime/device_copy.h"

namespace masr::runtime {

at::Tensor to_device_async(const at::Tensor& t, const at::Device& device) {
  if (!t.defined() || t.device() == device) return t;
  if (t.is_cpu() && device.is_cuda()) {
    // The pinned staging buffer comes from LibTorch's caching host allocator, which keeps it
    // until the queued copy has read it.
    return t.contiguous().pin_memory().to(device, /*non_blocking=*/true);
  }
  return t.to(device);
}

}  // namespace masr::runtime

// lib/runtime/device_copy.cpp
#include "runtime/device_copy.h"

#include "core/error.h"

namespace masr::runtime {
namespace {
thread_local int uploads_forbidden = 0;
}  // namespace

HostUploadGuard::HostUploadGuard() { ++uploads_forbidden; }
HostUploadGuard::~HostUploadGuard() { --uploads_forbidden; }

at::Tensor to_device_async(const at::Tensor& t, const at::Device& device) {
  if (!t.defined() || t.device() == device) return t;
  if (t.is_cpu() && device.is_cuda()) {
    if (uploads_forbidden > 0) {
      throw Error(ErrorKind::kInternal,
                  "a host tensor of " + std::to_string(t.numel()) +
                      " elements was copied to the GPU inside a CUDA graph capture, which would "
                      "replay its values for ever");
    }
    // The pinned staging buffer comes from LibTorch's caching host allocator, which keeps it
    // until the queued copy has read it.
    return t.contiguous().pin_memory().to(device, /*non_blocking=*/true);
  }
  return t.to(device);
}

}  // namespace masr::runtime

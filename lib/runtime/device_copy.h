// lib/runtime/device_copy.h
// Host-to-device copies that do not stop the host. LibTorch copies a tensor from ordinary
// (pageable) host memory to a GPU synchronously: the host waits until every kernel queued before
// the copy has finished, so a training step that copies lengths or masks mid-step stalls its
// launch queue. Staged through pinned memory, the copy is queued like a kernel instead.
#pragma once

#include <ATen/Tensor.h>

namespace masr::runtime {

// `t` on `device`: unchanged when it is there already; from the CPU to a CUDA device through
// pinned memory, without waiting for the device. Other moves are ordinary copies.
at::Tensor to_device_async(const at::Tensor& t, const at::Device& device);

// While one lives on this thread, to_device_async of a host tensor to a GPU is an internal
// error. A CUDA graph capture holds one: the copy would be recorded from a staging buffer whose
// values every replay would read again (train/cuda_graph_step.h).
class HostUploadGuard {
 public:
  HostUploadGuard();
  ~HostUploadGuard();
  HostUploadGuard(const HostUploadGuard&) = delete;
  HostUploadGuard& operator=(const HostUploadGuard&) = delete;
};

}  // namespace masr::runtime

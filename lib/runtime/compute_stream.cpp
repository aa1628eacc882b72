// lib/runtime/compute_stream.cpp
#include "runtime/compute_stream.h"

#include <cstdlib>

#include "core/env.h"

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace masr::runtime {

#ifdef MASR_WITH_CUDA
struct ComputeStream::Impl {
  c10::cuda::CUDAStream previous;
  c10::cuda::CUDAStream stream;
  c10::cuda::CUDAStreamGuard guard;

  Impl(c10::cuda::CUDAStream prev, c10::cuda::CUDAStream s) : previous(prev), stream(s), guard(s) {}
};

namespace {
void order(c10::cuda::CUDAStream before, c10::cuda::CUDAStream after) {
  at::cuda::CUDAEvent e;
  e.record(before);
  e.block(after);
}
}  // namespace

ComputeStream::ComputeStream(const at::Device& device) {
  if (!device.is_cuda() || env_is("MASR_COMPUTE_STREAM", "0")) return;
  const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
  const c10::cuda::CUDAStream previous = c10::cuda::getCurrentCUDAStream(index);
  const c10::cuda::CUDAStream stream =
      c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
  order(previous, stream);
  impl_ = std::make_unique<Impl>(previous, stream);
}

ComputeStream::~ComputeStream() {
  if (!impl_) return;
  // The guard gives the previous stream back when impl_ goes; what ran here comes first.
  try {
    order(impl_->stream, impl_->previous);
  } catch (...) {  // a broken device: the error that broke it is reported where it happened
  }
}
#else
struct ComputeStream::Impl {};
ComputeStream::ComputeStream(const at::Device&) {}
ComputeStream::~ComputeStream() = default;
#endif

bool small_cublas_workspaces_for_graphs() {
  if (std::getenv("CUBLAS_WORKSPACE_CONFIG") != nullptr) return false;
  return ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:2", /*overwrite=*/0) == 0;
}

}  // namespace masr::runtime

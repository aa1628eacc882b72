// lib/runtime/machine_cuda.cpp
// CUDA device facts through LibTorch and the CUDA runtime; a no-op in CPU builds.
#include "runtime/machine.h"

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

namespace masr::runtime {

void detect_cuda(MachineInfo& info) {
#ifdef MASR_WITH_CUDA
  info.cuda_build = true;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  cudaDriverGetVersion(&info.cuda_driver_version);
  cudaRuntimeGetVersion(&info.cuda_runtime_version);
  for (int i = 0; i < count; ++i) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(i);
    CudaDeviceInfo d;
    d.index = i;
    d.name = p->name;
    d.compute_major = p->major;
    d.compute_minor = p->minor;
    d.memory_total_bytes = static_cast<int64_t>(p->totalGlobalMem);
    d.multiprocessors = p->multiProcessorCount;
    size_t free_bytes = 0, total_bytes = 0;
    int previous = 0;
    cudaGetDevice(&previous);
    if (cudaSetDevice(i) == cudaSuccess &&
        cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      d.memory_free_bytes = static_cast<int64_t>(free_bytes);
    }
    cudaSetDevice(previous);
    d.bf16 = d.compute_major >= 8;
    d.tf32 = d.compute_major >= 8;
    d.fp16 = d.compute_major >= 7;
    info.cuda.push_back(d);
  }
#else
  (void)info;
#endif
}

}  // namespace masr::runtime

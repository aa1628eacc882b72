// lib/runtime/machine.h
// What this machine offers: CPU (model, cores, ISA, memory, NUMA), CUDA devices and MPS, read
// from the operating system and LibTorch. `mamba-asr detect` prints it; runtime planning uses it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace masr::runtime {

struct CpuInfo {
  std::string model;       // "AMD EPYC 9654 96-Core Processor"
  int logical_cores = 0;   // hardware threads the process may use
  int physical_cores = 0;  // distinct (package, core) pairs; 0 when unknown
  std::vector<std::string>
      isa;  // vector extensions found: avx2, fma, avx512f, avx512_bf16, amx_tile, neon...
  int64_t memory_total_bytes = 0;      // MemTotal
  int64_t memory_available_bytes = 0;  // MemAvailable
  int numa_nodes = 0;                  // 0 when unknown
  std::string parallel_backend;        // LibTorch's intra-op backend, e.g. "OpenMP"
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  // The BLAS library LibTorch's matrix products go to: the resolved path of the libblas /
  // libopenblas / libblis / libmkl mapped into this process, or "" when LibTorch carries its own
  // (pip builds link MKL statically).
  std::string blas;
  bool blas_is_reference = false;  // the netlib reference BLAS: correct but 4-10x slower
};

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  int64_t memory_total_bytes = 0;
  int64_t memory_free_bytes = 0;
  int multiprocessors = 0;
  bool bf16 = false;  // native bf16 math (compute capability >= 8.0)
  bool fp16 = false;  // fast fp16 tensor cores (>= 7.0)
  bool tf32 = false;  // TF32 tensor cores (>= 8.0)
};

struct MachineInfo {
  std::string torch_version;
  CpuInfo cpu;
  bool cuda_build = false;
  std::vector<CudaDeviceInfo> cuda;
  int cuda_driver_version = 0;  // e.g. 13000; 0 when unknown
  int cuda_runtime_version = 0;
  bool mps = false;
};

MachineInfo detect_machine();
// MemAvailable of /proc/meminfo in bytes (0 where there is none), without the rest of
// detect_machine.
int64_t memory_available_bytes();

// Logs a warning, once per process, when LibTorch's matrix products run on the reference BLAS.
// Debian's LibTorch links libblas.so.3, which the alternatives system resolves to the netlib
// reference implementation unless an optimized BLAS is installed; training a small ConMamba on
// 2 cores measured 25 audio-s/s with it and 115 with OpenBLAS (libopenblas0-openmp).
void warn_if_reference_blas();

// The CUDA part, implemented in machine_cuda.cpp for CUDA builds and empty otherwise.
void detect_cuda(MachineInfo& info);

}  // namespace masr::runtime

// tests/runtime/test_machine.cpp
// Machine detection against independent sources: sysconf, the compiler's CPU feature probe and
// LibTorch itself; the CPU thread share of a GPU-training process.
#include <catch2/catch.hpp>

#include <ATen/Parallel.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "runtime/device.h"
#include "runtime/machine.h"

using masr::runtime::detect_machine;

namespace {
bool has(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}
}  // namespace

TEST_CASE("detect_machine reports cores and memory as the OS does", "[runtime]") {
  const auto m = detect_machine();
  CHECK(m.cpu.logical_cores == static_cast<int>(std::thread::hardware_concurrency()));
  CHECK(m.cpu.physical_cores >= 1);
  CHECK(m.cpu.physical_cores <= m.cpu.logical_cores);
  const int64_t sysconf_total =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  // MemTotal and sysconf both come from the kernel's totalram; allow one page of rounding.
  CHECK(std::abs(m.cpu.memory_total_bytes - sysconf_total) <= sysconf(_SC_PAGESIZE));
  CHECK(m.cpu.memory_available_bytes > 0);
  CHECK(m.cpu.memory_available_bytes <= m.cpu.memory_total_bytes);
  CHECK(m.cpu.intra_op_threads == at::get_num_threads());
  CHECK_FALSE(m.cpu.parallel_backend.empty());
  CHECK_FALSE(m.torch_version.empty());
}

TEST_CASE("detect_machine's vector ISA agrees with the compiler's CPU probe", "[runtime]") {
#if defined(__x86_64__)
  const auto m = detect_machine();
  CHECK(has(m.cpu.isa, "avx2") == static_cast<bool>(__builtin_cpu_supports("avx2")));
  CHECK(has(m.cpu.isa, "fma") == static_cast<bool>(__builtin_cpu_supports("fma")));
  CHECK(has(m.cpu.isa, "avx512f") == static_cast<bool>(__builtin_cpu_supports("avx512f")));
#else
  SUCCEED("not an x86-64 machine");
#endif
}

TEST_CASE("GPU training threads: the process's share of the cores less the loader's workers",
          "[runtime]") {
  using masr::runtime::gpu_training_threads;
  CHECK(gpu_training_threads(32, 1, 6) == 16);  // 24 left, capped at 16
  CHECK(gpu_training_threads(32, 2, 6) == 8);   // 16 per rank - 6 - 2
  CHECK(gpu_training_threads(128, 8, 4) == 10);
  CHECK(gpu_training_threads(16, 1, 6) == 8);
  CHECK(gpu_training_threads(8, 2, 6) == 1);    // never below one
  CHECK(gpu_training_threads(0, 0, -1) == 1);   // nonsense in, one thread out
}

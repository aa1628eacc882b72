// lib/runtime/machine.cpp
// CPU facts come from /proc and /sys (Linux); elsewhere they are left unknown (0 / empty).
#include "runtime/machine.h"

#include "core/log.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace masr::runtime {
namespace {

std::string value_after_colon(const std::string& line) {
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return "";
  size_t start = line.find_first_not_of(" \t", colon + 1);
  return start == std::string::npos ? "" : line.substr(start);
}

void read_cpuinfo(CpuInfo& cpu) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, physical_id = "0";
  std::set<std::string> cores, flags;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 && cpu.model.empty()) cpu.model = value_after_colon(line);
    if (line.rfind("physical id", 0) == 0) physical_id = value_after_colon(line);
    if (line.rfind("core id", 0) == 0) cores.insert(physical_id + ":" + value_after_colon(line));
    if ((line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) && flags.empty()) {
      std::istringstream words(value_after_colon(line));
      std::string word;
      while (words >> word) flags.insert(word);
    }
  }
  cpu.physical_cores = static_cast<int>(cores.size());
  // The extensions that decide which kernels run fast, in a stable order.
  for (const char* name : {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni",
                           "avx512_bf16", "amx_tile", "amx_bf16", "asimd", "sve"}) {
    if (flags.count(name)) cpu.isa.push_back(name == std::string("asimd") ? "neon" : name);
  }
}

void read_meminfo(CpuInfo& cpu) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemTotal:") cpu.memory_total_bytes = kib * 1024;
    if (key == "MemAvailable:") cpu.memory_available_bytes = kib * 1024;
  }
}

int count_numa_nodes() {
  std::error_code ec;
  int nodes = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 &&
        std::all_of(name.begin() + 4, name.end(), ::isdigit)) {
      ++nodes;
    }
  }
  return nodes;
}

std::string parallel_backend() {
  // at::get_parallel_info() has a line "ATen parallel backend: OpenMP".
  std::istringstream info(at::get_parallel_info());
  std::string line;
  while (std::getline(info, line)) {
    if (line.find("parallel backend") != std::string::npos) return value_after_colon(line);
  }
  return "";
}

// The library that provides sgemm_ in the global scope is the one LibTorch's matrix products
// call (several may be loaded: liblapack.so.3 can pull in libopenblas next to libblas). Its path
// is resolved through symlinks: Debian's /usr/lib/<triplet>/libblas.so.3 is an alternatives link.
void detect_blas(CpuInfo& cpu) {
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (sgemm == nullptr || dladdr(sgemm, &info) == 0 || info.dli_fname == nullptr) return;
  std::error_code ec;
  const auto resolved = std::filesystem::canonical(info.dli_fname, ec);
  cpu.blas = ec ? std::string(info.dli_fname) : resolved.string();
  if (cpu.blas.find("libtorch") != std::string::npos) {
    cpu.blas.clear();  // LibTorch carries its own (MKL in pip builds)
    return;
  }
  // Debian installs the reference BLAS as .../blas/libblas.so.3 (package libblas3); optimized
  // ones live in their own folders (openblas-openmp/, blis-openmp/, ...).
  cpu.blas_is_reference = cpu.blas.find("/blas/libblas.so") != std::string::npos;
}

}  // namespace

int64_t memory_available_bytes() {
  CpuInfo cpu;
  read_meminfo(cpu);
  return cpu.memory_available_bytes;
}

void warn_if_reference_blas() {
  static const bool warned = [] {
    CpuInfo cpu;
    detect_blas(cpu);
    if (cpu.blas_is_reference) {
      MASR_LOG_WARN(
          "LibTorch is using the reference BLAS (%s): matrix products run several times "
          "slower; install an optimized one with 'apt install libopenblas0-openmp' "
          "(scripts/setup.sh does)",
          cpu.blas.c_str());
    }
    return true;
  }();
  (void)warned;
}

MachineInfo detect_machine() {
  MachineInfo info;
  info.torch_version = TORCH_VERSION;
  CpuInfo& cpu = info.cpu;
  cpu.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  read_cpuinfo(cpu);
  read_meminfo(cpu);
  cpu.numa_nodes = count_numa_nodes();
  cpu.parallel_backend = parallel_backend();
  cpu.intra_op_threads = at::get_num_threads();
  cpu.inter_op_threads = at::get_num_interop_threads();
  detect_blas(cpu);
  info.mps = at::hasMPS();
  detect_cuda(info);
  return info;
}

}  // namespace masr::runtime

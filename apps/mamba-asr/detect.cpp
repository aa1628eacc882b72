// apps/mamba-asr/detect.cpp
// `mamba-asr detect`: what this machine offers (CPU, memory, CUDA devices, MPS, LibTorch) and the
// device that `--device` resolves to.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "commands.h"
#include "runtime/device.h"
#include "runtime/machine.h"

namespace masr::cli {
namespace {

struct DetectOptions {
  bool json = false;
};

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out.empty() ? "-" : out;
}

nlohmann::json to_json(const runtime::MachineInfo& m, const std::string& device) {
  nlohmann::json cuda = nlohmann::json::array();
  for (const auto& d : m.cuda) {
    cuda.push_back({{"index", d.index},
                    {"name", d.name},
                    {"compute_capability",
                     std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor)},
                    {"memory_total_bytes", d.memory_total_bytes},
                    {"memory_free_bytes", d.memory_free_bytes},
                    {"multiprocessors", d.multiprocessors},
                    {"bf16", d.bf16},
                    {"fp16", d.fp16},
                    {"tf32", d.tf32}});
  }
  return {{"torch_version", m.torch_version},
          {"device", device},
          {"cpu",
           {{"model", m.cpu.model},
            {"logical_cores", m.cpu.logical_cores},
            {"physical_cores", m.cpu.physical_cores},
            {"isa", m.cpu.isa},
            {"memory_total_bytes", m.cpu.memory_total_bytes},
            {"memory_available_bytes", m.cpu.memory_available_bytes},
            {"numa_nodes", m.cpu.numa_nodes},
            {"parallel_backend", m.cpu.parallel_backend},
            {"intra_op_threads", m.cpu.intra_op_threads},
            {"inter_op_threads", m.cpu.inter_op_threads},
            {"blas", m.cpu.blas.empty() ? "built into LibTorch" : m.cpu.blas},
            {"blas_is_reference", m.cpu.blas_is_reference}}},
          {"cuda_build", m.cuda_build},
          {"cuda_available", !m.cuda.empty()},
          {"cuda_driver_version", m.cuda_driver_version},
          {"cuda_runtime_version", m.cuda_runtime_version},
          {"cuda_devices", cuda},
          {"mps_available", m.mps}};
}

void print_table(const runtime::MachineInfo& m, const std::string& device) {
  const auto& c = m.cpu;
  std::printf("%-18s %s\n", "LibTorch", m.torch_version.c_str());
  std::printf("%-18s %s\n", "CPU", c.model.empty() ? "unknown" : c.model.c_str());
  std::printf("%-18s %d logical, %d physical, %d NUMA node(s)\n", "cores", c.logical_cores,
              c.physical_cores, c.numa_nodes);
  std::printf("%-18s %s\n", "vector ISA", join(c.isa).c_str());
  std::printf("%-18s %s total, %s available\n", "memory", gib(c.memory_total_bytes).c_str(),
              gib(c.memory_available_bytes).c_str());
  std::printf("%-18s %s, %d intra-op / %d inter-op threads\n", "parallelism",
              c.parallel_backend.c_str(), c.intra_op_threads, c.inter_op_threads);
  std::printf("%-18s %s%s\n", "BLAS", c.blas.empty() ? "built into LibTorch" : c.blas.c_str(),
              c.blas_is_reference ? " (reference implementation: slow)" : "");
  if (m.cuda.empty()) {
    std::printf("%-18s %s\n", "CUDA",
                m.cuda_build ? "no device" : "not in this build (CPU LibTorch)");
  }
  for (const auto& d : m.cuda) {
    std::printf("%-18s %s, compute %d.%d, %d SMs, %s (%s free), bf16 %s, TF32 %s\n",
                ("cuda:" + std::to_string(d.index)).c_str(), d.name.c_str(), d.compute_major,
                d.compute_minor, d.multiprocessors, gib(d.memory_total_bytes).c_str(),
                gib(d.memory_free_bytes).c_str(), d.bf16 ? "yes" : "no", d.tf32 ? "yes" : "no");
  }
  if (!m.cuda.empty()) {
    std::printf("%-18s driver %d, runtime %d\n", "CUDA versions", m.cuda_driver_version,
                m.cuda_runtime_version);
  }
  std::printf("%-18s %s\n", "MPS", m.mps ? "available" : "not available");
  std::printf("%-18s %s\n", "selected device", device.c_str());
}

int run_detect(const DetectOptions& options, const GlobalOptions& global) {
  const auto device = runtime::resolve_device(runtime::parse_device(global.device)).str();
  const auto machine = runtime::detect_machine();
  if (options.json) {
    std::cout << to_json(machine, device).dump(2) << "\n";
  } else {
    print_table(machine, device);
  }
  return 0;
}

}  // namespace

Runner add_detect_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<DetectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "detect",
      "Show what this machine offers (CPU, ISA, memory, NUMA, CUDA devices, MPS, LibTorch)\n"
      "and the device mamba-asr picks.\n\n"
      "Examples:\n"
      "  mamba-asr detect\n"
      "  mamba-asr --device cuda:1 detect --json");
  cmd->add_flag("--json", options->json, "Machine-readable output");
  return [options, &global] { return run_detect(*options, global); };
}

}  // namespace masr::cli

// apps/mamba-asr/detect.cpp
// `mamba-asr detect`: what this machine has, and the runtime profile mamba-asr would use.
#include <iostream>
#include <thread>

#include "commands.h"
#include "runtime/device.h"

namespace masr::cli {
namespace {

struct DetectOptions {
  bool json = false;
};

int run_detect(const DetectOptions& options, GlobalOptions& global) {
  const auto info = runtime::build_info();
  const auto device = runtime::resolve_device(runtime::parse_device(global.device));
  const unsigned cores = std::thread::hardware_concurrency();
  if (options.json) {
    std::cout << "{\"torch_version\": \"" << info.torch_version
              << "\", \"cuda_available\": " << (info.cuda_available ? "true" : "false")
              << ", \"cuda_devices\": " << info.cuda_devices
              << ", \"mps_available\": " << (info.mps_available ? "true" : "false")
              << ", \"logical_cores\": " << cores
              << ", \"intra_op_threads\": " << info.intra_op_threads << ", \"device\": \""
              << device.str() << "\"}\n";
    return 0;
  }
  std::cout << "LibTorch          " << info.torch_version << "\n"
            << "CUDA              "
            << (info.cuda_available ? std::to_string(info.cuda_devices) + " device(s)" : "none")
            << "\n"
            << "MPS               " << (info.mps_available ? "available" : "none") << "\n"
            << "CPU logical cores " << cores << "\n"
            << "intra-op threads  " << info.intra_op_threads << "\n"
            << "selected device   " << device.str() << "\n";
  return 0;
}

}  // namespace

Runner add_detect_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<DetectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "detect",
      "Show what this machine offers (devices, cores, LibTorch) and the device mamba-asr picks.\n\n"
      "Examples:\n"
      "  mamba-asr detect\n"
      "  mamba-asr detect --json");
  cmd->add_flag("--json", options->json, "Machine-readable output");
  return [options, &global] { return run_detect(*options, global); };
}

}  // namespace masr::cli

// lib/runtime/device.cpp
#include "runtime/device.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/Device.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace masr::runtime {

std::string DeviceChoice::str() const {
  switch (type) {
    case Type::kAuto:
      return "auto";
    case Type::kCpu:
      return "cpu";
    case Type::kMps:
      return "mps";
    case Type::kCuda:
      return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
  }
  return "?";
}

DeviceChoice parse_device(const std::string& text) {
  DeviceChoice d;
  if (text == "auto") return d;
  if (text == "cpu") {
    d.type = DeviceChoice::Type::kCpu;
    return d;
  }
  if (text == "mps") {
    d.type = DeviceChoice::Type::kMps;
    return d;
  }
  if (text == "cuda") {
    d.type = DeviceChoice::Type::kCuda;
    return d;
  }
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 &&
      std::all_of(text.begin() + 5, text.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      text.size() < 9) {
    d.type = DeviceChoice::Type::kCuda;
    d.index = std::atoi(text.c_str() + 5);
    return d;
  }
  throw Error(ErrorKind::kUsage,
              "--device '" + text + "' is not a device; use auto, cpu, cuda, cuda:N or mps");
}

DeviceChoice resolve_device(const DeviceChoice& choice) {
  const BuildInfo info = build_info();
  DeviceChoice d = choice;
  if (d.type == DeviceChoice::Type::kAuto) {
    if (info.cuda_available) {
      d.type = DeviceChoice::Type::kCuda;
      d.index = 0;
    } else if (info.mps_available) {
      d.type = DeviceChoice::Type::kMps;
    } else {
      d.type = DeviceChoice::Type::kCpu;
    }
    return d;
  }
  if (d.type == DeviceChoice::Type::kCuda) {
    if (!info.cuda_available) {
      throw Error(ErrorKind::kUsage,
                  "--device " + d.str() + ": no CUDA device is available (LibTorch " +
                      info.torch_version + (info.cuda_compiled ? "" : ", built without CUDA") +
                      "); use --device cpu");
    }
    d.index = d.cuda_ordinal();
    if (d.index >= info.cuda_devices) {
      throw Error(ErrorKind::kUsage,
                  "--device " + d.str() + ": there are only " + std::to_string(info.cuda_devices) +
                      " CUDA device(s), cuda:0 to cuda:" + std::to_string(info.cuda_devices - 1));
    }
  }
  if (d.type == DeviceChoice::Type::kMps && !info.mps_available) {
    throw Error(ErrorKind::kUsage, "--device mps: Metal (MPS) is not available in this build");
  }
  return d;
}

c10::Device torch_device(const DeviceChoice& choice) {
  switch (choice.type) {
    case DeviceChoice::Type::kCpu:
      return c10::Device(c10::kCPU);
    case DeviceChoice::Type::kMps:
      return c10::Device(c10::kMPS);
    case DeviceChoice::Type::kCuda:
      return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(choice.index));
    case DeviceChoice::Type::kAuto:
      break;
  }
  throw Error(ErrorKind::kInternal, "device 'auto' was not resolved before use");
}

void apply_threads(int threads) {
  if (threads < 0) {
    throw Error(ErrorKind::kUsage, "--threads " + std::to_string(threads) +
                                       ": give a positive number of threads, or 0 for the default");
  }
  if (threads == 0) return;
  at::set_num_threads(threads);
  // Inter-op threads can only be set once per process, before any inter-op work.
  static bool inter_op_set = false;
  if (!inter_op_set) {
    at::set_num_interop_threads(std::min(2, threads));
    inter_op_set = true;
  }
}

int gpu_training_threads(int cores, int ranks_on_host, int loader_workers) {
  const int share = std::max(1, cores) / std::max(1, ranks_on_host);
  return std::clamp(share - std::max(0, loader_workers) - 2, 1, 16);
}

BuildInfo build_info() {
  BuildInfo info;
  info.torch_version = TORCH_VERSION;
#ifdef MASR_WITH_CUDA
  info.cuda_compiled = true;
#endif
  info.cuda_available = at::hasCUDA();
  info.cuda_devices = info.cuda_available ? static_cast<int>(at::getNumGPUs()) : 0;
  info.mps_available = at::hasMPS();
  info.intra_op_threads = at::get_num_threads();
  return info;
}

}  // namespace masr::runtime

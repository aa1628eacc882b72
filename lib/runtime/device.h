// lib/runtime/device.h
// Choosing where to compute: parsing `--device auto|cpu|cuda[:N]|mps`, checking it exists,
// and applying `--threads`. Kept free of LibTorch types so the CLI can include it cheaply.
#pragma once

#include <string>

namespace masr::runtime {

struct DeviceChoice {
  enum class Type { kAuto, kCpu, kCuda, kMps };
  Type type = Type::kAuto;
  int index = -1;           // CUDA device index; -1 means the default (0)
  std::string str() const;  // "auto", "cpu", "cuda:1", "mps"
};

// Parses a --device value; a malformed one is a usage error that lists the accepted forms.
DeviceChoice parse_device(const std::string& text);

// Resolves `auto` (CUDA if present, then MPS, then CPU) and checks the device exists; an absent
// CUDA device or index is an error naming what is available.
DeviceChoice resolve_device(const DeviceChoice& choice);

// Sets LibTorch's intra-op thread count (and inter-op to min(2, n)); 0 keeps the default.
void apply_threads(int threads);

// What this build can use: "LibTorch 1.13.1, CUDA: no, MPS: no".
struct BuildInfo {
  std::string torch_version;
  bool cuda_compiled = false;   // this mamba-asr was built against a CUDA LibTorch
  bool cuda_available = false;  // LibTorch sees a CUDA device now
  int cuda_devices = 0;
  bool mps_available = false;
  int intra_op_threads = 0;
};
BuildInfo build_info();

}  // namespace masr::runtime

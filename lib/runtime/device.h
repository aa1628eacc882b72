// lib/runtime/device.h
// Choosing where to compute: parsing `--device auto|cpu|cuda[:N]|mps`, checking it exists,
// and applying `--threads`. Kept free of LibTorch headers so the CLI can include it cheaply.
#pragma once

#include <string>

namespace c10 {
struct Device;
}

namespace masr::runtime {

// A device as the user names it (`auto` included) or, once resolved, the one to compute on.
struct DeviceChoice {
  enum class Type { kAuto, kCpu, kCuda, kMps };
  Type type = Type::kAuto;
  int index = -1;           // CUDA device index; -1 means the default (0)
  int cuda_ordinal() const { return index < 0 ? 0 : index; }  // the CUDA device it names
  std::string str() const;  // "auto", "cpu", "cuda:1", "mps"
  bool is_cpu() const { return type == Type::kCpu; }
  bool is_cuda() const { return type == Type::kCuda; }
  bool operator==(const DeviceChoice& other) const {
    return type == other.type && index == other.index;
  }
  bool operator!=(const DeviceChoice& other) const { return !(*this == other); }

  static DeviceChoice cpu() { return {Type::kCpu, -1}; }
};

// Parses a --device value; a malformed one is a usage error that lists the accepted forms.
DeviceChoice parse_device(const std::string& text);

// Resolves `auto` (CUDA if present, then MPS, then CPU) and checks the device exists; an absent
// CUDA device or index is an error naming what is available.
DeviceChoice resolve_device(const DeviceChoice& choice);

// The LibTorch device of a resolved choice (a CUDA choice without an index is the current CUDA
// device); `auto` is an internal error: resolve it first.
c10::Device torch_device(const DeviceChoice& choice);

// Sets LibTorch's intra-op thread count (and inter-op to min(2, n)); 0 keeps the default.
void apply_threads(int threads);

// LibTorch CPU threads for one GPU-training process when the user set none: its share of the
// cores (`ranks_on_host` processes) less the data-loader workers and two for the launch and
// CUDA threads, in [1, 16]. LibTorch's default pool takes every core, and its OpenMP threads
// spin after each parallel region of the training thread, starving the loader workers
// (measured on 32 cores, 6 workers: the loader kept up with 16 threads and fed a quarter of the
// GPU's pace with 32; bench/results/2026-11-25-h100-training-throughput.md).
int gpu_training_threads(int cores, int ranks_on_host, int loader_workers);

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

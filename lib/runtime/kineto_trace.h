// lib/runtime/kineto_trace.h
// A Chrome trace (Kineto: CPU operators and CUDA kernels) of a region of work, for a kernel-level
// breakdown with bench/trace_summary.py. Used by `bench train-step --trace` and `train --trace`.
#pragma once

#include <string>

namespace masr::runtime {

class KinetoTrace {
 public:
  KinetoTrace() = default;
  KinetoTrace(const KinetoTrace&) = delete;
  KinetoTrace& operator=(const KinetoTrace&) = delete;
  ~KinetoTrace();  // a trace still running is dropped

  // True where this build can trace (CUDA builds on LibTorch >= 2, which ship Kineto).
  static bool available();
  // Starts recording; a config error where !available().
  void start();
  // Stops and writes the trace as JSON to `path`; nothing when not recording.
  void stop(const std::string& path);
  bool running() const { return running_; }

 private:
  bool running_ = false;
};

}  // namespace masr::runtime

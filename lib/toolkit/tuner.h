// lib/toolkit/tuner.h
// `bench --tune`: measures a model's candidate settings on a device (thread counts, batch sizes
// up to the memory limit, precisions), picks the fastest that fits and caches it as a plan.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "toolkit/plan.h"

namespace masr::toolkit {

struct TuneOptions {
  std::string hparams_file;
  std::vector<std::pair<std::string, std::string>> overrides;  // hparams overrides
  runtime::DeviceChoice device = runtime::DeviceChoice::cpu();  // resolved
  bool replan = false;  // runtime::measure even when a cached plan matches
  int warmup = 1;
  int repeat = 3;
  double seconds = 4.0;          // synthetic utterance length
  std::vector<int64_t> batches;  // explicit batch candidates; empty: 1, 2, 4, ... until memory
  std::vector<int> threads;      // explicit thread counts; empty: 1, 2, 4, 8 up to the profile's
  int64_t max_batch = 64;
};

struct TuneOutcome {
  RuntimePlan plan;
  std::string source;    // "cache" (reused, nothing measured) or "measured"
  int measurements = 0;  // timed candidates run by this call
  std::string path;      // the plan file
};

// Reuses the cached plan whose signature matches, else measures and caches. A candidate that
// fails (out of memory, unsupported precision) is logged as a warning and skipped.
TuneOutcome tune(const TuneOptions& options);

}  // namespace masr::toolkit

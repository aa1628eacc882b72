// lib/toolkit/plan.h
// Measured runtime plans, cached as JSON under $XDG_CACHE_HOME/mamba-asr/plans/ (default
// ~/.cache) and keyed by a signature of the device, the model's hparams and the versions.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "runtime/machine.h"
#include "toolkit/profile.h"

namespace masr::toolkit {

struct PlanSignature {
  nlohmann::json
      fields;        // device and its properties, hparams hash, LibTorch and mamba-asr versions
  std::string hash;  // 16 hex digits over `fields`: the cache file's name
};

// `constraints` are explicit settings the plan was measured under (e.g. a fixed thread list); a
// plan measured under other constraints is a different plan.
PlanSignature plan_signature(const runtime::MachineInfo& machine,
                             const runtime::DeviceChoice& device, const std::string& hparams_hash,
                             const nlohmann::json& constraints = nlohmann::json::object());

struct RuntimePlan {
  PlanSignature signature;
  RuntimeProfile profile;   // the settings to use (measured ones replace the profile's)
  int decode_threads = 1;   // the fastest thread count for decoding
  nlohmann::json measured;  // candidates: settings, median, throughput, peak memory, outcome
  std::string created;      // UTC, ISO 8601
};

// $XDG_CACHE_HOME/mamba-asr/plans, else $HOME/.cache/mamba-asr/plans; an error when neither
// variable is set.
std::string plan_cache_dir();
std::string plan_path(const PlanSignature& signature);  // <dir>/<hash>.json

nlohmann::json plan_to_json(const RuntimePlan& plan);
// A missing file is nullopt; an unreadable or malformed one, or one whose signature does not
// match `expected`, is nullopt with a warning naming the file (it will be measured again).
std::optional<RuntimePlan> load_plan(const std::string& path, const PlanSignature& expected);
// Written atomically (temporary file, then rename); I/O errors name the path.
void save_plan(const RuntimePlan& plan, const std::string& path);

}  // namespace masr::toolkit

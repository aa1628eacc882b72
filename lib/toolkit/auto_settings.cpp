// lib/toolkit/auto_settings.cpp
// Explicit values always win: only keys whose value is the word `auto` are filled in.
#include "toolkit/auto_settings.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/log.h"
#include "hparams/hparams.h"
#include "toolkit/model_facts.h"
#include "toolkit/plan.h"

namespace masr::toolkit {
namespace {

const std::vector<std::string>& knobs() {
  static const std::vector<std::string> all = {"precision",
                                               "batch_size",
                                               "grad_accumulation_factor",
                                               "num_workers",
                                               "dynamic_batching",
                                               "max_batch_length_train",
                                               "max_batch_len_val",
                                               "max_batch_length_val",
                                               "num_bucket",
                                               "max_grad_norm",
                                               "threads"};
  return all;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// Looks up the plan measured by `bench --tune` with default constraints (any thread list and
// batch list given to --tune makes a different signature, so those plans are only reused by tune).
std::optional<RuntimePlan> cached_plan(const runtime::MachineInfo& machine,
                                       const runtime::DeviceChoice& device,
                                       const std::string& hparams_hash, std::string* path) {
  const PlanSignature s =
      plan_signature(machine, device, hparams_hash, nlohmann::json{{"seconds", 4.0}});
  *path = plan_path(s);
  return load_plan(*path, s);
}

}  // namespace

std::vector<std::string> auto_keys(const std::string& hparams_file, const Overrides& overrides) {
  // A file yaml-cpp cannot read is left to the hparams loader, which names the problem better.
  YAML::Node root;
  try {
    root = YAML::LoadFile(hparams_file);
  } catch (const YAML::Exception&) {
    root = YAML::Node();
  }
  std::vector<std::string> out;
  for (const auto& key : knobs()) {
    std::string value;
    if (root.IsMap() && root[key] && root[key].IsScalar()) value = root[key].Scalar();
    for (const auto& [k, v] : overrides) value = k == key ? v : value;
    if (value == "auto") out.push_back(key);
  }
  return out;
}

std::string profile_value(const RuntimeProfile& p, const std::string& key) {
  if (key == "precision") return runtime::precision_name(p.precision);
  if (key == "batch_size") return number(p.batch_size);
  if (key == "grad_accumulation_factor") return number(p.grad_accumulation_factor);
  if (key == "num_workers") return number(p.num_workers);
  if (key == "dynamic_batching") return p.dynamic_batching ? "True" : "False";
  if (key == "max_batch_length_train") return number(p.max_batch_length_train);
  if (key == "max_batch_len_val" || key == "max_batch_length_val") {
    return number(p.max_batch_length_val);
  }
  if (key == "num_bucket") return number(p.num_bucket);
  if (key == "max_grad_norm") return number(p.max_grad_norm);
  if (key == "threads") return number(p.intra_op_threads);
  return "";
}

hparams::Hparams load_hparams_for_runtime(const std::string& hparams_file,
                                          const Overrides& overrides,
                                          const runtime::MachineInfo& machine,
                                          const runtime::DeviceChoice& device) {
  hparams::LoadOptions load;
  load.placeholder_value = "unused";
  load.overrides = overrides;
  const RuntimeProfile profile = derive_profile(machine, device, nullptr);
  for (const auto& key : auto_keys(hparams_file, overrides)) {
    load.overrides.emplace_back(key, profile_value(profile, key));
  }
  return hparams::load_file(hparams_file, load);
}

AutoResolution resolve_auto(const std::string& hparams_file, const Overrides& overrides,
                            const runtime::DeviceChoice& device, bool threads_auto) {
  AutoResolution r;
  std::vector<std::string> keys = auto_keys(hparams_file, overrides);
  if (threads_auto && std::find(keys.begin(), keys.end(), "threads") == keys.end()) {
    keys.push_back("threads");
  }
  if (keys.empty()) return r;
  const runtime::MachineInfo machine = runtime::detect_machine();
  const ModelFacts facts =
      model_facts_from(load_hparams_for_runtime(hparams_file, overrides, machine, device));
  std::string path;
  if (auto plan = cached_plan(machine, device, facts.hparams_hash, &path)) {
    r.profile = plan->profile;
    r.source = "plan " + path;
  } else {
    r.profile = derive_profile(machine, device, &facts);
    r.source =
        "profile (no plan cached for this model and device; run mamba-asr bench --tune "
        "--hparams " +
        hparams_file + ")";
  }
  const std::vector<std::string> in_hparams = auto_keys(hparams_file, overrides);
  for (const auto& key : keys) {
    const std::string value = profile_value(r.profile, key);
    if (key == "threads") r.threads = r.profile.intra_op_threads;
    // Overrides must name existing keys; `threads` may come from --threads auto alone.
    if (std::find(in_hparams.begin(), in_hparams.end(), key) != in_hparams.end()) {
      r.overrides.emplace_back(key, value);
    }
    MASR_LOG_INFO("auto: %s = %s (from the %s)", key.c_str(), value.c_str(), r.source.c_str());
  }
  return r;
}

int auto_decode_threads(const std::string& model_hparams_yaml, const runtime::DeviceChoice& device,
                        std::string* source) {
  const runtime::MachineInfo machine = runtime::detect_machine();
  std::string path;
  if (auto plan = cached_plan(machine, device, stable_hash(model_hparams_yaml), &path)) {
    *source = "plan " + path;
    return plan->decode_threads;
  }
  *source = "profile";
  return derive_profile(machine, device, nullptr).intra_op_threads;
}

}  // namespace masr::toolkit

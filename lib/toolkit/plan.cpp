// lib/toolkit/plan.cpp
// Plan files are plain JSON so people can read, diff and delete them.
#include "toolkit/plan.h"

#include <torch/version.h>

#include <unistd.h>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/log.h"
#include "core/version.h"
#include "toolkit/model_facts.h"

namespace fs = std::filesystem;

namespace masr::toolkit {
namespace {

nlohmann::json device_fields(const runtime::MachineInfo& m, const runtime::DeviceChoice& device) {
  nlohmann::json d = {{"device", device.str()}};
  if (device.is_cuda()) {
    const int index = device.cuda_ordinal();
    for (const auto& c : m.cuda) {
      if (c.index != index) continue;
      d["gpu"] = c.name;
      d["compute_capability"] =
          std::to_string(c.compute_major) + "." + std::to_string(c.compute_minor);
      d["gpu_memory_gib"] = c.memory_total_bytes >> 30;
      d["multiprocessors"] = c.multiprocessors;
    }
    d["cuda_runtime_version"] = m.cuda_runtime_version;
  }
  // The host matters on every device: data loading and the CPU side run there.
  d["cpu"] = m.cpu.model;
  d["logical_cores"] = m.cpu.logical_cores;
  d["physical_cores"] = m.cpu.physical_cores;
  d["isa"] = m.cpu.isa;
  d["memory_gib"] = m.cpu.memory_total_bytes >> 30;
  d["blas"] = m.cpu.blas;
  return d;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

PlanSignature plan_signature(const runtime::MachineInfo& machine,
                             const runtime::DeviceChoice& device, const std::string& hparams_hash,
                             const nlohmann::json& constraints) {
  PlanSignature s;
  s.fields = {{"device", device_fields(machine, device)},
              {"hparams_hash", hparams_hash},
              {"torch_version", TORCH_VERSION},
              {"mamba_asr_version", version_string()},
              {"constraints", constraints}};
  s.hash = stable_hash(s.fields.dump());
  return s;
}

std::string plan_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') return (fs::path(xdg) / "mamba-asr" / "plans").string();
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    throw_config_error("plan cache: neither XDG_CACHE_HOME nor HOME is set; set one of them");
  }
  return (fs::path(home) / ".cache" / "mamba-asr" / "plans").string();
}

std::string plan_path(const PlanSignature& signature) {
  return (fs::path(plan_cache_dir()) / (signature.hash + ".json")).string();
}

nlohmann::json plan_to_json(const RuntimePlan& plan) {
  return {{"format", "mamba-asr plan 1"},
          {"signature_hash", plan.signature.hash},
          {"signature", plan.signature.fields},
          {"created", plan.created.empty() ? utc_now() : plan.created},
          {"profile", profile_to_json(plan.profile)},
          {"decode_threads", plan.decode_threads},
          {"measured", plan.measured}};
}

std::optional<RuntimePlan> load_plan(const std::string& path, const PlanSignature& expected) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("signature", nlohmann::json()) != expected.fields) {
      MASR_LOG_WARN("plan %s: its signature differs from this run's; measuring again",
                    path.c_str());
      return std::nullopt;
    }
    RuntimePlan plan;
    plan.signature = expected;
    plan.created = j.value("created", "");
    plan.profile = profile_from_json(j.at("profile"));
    plan.decode_threads = j.value("decode_threads", plan.profile.intra_op_threads);
    plan.measured = j.value("measured", nlohmann::json::array());
    return plan;
  } catch (const std::exception& e) {
    MASR_LOG_WARN("plan %s is unreadable (%s); measuring again", path.c_str(), e.what());
    return std::nullopt;
  }
}

void save_plan(const RuntimePlan& plan, const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    throw_io_error("plan cache '" + fs::path(path).parent_path().string() + "': " + ec.message());
  const std::string temp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temp);
    out << plan_to_json(plan).dump(2) << "\n";
    if (!out) throw_io_error("plan '" + temp + "': cannot write");
  }
  fs::rename(temp, path, ec);
  if (ec) throw_io_error("plan '" + path + "': " + ec.message());
}

}  // namespace masr::toolkit

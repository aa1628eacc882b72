// lib/train/checkpointer.cpp
// CKPT+ directories: atomic creation, listing, retention.
#include "train/checkpointer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/crc32.h"
#include "core/error.h"
#include "core/log.h"
#include "core/remove_tree.h"

namespace masr::train {
namespace fs = std::filesystem;
namespace {

std::string crc32_hex(const std::string& bytes) {
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(crc32(bytes)));
  return hex;
}

}  // namespace

std::string meta_to_json(const CheckpointMeta& meta) {
  nlohmann::json j;
  j["serial"] = meta.serial;
  j["epoch"] = meta.epoch;
  j["batch"] = meta.batch;
  j["step"] = meta.step;
  j["end_of_epoch"] = meta.end_of_epoch;
  j["metrics"] = meta.metrics;
  j["counters"] = meta.counters;
  j["checksums"] = meta.checksums;
  return j.dump(2) + "\n";
}

namespace {

// JSON has no NaN: nlohmann writes a non-finite metric (a diverged validation loss) as null, which
// reads back as NaN, so such a checkpoint still resumes.
std::map<std::string, double> number_map(const nlohmann::json& j) {
  std::map<std::string, double> out;
  for (const auto& [key, value] : j.items()) {
    out[key] = value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
  }
  return out;
}

}  // namespace

CheckpointMeta meta_from_json(const std::string& text, const std::string& origin) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    CheckpointMeta m;
    m.serial = j.at("serial").get<int64_t>();
    m.epoch = j.at("epoch").get<int64_t>();
    m.batch = j.at("batch").get<int64_t>();
    m.step = j.at("step").get<int64_t>();
    m.end_of_epoch = j.at("end_of_epoch").get<bool>();
    m.metrics = number_map(j.at("metrics"));
    m.counters = number_map(j.at("counters"));
    if (j.contains("checksums")) {
      m.checksums = j.at("checksums").get<std::map<std::string, std::string>>();
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw_input_error("checkpoint meta '" + origin + "' is malformed: " + e.what());
  }
}

Checkpointer::Checkpointer(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw_io_error("cannot create checkpoint folder '" + dir_ + "': " + ec.message());
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind(".tmp-CKPT+", 0) == 0) {
      MASR_LOG_INFO("checkpoint: removing incomplete %s", entry.path().c_str());
      remove_tree(entry.path().string());
    }
  }
  for (const auto& c : list()) next_serial_ = std::max(next_serial_, c.meta.serial + 1);
}

std::string Checkpointer::save(CheckpointMeta meta, const std::map<std::string, std::string>& files,
                               const std::function<void(const std::string&)>& writer) {
  meta.serial = next_serial_++;
  meta.checksums.clear();
  for (const auto& [file, bytes] : files) meta.checksums[file] = crc32_hex(bytes);
  char name[96];
  std::snprintf(name, sizeof(name), "CKPT+%06lld-E%lld-B%lld", static_cast<long long>(meta.serial),
                static_cast<long long>(meta.epoch), static_cast<long long>(meta.batch));
  const fs::path temp = fs::path(dir_) / (std::string(".tmp-") + name);
  const fs::path final_path = fs::path(dir_) / name;
  std::error_code ec;
  remove_tree(temp.string());
  fs::create_directories(temp, ec);
  if (ec) throw_io_error("cannot create '" + temp.string() + "': " + ec.message());
  try {
    for (const auto& [file, bytes] : files) write_file_synced((temp / file).string(), bytes);
    if (writer) writer(temp.string());
    // meta.json last: a directory with it is complete even if renamed by hand.
    write_file_synced((temp / "meta.json").string(), meta_to_json(meta));
    sync_directory(temp.string());
    fs::rename(temp, final_path, ec);
    if (ec) throw_io_error("cannot rename '" + temp.string() + "': " + ec.message());
  } catch (...) {
    // A full disk must not leave a partial checkpoint folder behind (the next run would remove
    // it, but a user looking at the folder meanwhile should not see one).
    remove_tree(temp.string());
    throw;
  }
  sync_directory(dir_);
  return final_path.string();
}

std::vector<CheckpointInfo> Checkpointer::list() const {
  std::vector<CheckpointInfo> out;
  if (!fs::exists(dir_)) return out;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind("CKPT+", 0) != 0) continue;
    const fs::path meta = entry.path() / "meta.json";
    if (!fs::exists(meta)) continue;
    out.push_back({entry.path().string(), meta_from_json(read_file(meta.string()), meta.string())});
  }
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.meta.serial < b.meta.serial;
  });
  return out;
}

std::optional<CheckpointInfo> Checkpointer::latest() const {
  auto all = list();
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::vector<CheckpointInfo> Checkpointer::best(const RetentionPolicy& policy) const {
  std::vector<CheckpointInfo> candidates;
  for (auto& c : list()) {
    if (!c.meta.end_of_epoch) continue;
    if (!policy.metric.empty() && c.meta.metrics.count(policy.metric) == 0) continue;
    candidates.push_back(std::move(c));
  }
  // Best first; ties go to the newer checkpoint.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const CheckpointInfo& a, const CheckpointInfo& b) {
                     if (policy.metric.empty()) return a.meta.serial > b.meta.serial;
                     const double x = a.meta.metrics.at(policy.metric);
                     const double y = b.meta.metrics.at(policy.metric);
                     // NaN (a diverged epoch) ranks last; it would otherwise break the ordering.
                     if (std::isnan(x) != std::isnan(y)) return std::isnan(y);
                     if (!std::isnan(x) && x != y) return policy.maximize ? x > y : x < y;
                     return a.meta.serial > b.meta.serial;
                   });
  if (static_cast<int64_t>(candidates.size()) > policy.keep) {
    candidates.resize(static_cast<size_t>(std::max<int64_t>(policy.keep, 0)));
  }
  return candidates;
}

void Checkpointer::prune(const RetentionPolicy& policy) const {
  const auto all = list();
  if (all.empty()) return;
  std::vector<std::string> keep{all.back().path};
  for (const auto& c : best(policy)) keep.push_back(c.path);
  for (const auto& c : all) {
    if (std::find(keep.begin(), keep.end(), c.path) != keep.end()) continue;
    std::string error;
    if (!remove_tree(c.path, &error)) {
      MASR_LOG_WARN("checkpoint: cannot delete %s: %s", c.path.c_str(), error.c_str());
    }
  }
}

std::string Checkpointer::read(const CheckpointInfo& checkpoint, const std::string& name) {
  const std::string path = (fs::path(checkpoint.path) / name).string();
  std::string bytes = read_file(path);
  const auto it = checkpoint.meta.checksums.find(name);
  if (it != checkpoint.meta.checksums.end() && crc32_hex(bytes) != it->second) {
    throw_input_error("checkpoint file '" + path + "' is corrupt: its CRC-32 " + crc32_hex(bytes) +
                      " differs from the " + it->second +
                      " recorded in meta.json (delete this checkpoint folder to resume from an "
                      "earlier one)");
  }
  return bytes;
}

}  // namespace masr::train

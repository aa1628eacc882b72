// lib/train/train_logger.cpp
// Appending log lines (flushed each time: a killed run keeps what it logged).
#include "train/train_logger.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace masr::train {

std::vector<EpochRecord> read_epoch_history(const std::string& jsonl_path) {
  std::map<int64_t, EpochRecord> by_epoch;
  std::ifstream in(jsonl_path);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || j.value("kind", "") != "epoch") continue;
    EpochRecord r;
    r.epoch = j.value("epoch", int64_t{0});
    r.step = j.value("step", int64_t{0});
    r.lr = j.value("lr", 0.0);
    r.train_loss = j.value("train_loss", 0.0);
    r.train_audio_seconds = j.value("train_audio_seconds", 0.0);
    r.train_seconds = j.value("train_seconds", 0.0);
    r.peak_gpu_mib = j.value("peak_gpu_mib", 0.0);
    static const std::set<std::string> kTrainKeys = {
        "epoch",          "step", "lr", "train_loss", "train_audio_seconds", "train_seconds",
        "train_audio_per_sec", "peak_gpu_mib"};
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_number() && kTrainKeys.count(it.key()) == 0) {
        r.valid[it.key()] = it.value().get<double>();
      }
    }
    by_epoch[r.epoch] = r;
  }
  std::vector<EpochRecord> out;
  for (auto& [epoch, record] : by_epoch) out.push_back(record);
  return out;
}

TrainLogger::TrainLogger(std::string output_folder, std::string train_log, int64_t resume_epoch)
    : jsonl_path_((std::filesystem::path(output_folder) / "log.jsonl").string()),
      text_path_(std::move(train_log)) {
  for (auto& r : read_epoch_history(jsonl_path_)) {
    if (r.epoch <= resume_epoch) history_.push_back(r);
  }
}

void TrainLogger::append(const std::string& path, const std::string& line) const {
  std::ofstream out(path, std::ios::app);
  out << line << "\n";
  out.flush();
  if (!out) throw_io_error("cannot append to '" + path + "'");
}

void TrainLogger::log_step(int64_t epoch, int64_t step, double train_loss, double lr,
                           double audio_per_sec) {
  nlohmann::json j = {{"kind", "step"}, {"epoch", epoch},
                      {"step", step},   {"train_loss", train_loss},
                      {"lr", lr},       {"audio_sec_per_sec", audio_per_sec}};
  append(jsonl_path_, j.dump());
}

void TrainLogger::log_epoch(const EpochRecord& record) {
  nlohmann::json j = {{"kind", "epoch"},
                      {"epoch", record.epoch},
                      {"step", record.step},
                      {"lr", record.lr},
                      {"train_loss", record.train_loss}};
  for (const auto& [name, value] : record.valid) j[name] = value;
  if (record.train_seconds > 0) {
    j["train_audio_seconds"] = record.train_audio_seconds;
    j["train_seconds"] = record.train_seconds;
    j["train_audio_per_sec"] = record.train_audio_seconds / record.train_seconds;
  }
  if (record.peak_gpu_mib > 0) j["peak_gpu_mib"] = record.peak_gpu_mib;
  append(jsonl_path_, j.dump());
  // SpeechBrain's FileTrainLogger: "epoch: 1, lr: 1.00e-03 - train loss: 2.41 - valid loss: ..."
  char head[128];
  std::snprintf(head, sizeof(head), "epoch: %lld, lr: %.2e, steps: %lld - train loss: %.4g",
                static_cast<long long>(record.epoch), record.lr,
                static_cast<long long>(record.step), record.train_loss);
  std::string line = head;
  const char* sep = " - ";
  for (const auto& [name, value] : record.valid) {
    char item[96];
    std::snprintf(item, sizeof(item), "%svalid %s: %.4g", sep,
                  name == "valid_loss" ? "loss" : name.c_str(), value);
    line += item;
    sep = ", ";
  }
  append(text_path_, line);
  history_.erase(std::remove_if(history_.begin(), history_.end(),
                                [&](const EpochRecord& r) { return r.epoch >= record.epoch; }),
                 history_.end());
  history_.push_back(record);
}

void TrainLogger::log_text(const std::string& line) { append(text_path_, line); }

void LossTotals::add(const at::Tensor& loss) {
  const at::Tensor value = loss.detach().reshape({}).to(at::kDouble);
  const at::Tensor finite = at::isfinite(value);
  // (loss or 0, 1 or 0), added to both rows.
  const at::Tensor entry =
      at::stack({at::where(finite, value, at::zeros_like(value)), finite.to(at::kDouble)});
  if (!sums_.defined()) {
    sums_ = at::zeros({2, 2}, value.options());
    reset_epoch(epoch_start_.sum, epoch_start_.count);
  }
  sums_.add_(entry);
}

LossTotals::Snapshot LossTotals::read() const {
  if (!sums_.defined()) return {epoch_start_, {}};
  const at::Tensor host = sums_.cpu();
  const auto a = host.accessor<double, 2>();
  Snapshot s;
  s.epoch = {a[0][0], static_cast<int64_t>(a[0][1])};
  s.window = {a[1][0], static_cast<int64_t>(a[1][1])};
  return s;
}

void LossTotals::reset_window() {
  if (sums_.defined()) sums_[1].zero_();
}

void LossTotals::reset_epoch(double sum, int64_t count) {
  epoch_start_ = {sum, count};
  if (!sums_.defined()) return;  // the first add() starts from epoch_start_
  // Fills, not read-backs: the sum goes on from `sum` in batch order, as one read back per batch
  // would have summed it.
  sums_[0][0].fill_(sum);
  sums_[0][1].fill_(static_cast<double>(count));
}

}  // namespace masr::train

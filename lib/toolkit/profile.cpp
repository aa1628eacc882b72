// lib/toolkit/profile.cpp
// Starting points are the Mamba-ASR device optimization guide's three profiles
// (docs/runtime.md); memory and core counts measured here adjust them.
#include "toolkit/profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "hparams/hparams.h"

namespace masr::toolkit {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMeanUtteranceSeconds = 12.0;  // LibriSpeech training utterances average ~12 s

std::string fmt(const char* format, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), format, a, b, c);
  return buf;
}

void cpu_profile(const runtime::MachineInfo& m, RuntimeProfile& p) {
  const int cores =
      std::max(1, m.cpu.physical_cores > 0 ? m.cpu.physical_cores : m.cpu.logical_cores);
  p.precision = runtime::Precision::kFp32;
  p.batch_size = 4, p.grad_accumulation_factor = 16, p.max_grad_norm = 1.0;
  p.dynamic_batching = false;
  p.max_batch_length_train = 200, p.max_batch_length_val = 50, p.num_bucket = 50;
  p.intra_op_threads = std::min(cores, 8);
  p.inter_op_threads = std::min(2, p.intra_op_threads);
  // Loader workers take cores from the model: the guide's 2, but at most half of the cores.
  p.num_workers = std::clamp(m.cpu.logical_cores / 2, 1, 2);
  p.memory_budget_bytes =
      static_cast<int64_t>(0.5 * static_cast<double>(m.cpu.memory_available_bytes));
  p.reasons.push_back(fmt("threads: min(%.0f physical cores, 8) intra-op, %.0f inter-op", cores,
                          p.inter_op_threads));
  p.reasons.push_back(
      fmt("memory budget: half of the %.1f GiB available", m.cpu.memory_available_bytes / kGiB));
}

void cuda_profile(const runtime::CudaDeviceInfo& d, int cores, RuntimeProfile& p) {
  p.precision = d.bf16   ? runtime::Precision::kBf16
                : d.fp16 ? runtime::Precision::kFp16
                         : runtime::Precision::kFp32;
  const double gib = static_cast<double>(d.memory_total_bytes) / kGiB;
  // The guide's scaling by GPU memory, keeping the effective batch.
  if (gib < 16) {
    p.batch_size = 8, p.grad_accumulation_factor = 8;
  } else if (gib < 32) {
    p.batch_size = 16, p.grad_accumulation_factor = 4;
  } else if (gib < 64) {
    p.batch_size = 32, p.grad_accumulation_factor = 4;
  } else {
    p.batch_size = 64, p.grad_accumulation_factor = 2;
  }
  p.max_grad_norm = 5.0, p.dynamic_batching = true;
  p.max_batch_length_train = 850, p.max_batch_length_val = 100, p.num_bucket = 200;
  p.num_workers = std::min(16, std::max(1, cores - 1));
  p.intra_op_threads = std::min(std::max(1, cores), 8);
  p.inter_op_threads = std::min(2, p.intra_op_threads);
  p.tf32 = d.tf32, p.cudnn_benchmark = true, p.cuda_alloc_conf = "max_split_size_mb:128";
  p.memory_budget_bytes = static_cast<int64_t>(0.8 * static_cast<double>(d.memory_free_bytes));
  p.reasons.push_back(std::string("precision: ") + runtime::precision_name(p.precision) +
                      " (compute capability " + std::to_string(d.compute_major) + "." +
                      std::to_string(d.compute_minor) + ")");
  p.reasons.push_back(fmt("batch %.0f x accumulation %.0f for %.0f GiB of GPU memory", p.batch_size,
                          p.grad_accumulation_factor, gib));
  p.reasons.push_back(fmt("memory budget: 80%% of the %.1f GiB free", d.memory_free_bytes / kGiB));
}

void mps_profile(const runtime::MachineInfo& m, RuntimeProfile& p) {
  p.precision = runtime::Precision::kFp32;
  p.batch_size = 8, p.grad_accumulation_factor = 8, p.max_grad_norm = 2.0;
  p.num_workers = 4, p.dynamic_batching = true;
  p.max_batch_length_train = 400, p.max_batch_length_val = 50, p.num_bucket = 100;
  p.intra_op_threads = std::min(std::max(1, m.cpu.logical_cores), 8);
  p.inter_op_threads = std::min(2, p.intra_op_threads);
  p.mps_memory_fraction = 0.7;
  p.memory_budget_bytes = static_cast<int64_t>(0.7 * static_cast<double>(m.cpu.memory_total_bytes));
  p.reasons.push_back("memory budget: 0.7 of unified memory (the guide's watermark ratio)");
}

// Caps the batch length so that parameters, gradients, Adam moments and the estimated
// activations fit the budget; a smaller batch raises the accumulation to keep the effective one.
void fit_model(const ModelFacts& model, RuntimeProfile& p) {
  const double budget = static_cast<double>(p.memory_budget_bytes - model.static_train_bytes);
  const double per_s =
      static_cast<double>(std::max<int64_t>(1, model.activation_bytes_per_audio_s));
  const double fits = std::max(10.0, budget / per_s);
  p.reasons.push_back(
      fmt("model: %.3g M parameters, ~%.0f MiB activations per audio second "
          "(estimate) -> %.0f s of audio per batch fit",
          model.parameters / 1e6, per_s / (1 << 20), fits));
  if (fits < p.max_batch_length_train) {
    p.max_batch_length_train = std::floor(fits);
    p.max_batch_length_val = std::min(p.max_batch_length_val, p.max_batch_length_train);
  }
  const int64_t effective = p.effective_batch();
  const auto fitting = static_cast<int64_t>(p.max_batch_length_train / kMeanUtteranceSeconds);
  if (fitting >= 1 && fitting < p.batch_size) {
    p.batch_size = fitting;
    p.grad_accumulation_factor = (effective + fitting - 1) / fitting;
    p.reasons.push_back(
        fmt("batch %.0f (12 s utterances in %.0f s), accumulation %.0f keeps the "
            "effective batch",
            p.batch_size, p.max_batch_length_train, p.grad_accumulation_factor));
  }
}

}  // namespace

RuntimeProfile derive_profile(const runtime::MachineInfo& machine,
                              const runtime::DeviceChoice& device, const ModelFacts* model) {
  RuntimeProfile p;
  p.device = device;
  if (device.is_cuda()) {
    const int index = device.cuda_ordinal();
    for (const auto& d : machine.cuda) {
      if (d.index == index) cuda_profile(d, machine.cpu.logical_cores, p);
    }
  } else if (device.type == runtime::DeviceChoice::Type::kMps) {
    mps_profile(machine, p);
  } else {
    cpu_profile(machine, p);
  }
  if (model != nullptr) fit_model(*model, p);
  return p;
}

nlohmann::json profile_to_json(const RuntimeProfile& p) {
  return {{"device", p.device.str()},
          {"precision", runtime::precision_name(p.precision)},
          {"batch_size", p.batch_size},
          {"grad_accumulation_factor", p.grad_accumulation_factor},
          {"effective_batch", p.effective_batch()},
          {"max_grad_norm", p.max_grad_norm},
          {"num_workers", p.num_workers},
          {"dynamic_batching", p.dynamic_batching},
          {"max_batch_length_train", p.max_batch_length_train},
          {"max_batch_length_val", p.max_batch_length_val},
          {"num_bucket", p.num_bucket},
          {"intra_op_threads", p.intra_op_threads},
          {"inter_op_threads", p.inter_op_threads},
          {"tf32", p.tf32},
          {"cudnn_benchmark", p.cudnn_benchmark},
          {"cuda_alloc_conf", p.cuda_alloc_conf},
          {"mps_memory_fraction", p.mps_memory_fraction},
          {"memory_budget_bytes", p.memory_budget_bytes},
          {"reasons", p.reasons}};
}

RuntimeProfile profile_from_json(const nlohmann::json& j) {
  RuntimeProfile p;
  p.device = runtime::parse_device(j.value("device", p.device.str()));
  p.precision = runtime::parse_precision(
      j.value("precision", std::string(runtime::precision_name(p.precision))), "profile: precision",
      {runtime::Precision::kFp32, runtime::Precision::kBf16, runtime::Precision::kFp16});
  p.batch_size = j.value("batch_size", p.batch_size);
  p.grad_accumulation_factor = j.value("grad_accumulation_factor", p.grad_accumulation_factor);
  p.max_grad_norm = j.value("max_grad_norm", p.max_grad_norm);
  p.num_workers = j.value("num_workers", p.num_workers);
  p.dynamic_batching = j.value("dynamic_batching", p.dynamic_batching);
  p.max_batch_length_train = j.value("max_batch_length_train", p.max_batch_length_train);
  p.max_batch_length_val = j.value("max_batch_length_val", p.max_batch_length_val);
  p.num_bucket = j.value("num_bucket", p.num_bucket);
  p.intra_op_threads = j.value("intra_op_threads", p.intra_op_threads);
  p.inter_op_threads = j.value("inter_op_threads", p.inter_op_threads);
  p.tf32 = j.value("tf32", p.tf32);
  p.cudnn_benchmark = j.value("cudnn_benchmark", p.cudnn_benchmark);
  p.cuda_alloc_conf = j.value("cuda_alloc_conf", p.cuda_alloc_conf);
  p.mps_memory_fraction = j.value("mps_memory_fraction", p.mps_memory_fraction);
  p.memory_budget_bytes = j.value("memory_budget_bytes", p.memory_budget_bytes);
  p.reasons = j.value("reasons", p.reasons);
  return p;
}

std::string format_profile(const RuntimeProfile& p) {
  std::ostringstream out;
  auto row = [&](const char* name, const std::string& value) {
    char line[256];
    std::snprintf(line, sizeof(line), "%-26s %s\n", name, value.c_str());
    out << line;
  };
  auto num = [](double v) { return fmt("%g", v); };
  row("device", p.device.str());
  row("precision", runtime::precision_name(p.precision));
  row("batch_size", num(p.batch_size));
  row("grad_accumulation_factor",
      num(p.grad_accumulation_factor) + " (effective batch " + num(p.effective_batch()) + ")");
  row("max_grad_norm", num(p.max_grad_norm));
  row("num_workers", num(p.num_workers));
  row("dynamic_batching", p.dynamic_batching ? "True" : "False");
  row("max_batch_length_train", num(p.max_batch_length_train) + " s");
  row("max_batch_length_val", num(p.max_batch_length_val) + " s");
  row("num_bucket", num(p.num_bucket));
  row("threads", num(p.intra_op_threads) + " intra-op, " + num(p.inter_op_threads) + " inter-op");
  row("TF32", p.tf32 ? "on" : "off");
  row("cudnn benchmark", p.cudnn_benchmark ? "on" : "off");
  row("allocator",
      p.cuda_alloc_conf.empty() ? "-" : "PYTORCH_CUDA_ALLOC_CONF=" + p.cuda_alloc_conf);
  if (p.mps_memory_fraction > 0) row("MPS memory fraction", num(p.mps_memory_fraction));
  row("memory budget", fmt("%.2f GiB", p.memory_budget_bytes / kGiB));
  for (const auto& reason : p.reasons) row("  because", reason);
  return out.str();
}

std::string profile_to_override_yaml(const RuntimeProfile& p, const hparams::Hparams* hp) {
  std::ostringstream out;
  out << "# mamba-asr runtime profile for " << p.device.str() << "; pass back with\n"
      << "#   mamba-asr train HPARAMS --overrides \"$(mamba-asr detect --hparams HPARAMS "
         "--yaml)\"\n";
  auto key = [&](const std::string& name, const std::string& value) {
    const bool live = hp == nullptr || hp->find(name) != nullptr;
    out << (live ? "" : "# (not in the hparams file) ") << name << ": " << value << "\n";
  };
  auto num = [](double v) { return fmt("%g", v); };
  key("precision", runtime::precision_name(p.precision));
  key("batch_size", num(p.batch_size));
  key("grad_accumulation_factor", num(p.grad_accumulation_factor));
  key("max_grad_norm", num(p.max_grad_norm));
  key("num_workers", num(p.num_workers));
  key("dynamic_batching", p.dynamic_batching ? "True" : "False");
  key("max_batch_length_train", num(p.max_batch_length_train));
  // The recipes spell the validation key two ways.
  const bool short_val = hp == nullptr || hp->find("max_batch_len_val") != nullptr ||
                         hp->find("max_batch_length_val") == nullptr;
  key(short_val ? "max_batch_len_val" : "max_batch_length_val", num(p.max_batch_length_val));
  key("num_bucket", num(p.num_bucket));
  out << "# process settings (not hparams): --threads " << p.intra_op_threads << " (inter-op "
      << p.inter_op_threads << ")";
  if (!p.cuda_alloc_conf.empty()) out << ", PYTORCH_CUDA_ALLOC_CONF=" << p.cuda_alloc_conf;
  out << ", TF32 " << (p.tf32 ? "on" : "off") << ", cudnn benchmark "
      << (p.cudnn_benchmark ? "on" : "off") << "\n";
  return out.str();
}

}  // namespace masr::toolkit

// lib/toolkit/profile.h
// The runtime profile: the settings a model should train and decode with on a device (precision,
// batch, accumulation, batch length, workers, threads, TF32, allocator), derived from the
// design documents' platform profiles, measured memory and the model's size.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/machine.h"
#include "runtime/precision.h"
#include "toolkit/model_facts.h"

namespace masr::hparams {
class Hparams;
}

namespace masr::toolkit {

struct RuntimeProfile {
  runtime::DeviceChoice device = runtime::DeviceChoice::cpu();  // resolved: cpu | cuda:N | mps
  runtime::Precision precision = runtime::Precision::kFp32;     // fp32 | bf16 | fp16
  int64_t batch_size = 4;
  int64_t grad_accumulation_factor = 16;  // batch_size * factor = the effective batch
  double max_grad_norm = 1.0;
  int num_workers = 2;
  bool dynamic_batching = false;
  double max_batch_length_train = 200.0;  // seconds of audio per dynamic batch
  double max_batch_length_val = 50.0;
  int64_t num_bucket = 50;
  int intra_op_threads = 1;
  int inter_op_threads = 1;
  bool tf32 = false;
  bool cudnn_benchmark = false;
  std::string cuda_alloc_conf;       // PYTORCH_CUDA_ALLOC_CONF, e.g. "max_split_size_mb:128"
  double mps_memory_fraction = 0;    // MPS high-watermark ratio; 0 when not MPS
  int64_t memory_budget_bytes = 0;   // what the batch length was sized against
  std::vector<std::string> reasons;  // why each derived value is what it is

  int64_t effective_batch() const { return batch_size * grad_accumulation_factor; }
};

// The profile for `device` (a resolved --device: cpu, cuda:N, mps) on `machine`; with a model,
// the batch length is capped so that its estimated training memory fits.
RuntimeProfile derive_profile(const runtime::MachineInfo& machine,
                              const runtime::DeviceChoice& device, const ModelFacts* model);

nlohmann::json profile_to_json(const RuntimeProfile& profile);
// Missing fields keep defaults; a device or precision that is none is an error.
RuntimeProfile profile_from_json(const nlohmann::json& j);
std::string format_profile(const RuntimeProfile& profile);  // a table for people

// The profile as top-level hparams overrides for `mamba-asr train HPARAMS --overrides "..."`.
// With `hp`, only keys the file has are live (overrides must match existing keys, as in
// SpeechBrain); the others, and the process settings (threads, TF32, allocator), are comments.
std::string profile_to_override_yaml(const RuntimeProfile& profile, const hparams::Hparams* hp);

}  // namespace masr::toolkit

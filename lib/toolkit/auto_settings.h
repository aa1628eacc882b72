// lib/toolkit/auto_settings.h
// `auto` in hparams (or in their command-line overrides) for the runtime knobs: precision,
// batch_size, grad_accumulation_factor, num_workers, dynamic_batching, max_batch_length_train,
// max_batch_len_val / max_batch_length_val, num_bucket, max_grad_norm and threads. They come
// from the cached plan when one matches, otherwise from the detect profile; nothing is measured.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/machine.h"
#include "toolkit/profile.h"

namespace masr::hparams {
class Hparams;
}

namespace masr::toolkit {

using Overrides = std::vector<std::pair<std::string, std::string>>;

// The knobs above whose value is `auto`: the last override of a key wins over the file.
std::vector<std::string> auto_keys(const std::string& hparams_file, const Overrides& overrides);

// The value of `key` in `profile`, as override text ("fp32", "16", "True"); empty when the key
// is not a runtime knob.
std::string profile_value(const RuntimeProfile& profile, const std::string& key);

struct AutoResolution {
  Overrides overrides;  // the auto keys with their values, to append to the user's overrides
  int threads = 0;      // intra-op threads when `threads` was auto (0: not asked)
  std::string source;   // "plan <path>" or "profile"
  RuntimeProfile profile;
};

// Resolves the auto keys of `hparams_file` for `device` (resolved). Explicit values are left
// alone. No auto key: returns an empty resolution without loading anything.
AutoResolution resolve_auto(const std::string& hparams_file, const Overrides& overrides,
                            const runtime::DeviceChoice& device, bool threads_auto = false);

// The hparams loaded for runtime tools: data paths may be placeholders and auto keys are given
// the profile's values so that the file resolves.
hparams::Hparams load_hparams_for_runtime(const std::string& hparams_file,
                                          const Overrides& overrides,
                                          const runtime::MachineInfo& machine,
                                          const runtime::DeviceChoice& device);

// The threads for decoding `model_hparams_yaml` (AsrModel::hparams_yaml) on `device`: the cached
// plan's decode threads when a plan for this model exists, else the profile's; `source` says which.
int auto_decode_threads(const std::string& model_hparams_yaml, const runtime::DeviceChoice& device,
                        std::string* source);

}  // namespace masr::toolkit

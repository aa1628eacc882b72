// lib/runtime/registration.cpp
#include "runtime/registration.h"

#include <ATen/Context.h>

#include "data/benchmarks.h"
#include "decode/decode_benchmark.h"
#include "features/augment_registration.h"
#include "features/registration.h"
#include "models/register.h"
#include "ops/benchmarks.h"
#include "runtime/encoder_length_bench.h"
#include "runtime/step_bench.h"
#include "text/tokenizer.h"

namespace masr::runtime {
namespace {

// `!apply:torch.manual_seed [N]`: seeds LibTorch's generators (CPU and CUDA) at load time, as
// SpeechBrain does before any object with parameters is built, and records N for the runtime.
void register_seed(hparams::Registry& registry) {
  hparams::ClassInfo seed = *registry.find("torch.manual_seed");
  seed.apply = [](const hparams::Args& args) {
    const int64_t value = args.get("seed").as_int();
    hparams::record_manual_seed(value);
    at::manual_seed(static_cast<uint64_t>(value));
    return hparams::Value();
  };
  registry.add(std::move(seed));
}

}  // namespace

void register_all_classes(hparams::Registry& registry) {
  register_seed(registry);
  data::register_data_benchmarks();
  decode::register_decode_benchmarks();
  features::register_augment_classes(registry);
  features::register_features_classes(registry);
  ops::register_ops_benchmarks();
  register_step_benchmarks();
  models::register_model_classes(registry);
  register_encoder_length_benchmark();  // extends models' "encoder" benchmark: after it
  text::register_text_classes(registry);
}

}  // namespace masr::runtime

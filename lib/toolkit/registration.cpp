// lib/toolkit/registration.cpp
#include "toolkit/registration.h"

#include "models/registration.h"
#include "toolkit/benchmarks.h"
#include "toolkit/encoder_length_bench.h"
#include "toolkit/long_audio_bench.h"
#include "toolkit/step_bench.h"
#include "toolkit/stream_bench.h"

namespace masr::toolkit {

void register_all(hparams::Registry& registry) {
  models::register_all_classes(registry);
  register_loader_bench();
  register_decode_bench();
  register_features_bench();
  register_scan_bench();
  register_step_benchmarks();
  register_stream_bench();
  register_long_audio_bench();
  register_encoder_bench();
  register_encoder_length_benchmark();  // extends the "encoder" benchmark: after it
}

}  // namespace masr::toolkit

// lib/models/encoder_benchmark.h
// Registers the "encoder" benchmark of `mamba-asr bench` (encoder forward speed on CPU).
#pragma once

namespace masr::models {

void register_encoder_benchmark();

}  // namespace masr::models

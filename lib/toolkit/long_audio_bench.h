// lib/toolkit/long_audio_bench.h
// `mamba-asr bench long-audio`: a trained model decodes recordings of growing length in chunks,
// as `mamba-asr decode` does; peak memory and RTF per length, and a memory bound that fails the
// run (--memory-limit), so "memory does not grow with the recording" is checked, not assumed.
#pragma once

namespace masr::toolkit {

void register_long_audio_bench();

}  // namespace masr::toolkit

// lib/toolkit/stream_bench.h
// `mamba-asr bench stream`: streaming recognition (decode/streaming_recognizer.h) on the CPU
// with 1 and 2 threads and chunks of 100 and 320 ms: first-token and end-of-speech latency
// percentiles and the real-time factor.
#pragma once

namespace masr::toolkit {

void register_stream_bench();

}  // namespace masr::toolkit

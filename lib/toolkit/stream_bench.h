// lib/toolkit/stream_bench.h
// `mamba-asr bench stream`: streaming recognition (decode/streaming_recognizer.h) on the CPU
// with 1 and 2 threads and chunks of 100 and 320 ms: first-token and end-of-speech latency
// percentiles and the real-time factor.
#pragma once

#include <string>
#include <vector>

namespace masr::toolkit {

void register_stream_bench();

// The audio of the benchmarks that take --input clips (stream, long-audio): those files, or with
// none the bundled model's three examples (paths from the repository root), at `rate`.
std::vector<std::vector<float>> bench_clips(std::vector<std::string> files, int rate);

}  // namespace masr::toolkit

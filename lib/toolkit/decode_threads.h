// lib/toolkit/decode_threads.h
// `decode --threads auto` without a cached plan: the thread count measured on the spot, so that
// a loaded machine (where more threads can be slower than one) gets what is fastest now.
#pragma once

#include <string>

namespace masr::decode {
class Recognizer;
}

namespace masr::toolkit {

// Times `recognizer` transcribing 1 s of low noise with 1, 2, 4, ... up to `max_threads` threads
// (one warm-up, then the median of 3 each) and returns the fewest threads within 5 % of the
// fastest. Leaves LibTorch at `max_threads` (the caller applies the result); `report` gets the
// timings, e.g. "1 thread 41 ms, 2 threads 30 ms".
int measure_decode_threads(decode::Recognizer& recognizer, int max_threads, std::string* report);

}  // namespace masr::toolkit

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

// The `procs_running` count of a /proc/stat text (runnable threads on the whole machine, this
// one included); -1 when absent.
int procs_running_of(const std::string& proc_stat);

// CPUs no other process's runnable thread wants now: `cpus` less the fewest runnable threads of
// other processes over a few readings of /proc/stat (and /proc/self/task) 2 ms apart (at least 1;
// `cpus` where /proc is absent).
// On a machine whose cores are all busy, timing 2 threads costs more than the decode itself:
// `decode --threads auto` times only up to this many.
int idle_cpus(int cpus);

}  // namespace masr::toolkit

// lib/runtime/cpu_affinity.h
// Which CPUs a process runs on. Data-parallel ranks of one host each take their own block of the
// cores, as torchrun --numa-binding or a job scheduler's per-task binding do: a rank's loader
// workers then never run on the core its training thread wants, and no thread migrates between
// the ranks' caches. Linux only; elsewhere the functions report nothing and change nothing.
#pragma once

#include <string>
#include <vector>

namespace masr::runtime {

// The CPUs this process may run on now (sched_getaffinity), ascending; empty where unknown.
std::vector<int> allowed_cpus();

// Where a CPU sits: its package (socket) and its physical core there. CPUs of one core are
// hyperthreads that share the core's execution units.
struct CpuPlace {
  int package = 0;
  int core = 0;
};

// The place of each CPU in `cpus`, from /sys/devices/system/cpu/cpuN/topology; a CPU whose
// topology is unreadable is its own core on package 0.
std::vector<CpuPlace> cpu_places(const std::vector<int>& cpus);

// Local rank `rank` of `ranks`' block of `cpus` (places[i] is cpus[i]'s place): whole physical
// cores, sorted by package and core, dealt out in contiguous runs (the first cores % ranks runs
// one core longer), each with all its hyperthreads, so that no two ranks share a core. Fewer
// cores than ranks: contiguous runs of the CPU list instead; fewer CPUs than ranks: all of them.
std::vector<int> rank_cpu_share(const std::vector<int>& cpus, const std::vector<CpuPlace>& places,
                                int rank, int ranks);

// Restricts every thread of this process, and the threads it starts later, to `cpus`. False
// when the system refused for some thread (nothing is undone: the caller reports it).
bool bind_process_to(const std::vector<int>& cpus);

// "0-15", "0-3,8-11": a CPU list as taskset and /proc print them.
std::string cpu_list_string(const std::vector<int>& cpus);

}  // namespace masr::runtime

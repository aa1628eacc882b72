// lib/runtime/cpu_affinity.cpp
#include "runtime/cpu_affinity.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#ifdef __linux__
#include <sched.h>
#include <sys/types.h>
#endif

namespace masr::runtime {

std::vector<int> allowed_cpus() {
  std::vector<int> out;
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
#endif
  return out;
}

std::vector<CpuPlace> cpu_places(const std::vector<int>& cpus) {
  std::vector<CpuPlace> out;
  int next_unknown = 1 << 20;  // unreadable topology: a core of its own
  for (int cpu : cpus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    const auto read_int = [&](const char* name, int fallback) {
      std::ifstream in(dir + name);
      int value = 0;
      return (in >> value) ? value : fallback;
    };
    CpuPlace place;
    place.package = read_int("physical_package_id", 0);
    place.core = read_int("core_id", -1);
    if (place.core < 0) place.core = next_unknown++;
    out.push_back(place);
  }
  return out;
}

namespace {

// Contiguous runs of `items` for rank `rank` of `ranks`, the first size % ranks one longer.
template <typename T>
std::vector<T> contiguous_share(const std::vector<T>& items, int rank, int ranks) {
  const int n = static_cast<int>(items.size());
  const int base = n / ranks, extra = n % ranks;
  const int begin = rank * base + std::min(rank, extra);
  const int size = base + (rank < extra ? 1 : 0);
  return std::vector<T>(items.begin() + begin, items.begin() + begin + size);
}

}  // namespace

std::vector<int> rank_cpu_share(const std::vector<int>& cpus, const std::vector<CpuPlace>& places,
                                int rank, int ranks) {
  const int n = static_cast<int>(cpus.size());
  if (ranks <= 1 || n < ranks || rank < 0 || rank >= ranks) return cpus;
  // The physical cores, in (package, core) order, each with its CPUs.
  std::map<std::pair<int, int>, std::vector<int>> cores;
  for (size_t i = 0; i < cpus.size(); ++i) {
    const CpuPlace place = i < places.size() ? places[i] : CpuPlace{0, cpus[i]};
    cores[{place.package, place.core}].push_back(cpus[i]);
  }
  if (static_cast<int>(cores.size()) < ranks) return contiguous_share(cpus, rank, ranks);
  std::vector<std::vector<int>> ordered;
  for (auto& [place, members] : cores) ordered.push_back(members);
  std::vector<int> out;
  for (const auto& members : contiguous_share(ordered, rank, ranks)) {
    out.insert(out.end(), members.begin(), members.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool bind_process_to(const std::vector<int>& cpus) {
#ifdef __linux__
  if (cpus.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  // sched_setaffinity binds one thread; threads started later inherit their creator's mask, so
  // binding every thread there is now binds the whole process.
  bool ok = true;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const pid_t tid = static_cast<pid_t>(std::atol(entry.path().filename().c_str()));
    if (tid > 0 && sched_setaffinity(tid, sizeof(set), &set) != 0) ok = false;
  }
  return ok && !error;
#else
  (void)cpus;
  return false;
#endif
}

std::string cpu_list_string(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace masr::runtime

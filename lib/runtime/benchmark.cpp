// lib/runtime/benchmark.cpp
#include "runtime/benchmark.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "core/error.h"

namespace masr::runtime {

double BenchResult::percentile(double p) const {
  if (seconds.empty()) return 0.0;
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const double position =
      std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lower = static_cast<size_t>(position);
  const size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + fraction * (sorted[upper] - sorted[lower]);
}

double BenchResult::median() const { return percentile(50.0); }

BenchResult measure(const std::string& name, const BenchSettings& settings,
                    const std::function<void()>& fn) {
  if (settings.repeat < 1) throw_input_error("bench: --repeat must be at least 1");
  for (int i = 0; i < settings.warmup; ++i) fn();
  BenchResult result;
  result.name = name;
  for (int i = 0; i < settings.repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    const auto stop = std::chrono::steady_clock::now();
    result.seconds.push_back(std::chrono::duration<double>(stop - start).count());
  }
  return result;
}

namespace {
std::vector<Benchmark>& registry() {
  static std::vector<Benchmark> all;
  return all;
}
}  // namespace

void register_benchmark(Benchmark benchmark) {
  for (auto& existing : registry()) {
    if (existing.name == benchmark.name) {
      existing = std::move(benchmark);
      return;
    }
  }
  registry().push_back(std::move(benchmark));
}

const std::vector<Benchmark>& benchmarks() { return registry(); }

std::string format_results(const std::vector<BenchResult>& results, bool json) {
  std::ostringstream out;
  if (json) {
    for (const auto& r : results) {
      nlohmann::json j = {{"name", r.name},
                          {"repeat", r.seconds.size()},
                          {"median_s", r.median()},
                          {"p10_s", r.percentile(10)},
                          {"p90_s", r.percentile(90)},
                          {"min_s", r.percentile(0)},
                          {"max_s", r.percentile(100)},
                          {"work", r.work},
                          {"work_unit", r.work_unit},
                          {"throughput_per_s", r.throughput()},
                          {"note", r.note}};
      out << j.dump() << "\n";
    }
    return out.str();
  }
  char line[512];
  std::snprintf(line, sizeof(line), "%-34s %12s %23s %18s  %s\n", "benchmark", "median",
                "p10 - p90", "throughput", "note");
  out << line;
  for (const auto& r : results) {
    char throughput[64] = "";
    if (r.work > 0) {
      std::snprintf(throughput, sizeof(throughput), "%.4g %s/s", r.throughput(),
                    r.work_unit.c_str());
    }
    std::snprintf(line, sizeof(line), "%-34s %10.3f ms %10.3f - %8.3f ms %18s  %s\n",
                  r.name.c_str(), r.median() * 1e3, r.percentile(10) * 1e3, r.percentile(90) * 1e3,
                  throughput, r.note.c_str());
    out << line;
  }
  return out.str();
}

}  // namespace masr::runtime

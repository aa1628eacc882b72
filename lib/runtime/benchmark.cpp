// lib/runtime/benchmark.cpp
#include "runtime/benchmark.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
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

namespace {

std::string metric_text(const BenchResult& r) {
  std::string out;
  char buf[96];
  for (const auto& [name, value] : r.metrics) {
    const size_t stem = name.size() - std::min<size_t>(name.size(), 6);
    if (name.compare(stem, std::string::npos, "_bytes") == 0) {  // peak_bytes: "peak 1.0 MiB"
      std::snprintf(buf, sizeof(buf), "%s %.1f MiB", name.substr(0, stem).c_str(),
                    value / (1 << 20));
    } else {
      std::snprintf(buf, sizeof(buf), "%s %.4g", name.c_str(), value);
    }
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out;
}

// The note, and the missed bound when there is one.
std::string note_text(const BenchResult& r) {
  return r.failed.empty() ? r.note : r.note + (r.note.empty() ? "" : "; ") + "FAILED: " + r.failed;
}

std::string throughput_text(const BenchResult& r) {
  if (r.work <= 0) return "";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4g %s/s", r.throughput(), r.work_unit.c_str());
  return buf;
}

std::string json_lines(const std::vector<BenchResult>& results) {
  std::ostringstream out;
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
    for (const auto& [name, value] : r.metrics) j[name] = value;
    if (!r.failed.empty()) j["failed"] = r.failed;
    out << j.dump() << "\n";
  }
  return out.str();
}

// CSV quoting (RFC 4180): fields with commas or quotes are quoted, quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv(const std::vector<BenchResult>& results) {
  std::vector<std::string> metric_names;  // the union, in first-seen order
  for (const auto& r : results) {
    for (const auto& m : r.metrics) {
      if (std::find(metric_names.begin(), metric_names.end(), m.first) == metric_names.end()) {
        metric_names.push_back(m.first);
      }
    }
  }
  std::ostringstream out;
  out << std::setprecision(9);  // byte counts stay integers, times keep ns resolution
  out << "name,repeat,median_s,p10_s,p90_s,work,work_unit,throughput_per_s";
  for (const auto& m : metric_names) out << "," << m;
  out << ",note\n";
  for (const auto& r : results) {
    out << csv_field(r.name) << "," << r.seconds.size() << "," << r.median() << ","
        << r.percentile(10) << "," << r.percentile(90) << "," << r.work << ","
        << csv_field(r.work_unit) << "," << r.throughput();
    for (const auto& m : metric_names) {
      out << ",";
      for (const auto& [name, value] : r.metrics) {
        if (name == m) out << value;
      }
    }
    out << "," << csv_field(note_text(r)) << "\n";
  }
  return out.str();
}

std::string markdown(const std::vector<BenchResult>& results) {
  std::ostringstream out;
  out << "| benchmark | median ms | p10 - p90 ms | throughput | metrics | note |\n"
      << "|---|---:|---:|---:|---|---|\n";
  char buf[128];
  for (const auto& r : results) {
    std::snprintf(buf, sizeof(buf), "%.3f | %.3f - %.3f", r.median() * 1e3, r.percentile(10) * 1e3,
                  r.percentile(90) * 1e3);
    out << "| " << r.name << " | " << buf << " | " << throughput_text(r) << " | " << metric_text(r)
        << " | " << note_text(r) << " |\n";
  }
  return out.str();
}

std::string table(const std::vector<BenchResult>& results) {
  std::ostringstream out;
  char line[768];
  std::snprintf(line, sizeof(line), "%-34s %12s %23s %18s  %s\n", "benchmark", "median",
                "p10 - p90", "throughput", "note");
  out << line;
  for (const auto& r : results) {
    const std::string metrics = metric_text(r);
    std::snprintf(line, sizeof(line), "%-34s %10.3f ms %10.3f - %8.3f ms %18s  %s%s%s\n",
                  r.name.c_str(), r.median() * 1e3, r.percentile(10) * 1e3, r.percentile(90) * 1e3,
                  throughput_text(r).c_str(), note_text(r).c_str(), metrics.empty() ? "" : "; ",
                  metrics.c_str());
    out << line;
  }
  return out.str();
}

}  // namespace

std::string format_results(const std::vector<BenchResult>& results, ResultFormat format) {
  switch (format) {
    case ResultFormat::kJson:
      return json_lines(results);
    case ResultFormat::kCsv:
      return csv(results);
    case ResultFormat::kMarkdown:
      return markdown(results);
    case ResultFormat::kTable:
      break;
  }
  return table(results);
}

std::string format_results(const std::vector<BenchResult>& results, bool json) {
  return format_results(results, json ? ResultFormat::kJson : ResultFormat::kTable);
}

}  // namespace masr::runtime

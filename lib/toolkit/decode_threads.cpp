// lib/toolkit/decode_threads.cpp
#include "toolkit/decode_threads.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "decode/recognizer.h"

namespace masr::toolkit {

int measure_decode_threads(decode::Recognizer& recognizer, int max_threads, std::string* report) {
  max_threads = std::max(1, max_threads);
  // Noise rather than silence, so that the search does the work speech would ask of it.
  std::vector<float> audio(static_cast<size_t>(recognizer.sample_rate()));
  uint32_t state = 1;
  for (float& s : audio) {
    state = state * 1664525u + 1013904223u;
    s = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.02f;
  }
  const std::vector<const std::vector<float>*> batch = {&audio};
  std::vector<std::pair<int, double>> medians;  // (threads, seconds)
  for (int threads = 1;; threads = std::min(threads * 2, max_threads)) {
    at::set_num_threads(threads);
    recognizer.transcribe(batch);  // warm-up
    std::vector<double> seconds;
    for (int k = 0; k < 3; ++k) {
      const auto start = std::chrono::steady_clock::now();
      recognizer.transcribe(batch);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    medians.emplace_back(threads, seconds[1]);
    if (threads == max_threads) break;
  }
  at::set_num_threads(max_threads);
  double fastest = medians.front().second;
  for (const auto& [threads, s] : medians) fastest = std::min(fastest, s);
  int best = max_threads;
  for (const auto& [threads, s] : medians) {
    if (s <= fastest * 1.05) {
      best = threads;
      break;
    }
  }
  if (report != nullptr) {
    report->clear();
    for (const auto& [threads, s] : medians) {
      char item[64];
      std::snprintf(item, sizeof item, "%s%d thread%s %.0f ms", report->empty() ? "" : ", ",
                    threads, threads == 1 ? "" : "s", 1000.0 * s);
      *report += item;
    }
  }
  return best;
}

int procs_running_of(const std::string& proc_stat) {
  std::istringstream in(proc_stat);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("procs_running ", 0) == 0) {
      try {
        return std::stoi(line.substr(14));
      } catch (const std::exception&) {
        return -1;
      }
    }
  }
  return -1;
}

namespace {

// Threads of this process that are runnable now (state R in /proc/self/task/*/stat).
int own_running_threads() {
  int running = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream stat(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // "pid (comm) S ...": the state follows the last ')' (comm may hold spaces or parentheses).
    const size_t close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'R') ++running;
  }
  return running;
}

}  // namespace

int idle_cpus(int cpus) {
  cpus = std::max(1, cpus);
  int fewest_others = -1;
  for (int k = 0; k < 5; ++k) {
    if (k > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::ifstream file("/proc/stat");
    if (!file) return cpus;
    std::stringstream text;
    text << file.rdbuf();
    const int running = procs_running_of(text.str());
    if (running < 0) return cpus;
    // Runnable threads of other processes: this process's own (its readers, a pool still
    // winding down) do not count against it.
    const int others = std::max(0, running - std::max(1, own_running_threads()));
    fewest_others = fewest_others < 0 ? others : std::min(fewest_others, others);
  }
  return std::max(1, cpus - fewest_others);
}

}  // namespace masr::toolkit

// lib/train/step_profile.cpp
// CUDA events and the sync-debug hook are compiled only in CUDA builds (MASR_WITH_CUDA).
#include "train/step_profile.h"

#include <c10/util/Backtrace.h>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace masr::train {
namespace {

thread_local StepProfile* active_profile = nullptr;

// CPU time of the threads that pace a step, from Linux's /proc/<pid>/task/<tid>/schedstat: the
// nanoseconds a thread ran and the nanoseconds it waited, runnable, for a CPU. The calling
// (training) thread, and LibTorch's autograd device threads ("pt_autograd_*"), which run a CUDA
// backward. A thread that waits for a CPU while its GPU idles makes its rank the straggler of a
// data-parallel step (bench/results/2026-11-28-h200-x4-scaling.md).
struct ThreadTimes {
  double train_run_ms = 0, train_wait_ms = 0, autograd_run_ms = 0, autograd_wait_ms = 0;
};

bool read_schedstat(const std::string& path, double& run_ms, double& wait_ms) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  unsigned long long run = 0, wait = 0;
  const bool ok = std::fscanf(f, "%llu %llu", &run, &wait) == 2;
  std::fclose(f);
  if (ok) {
    run_ms = static_cast<double>(run) / 1e6;
    wait_ms = static_cast<double>(wait) / 1e6;
  }
  return ok;
}

ThreadTimes thread_times() {
  ThreadTimes t;
#ifdef __linux__
  namespace fs = std::filesystem;
  const std::string self = std::to_string(static_cast<long long>(::syscall(SYS_gettid)));
  std::error_code ec;
  for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string tid = it->path().filename().string();
    double run = 0, wait = 0;
    if (tid == self) {
      if (read_schedstat(it->path().string() + "/schedstat", run, wait)) {
        t.train_run_ms += run;
        t.train_wait_ms += wait;
      }
      continue;
    }
    std::FILE* f = std::fopen((it->path().string() + "/comm").c_str(), "r");
    if (f == nullptr) continue;
    char name[32] = {0};
    const bool named = std::fgets(name, sizeof(name), f) != nullptr;
    std::fclose(f);
    if (named && std::string(name).rfind("pt_autograd", 0) == 0 &&
        read_schedstat(it->path().string() + "/schedstat", run, wait)) {
      t.autograd_run_ms += run;
      t.autograd_wait_ms += wait;
    }
  }
#endif
  return t;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

struct StepProfile::State {
  bool cuda = false;
  std::vector<std::string> names;                  // phases in order of first appearance
  std::vector<std::vector<double>> ms;             // [phase][step]
  std::vector<std::vector<double>> host_ms;        // [phase][step], host clock
  std::vector<double> step_ms, step_host_ms;       // [step]
  // [step]: CPU time run and waited for by the training and autograd threads (thread_times).
  std::vector<double> train_run_ms, train_wait_ms, autograd_run_ms, autograd_wait_ms;
  ThreadTimes times_at_begin;
  std::vector<double> syncs;                       // [phase], summed over steps
  std::map<std::string, int> sync_sites;           // "phase: call stack" -> count
  // The running step: boundary i opens phase marks[i] (the last boundary closes the step).
  std::vector<int> marks;
  std::vector<std::chrono::steady_clock::time_point> clock;
#ifdef MASR_WITH_CUDA
  std::vector<at::cuda::CUDAEvent> events;  // reused from step to step
#endif
  bool open = false;
  std::mutex mutex;  // count_sync may come from another thread

  int index_of(const char* name) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    names.emplace_back(name);
    ms.emplace_back(step_ms.size(), 0.0);  // earlier steps spent nothing in it
    host_ms.emplace_back(step_ms.size(), 0.0);
    syncs.push_back(0.0);
    return static_cast<int>(names.size() - 1);
  }

  void boundary(int phase) {
    const size_t k = marks.size();
    marks.push_back(phase);
    if (clock.size() <= k) clock.resize(k + 1);
    clock[k] = std::chrono::steady_clock::now();
#ifdef MASR_WITH_CUDA
    if (cuda) {
      while (events.size() <= k) events.emplace_back(cudaEventDefault);
      events[k].record();
    }
#endif
  }

  double host_elapsed_ms(size_t from, size_t to) const {
    return std::chrono::duration<double, std::milli>(clock[to] - clock[from]).count();
  }

  double elapsed_ms(size_t from, size_t to) {
#ifdef MASR_WITH_CUDA
    if (cuda) return static_cast<double>(events[from].elapsed_time(events[to]));
#endif
    return host_elapsed_ms(from, to);
  }
};

StepProfile::StepProfile(const at::Device& device) : state_(std::make_unique<State>()) {
  state_->cuda = device.is_cuda();
#ifndef MASR_WITH_CUDA
  state_->cuda = false;
#endif
}

StepProfile::~StepProfile() = default;

void StepProfile::begin_step(const char* first) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.marks.clear();
  s.open = true;
  s.times_at_begin = thread_times();
  s.boundary(s.index_of(first));
}

void StepProfile::phase(const char* name) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.open) return;
  s.boundary(s.index_of(name));
}

bool StepProfile::in_step() const { return state_->open; }

void StepProfile::discard_step() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->open = false;
  state_->marks.clear();
}

void StepProfile::end_step() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.open) return;
  s.boundary(-1);
  s.open = false;
#ifdef MASR_WITH_CUDA
  if (s.cuda) s.events[s.marks.size() - 1].synchronize();
#endif
  for (auto& column : s.ms) column.push_back(0.0);
  for (auto& column : s.host_ms) column.push_back(0.0);
  double total = 0.0, host_total = 0.0;
  for (size_t k = 0; k + 1 < s.marks.size(); ++k) {
    const double t = s.elapsed_ms(k, k + 1), host = s.host_elapsed_ms(k, k + 1);
    s.ms[static_cast<size_t>(s.marks[k])].back() += t;
    s.host_ms[static_cast<size_t>(s.marks[k])].back() += host;
    total += t;
    host_total += host;
  }
  s.step_ms.push_back(total);
  s.step_host_ms.push_back(host_total);
  const ThreadTimes now = thread_times(), &then = s.times_at_begin;
  s.train_run_ms.push_back(now.train_run_ms - then.train_run_ms);
  s.train_wait_ms.push_back(now.train_wait_ms - then.train_wait_ms);
  s.autograd_run_ms.push_back(now.autograd_run_ms - then.autograd_run_ms);
  s.autograd_wait_ms.push_back(now.autograd_wait_ms - then.autograd_wait_ms);
}

int64_t StepProfile::steps() const { return static_cast<int64_t>(state_->step_ms.size()); }

void StepProfile::count_sync() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.open || s.marks.empty()) return;
  const int phase = s.marks.back();
  if (phase < 0) return;
  s.syncs[static_cast<size_t>(phase)] += 1.0;
  // Where it came from, for the JSON: the innermost frames name the LibTorch operation (this
  // binary's own frames print as addresses unless it exports its symbols).
  if (s.sync_sites.size() < 64) {
    ++s.sync_sites[s.names[static_cast<size_t>(phase)] + ": " + c10::get_backtrace(4, 12)];
  }
}

std::vector<PhaseSummary> StepProfile::summary() const {
  const State& s = *state_;
  std::vector<PhaseSummary> out;
  const double steps = static_cast<double>(std::max<size_t>(1, s.step_ms.size()));
  double step_mean = 0.0;
  for (double t : s.step_ms) step_mean += t / steps;
  double sync_total = 0.0;
  for (size_t i = 0; i < s.names.size(); ++i) {
    PhaseSummary p;
    p.name = s.names[i];
    p.median_ms = median_of(s.ms[i]);
    for (double t : s.ms[i]) p.mean_ms += t / steps;
    p.share = step_mean > 0 ? p.mean_ms / step_mean : 0.0;
    p.syncs = s.syncs[i] / steps;
    p.host_median_ms = median_of(s.host_ms[i]);
    sync_total += p.syncs;
    out.push_back(p);
  }
  out.push_back({"step", median_of(s.step_ms), step_mean, 1.0, sync_total,
                 median_of(s.step_host_ms)});
  return out;
}

std::string StepProfile::table() const {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof(line), "%-16s %10s %10s %7s %8s %10s\n", "phase", "median ms",
                "mean ms", "share", "syncs", "host ms");
  out += line;
  for (const PhaseSummary& p : summary()) {
    if (p.name == "step") out += std::string(66, '-') + "\n";
    char syncs[16] = "-", host[16] = "-";  // counted and timed apart on CUDA only
    if (state_->cuda) {
      std::snprintf(syncs, sizeof(syncs), "%.1f", p.syncs);
      std::snprintf(host, sizeof(host), "%.2f", p.host_median_ms);
    }
    std::snprintf(line, sizeof(line), "%-16s %10.2f %10.2f %6.1f%% %8s %10s\n", p.name.c_str(),
                  p.median_ms, p.mean_ms, 100.0 * p.share, syncs, host);
    out += line;
  }
  std::snprintf(line, sizeof(line),
                "(%lld steps; %s timing; syncs: host-device synchronisations per step; host ms: "
                "median time the host took to queue the phase)\n",
                static_cast<long long>(steps()), state_->cuda ? "CUDA event" : "steady-clock");
  return out + line;
}

nlohmann::json StepProfile::json() const {
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseSummary& p : summary()) {
    phases.push_back({{"phase", p.name},
                      {"median_ms", p.median_ms},
                      {"mean_ms", p.mean_ms},
                      {"share", p.share},
                      {"syncs_per_step", p.syncs},
                      {"host_median_ms", p.host_median_ms}});
  }
  nlohmann::json sites = nlohmann::json::array();
  for (const auto& [site, count] : state_->sync_sites) {
    sites.push_back({{"count", count}, {"site", site}});
  }
  // Every step's times, phase by phase: ranks' files side by side show which rank waited for
  // which in each step (bench/ddp_profile.py).
  nlohmann::json per_step = {{"step", state_->step_ms}, {"step_host", state_->step_host_ms}};
  // Linux only (zeros elsewhere): CPU time the training and autograd threads ran, and waited
  // for a CPU while runnable, per step.
  nlohmann::json threads = {{"training_run", state_->train_run_ms},
                            {"training_cpu_wait", state_->train_wait_ms},
                            {"autograd_run", state_->autograd_run_ms},
                            {"autograd_cpu_wait", state_->autograd_wait_ms}};
  for (size_t i = 0; i < state_->names.size(); ++i) per_step[state_->names[i]] = state_->ms[i];
  return {{"steps", steps()},
          {"timing", state_->cuda ? "cuda-events" : "steady-clock"},
          {"phases", phases},
          {"per_step_ms", per_step},
          {"threads_per_step_ms", threads},
          {"sync_sites", sites}};
}

#ifdef MASR_WITH_CUDA
// LibTorch's sync debug mode reports each synchronising CUDA call as a warning; while a profile is
// active they are counted (warnings from autograd's threads are replayed on the caller's thread at
// the end of backward, so they land in the "backward" phase).
struct ActiveProfile::SyncHook : c10::WarningHandler {
  StepProfile* profile;
  c10::WarningHandler* previous;
  c10::cuda::SyncDebugMode previous_mode;
  explicit SyncHook(StepProfile* p)
      : profile(p),
        previous(c10::WarningUtils::get_warning_handler()),
        previous_mode(c10::cuda::warning_state().get_sync_debug_mode()) {
    c10::WarningUtils::set_warning_handler(this);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
  }
  ~SyncHook() override {
    c10::cuda::warning_state().set_sync_debug_mode(previous_mode);
    c10::WarningUtils::set_warning_handler(previous);
  }
  void process(const c10::Warning& warning) override {
    if (warning.msg().find("synchronizing CUDA operation") != std::string::npos) {
      profile->count_sync();
    } else if (previous != nullptr) {
      previous->process(warning);
    }
  }
};
#else
struct ActiveProfile::SyncHook {};
#endif

ActiveProfile::ActiveProfile(StepProfile* profile) : previous_(active_profile) {
  active_profile = profile;
#ifdef MASR_WITH_CUDA
  if (profile != nullptr) hook_ = std::make_unique<SyncHook>(profile);
#endif
}

ActiveProfile::~ActiveProfile() {
  hook_.reset();
  active_profile = previous_;
}

SuspendedProfile::SuspendedProfile() : previous_(active_profile) { active_profile = nullptr; }
SuspendedProfile::~SuspendedProfile() { active_profile = previous_; }

void profile_phase(const char* name) {
  if (active_profile != nullptr) active_profile->phase(name);
}

}  // namespace masr::train

// lib/train/step_profile.h
// Where a training step's time goes (`bench train-step --profile`, `train --profile N`).
//
// A step is cut into consecutive phases (data wait, host->device, features, ..., optimizer). On
// CUDA each boundary records a CUDA event on the current stream, so marking costs no host
// synchronisation; the events are read when the step ends, which waits for the device once. On
// the CPU the boundaries are steady-clock readings. Because a profiled step ends with the device
// idle, a phase's time is max(host time, device time) of its work, which is what a user waits for.
//
// On CUDA the profile also counts the operations that synchronise the host with the device
// (`.item()`, copies from pageable memory, ...) per phase, through LibTorch's sync debug mode, and
// times the host between the same boundaries: the time it took to queue the phase's work. A step
// whose host time reaches its device time is bound by the host (launch overhead, Python-free as
// it is), not by the GPU: more work per kernel (larger batches, CUDA graphs) is then what helps.
//
// Code deep inside the step marks phases with `profile_phase("encoder")`, a no-op unless a
// profile is active on the calling thread (ActiveProfile), so nothing is passed around.
#pragma once

#include <ATen/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace masr::train {

struct PhaseSummary {
  std::string name;
  double median_ms = 0.0;  // per step, over the profiled steps
  double mean_ms = 0.0;
  double share = 0.0;      // of the mean step time
  double syncs = 0.0;      // host synchronisations per step (CUDA only; 0 on the CPU)
  double host_median_ms = 0.0;  // host time between the phase's boundaries (= median_ms on the CPU)
};

class StepProfile {
 public:
  explicit StepProfile(const at::Device& device);
  ~StepProfile();
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  // Opens a step; its first phase is `first`.
  void begin_step(const char* first);
  // Closes the running phase and opens `name` (a phase may recur within a step: times add up).
  void phase(const char* name);
  // Closes the step, waits for the device and adds the step's phase times.
  void end_step();
  bool in_step() const;
  // Drops the open step without counting it (the data ran out).
  void discard_step();

  int64_t steps() const;
  // Phases in the order they first appeared, plus "step" (the whole step) last.
  std::vector<PhaseSummary> summary() const;
  std::string table() const;  // for people
  nlohmann::json json() const;

  // Called by the sync-debug hook while this profile is active (any thread).
  void count_sync();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Makes `profile` the active one on this thread for the guard's lifetime (null: none). On CUDA it
// turns LibTorch's sync debug mode to "warn" meanwhile and counts those warnings per phase instead
// of printing them.
class ActiveProfile {
 public:
  explicit ActiveProfile(StepProfile* profile);
  ~ActiveProfile();
  ActiveProfile(const ActiveProfile&) = delete;
  ActiveProfile& operator=(const ActiveProfile&) = delete;

 private:
  StepProfile* previous_;
  struct SyncHook;
  std::unique_ptr<SyncHook> hook_;
};

// No active profile on this thread for the guard's lifetime (phase marks are no-ops), the
// previous one back afterwards: a CUDA graph capture must not record phase boundaries.
class SuspendedProfile {
 public:
  SuspendedProfile();
  ~SuspendedProfile();
  SuspendedProfile(const SuspendedProfile&) = delete;
  SuspendedProfile& operator=(const SuspendedProfile&) = delete;

 private:
  StepProfile* previous_;
};

// Marks the start of phase `name` of the active profile's current step; no-op otherwise.
void profile_phase(const char* name);

}  // namespace masr::train

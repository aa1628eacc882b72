// tests/train/test_step_profile.cpp
// StepProfile on the CPU (steady-clock phases, medians, shares, JSON) and `train --profile N`
// end to end on the tiny corpus: the profile file has the training step's phases.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "core/atomic_file.h"
#include "train/step_profile.h"
#include "train_fixtures.h"

using namespace masr;
using namespace masr::train;
namespace fs = std::filesystem;

namespace {

void busy_for(std::chrono::milliseconds ms) {
  const auto end = std::chrono::steady_clock::now() + ms;
  while (std::chrono::steady_clock::now() < end) {
  }
}

const PhaseSummary& phase_named(const std::vector<PhaseSummary>& phases, const std::string& name) {
  for (const auto& p : phases) {
    if (p.name == name) return p;
  }
  FAIL("no phase " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("StepProfile: consecutive phases, repeated phases add up, medians over steps",
          "[train][profile]") {
  StepProfile profile(at::kCPU);
  {
    ActiveProfile active(&profile);
    for (int step = 0; step < 3; ++step) {
      profile.begin_step("a");
      busy_for(std::chrono::milliseconds(20));
      profile_phase("b");  // marked the way code deep inside the step marks it
      busy_for(std::chrono::milliseconds(5));
      profile_phase("a");  // a phase may come back within a step
      busy_for(std::chrono::milliseconds(10));
      profile.end_step();
    }
    // A step that ends without end_step (the data ran out) is not counted.
    profile.begin_step("a");
    profile.discard_step();
    profile_phase("c");  // outside a step: ignored
  }
  profile_phase("d");  // no active profile: a no-op
  REQUIRE(profile.steps() == 3);
  const auto phases = profile.summary();
  REQUIRE(phases.size() == 3);  // a, b, step
  CHECK(phases[0].name == "a");
  CHECK(phases[1].name == "b");
  CHECK(phases[2].name == "step");
  // Busy-waits are lower bounds; the slack allows for a loaded machine.
  CHECK(phase_named(phases, "a").median_ms >= 30.0);
  CHECK(phase_named(phases, "a").median_ms < 200.0);
  CHECK(phase_named(phases, "b").median_ms >= 5.0);
  const PhaseSummary& step = phase_named(phases, "step");
  CHECK(step.median_ms >= 35.0);
  CHECK(phase_named(phases, "a").share + phase_named(phases, "b").share == Approx(1.0));
  CHECK(step.syncs == 0.0);  // counted on CUDA only
  // One clock on the CPU: the host time is the phase's time.
  CHECK(phase_named(phases, "a").host_median_ms == phase_named(phases, "a").median_ms);
  CHECK(step.host_median_ms == Approx(step.median_ms));

  const nlohmann::json j = profile.json();
  CHECK(j["steps"] == 3);
  CHECK(j["timing"] == "steady-clock");
  REQUIRE(j["phases"].size() == 3);
  CHECK(j["phases"][0]["phase"] == "a");
  CHECK(j["phases"][0]["host_median_ms"].get<double>() >= 30.0);
  // Every step's times too: 3 steps of "a" (each >= 30 ms) and of the whole step.
  REQUIRE(j["per_step_ms"]["a"].size() == 3);
  REQUIRE(j["per_step_ms"]["step"].size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(j["per_step_ms"]["a"][k].get<double>() >= 30.0);
    CHECK(j["per_step_ms"]["step"][k].get<double>() >= j["per_step_ms"]["a"][k].get<double>());
  }
  const std::string table = profile.table();
  CHECK_THAT(table, Catch::Contains("phase") && Catch::Contains("median ms") &&
                        Catch::Contains("step") && Catch::Contains("3 steps"));
}

TEST_CASE("StepProfile: a phase first seen in a later step counts zero for the earlier ones",
          "[train][profile]") {
  StepProfile profile(at::kCPU);
  profile.begin_step("a");
  profile.end_step();
  profile.begin_step("a");
  profile.phase("late");
  busy_for(std::chrono::milliseconds(4));
  profile.end_step();
  const auto phases = profile.summary();
  const PhaseSummary& late = phase_named(phases, "late");
  CHECK(late.mean_ms >= 2.0);  // (0 + >= 4) / 2
  CHECK(late.median_ms >= 2.0);
}

TEST_CASE("train --profile N: the first N batches' phases in profile.json and the log",
          "[train][profile]") {
  if (!fs::exists(testing::mamba_asr_exe())) FAIL("build the mamba-asr target first");
  testing::TempDir dir("train_profile");
  testing::write_synth_corpus(dir.file("corpus"));
  const std::string out = dir.file("out");
  const std::string cmd = testing::mamba_asr_exe() + " train " +
                          testing::tiny_ctc_args(dir.file("corpus"), out, 1) +
                          " --threads 1 --profile 3 2> " + dir.file("log.txt");
  REQUIRE(testing::run_command(cmd) == 0);
  const nlohmann::json j = nlohmann::json::parse(read_file(out + "/profile.json"));
  CHECK(j["steps"] == 3);
  CHECK(j["device"] == "cpu");
  std::set<std::string> names;
  for (const auto& p : j["phases"]) {
    names.insert(p["phase"].get<std::string>());
    CHECK(p["median_ms"].get<double>() >= 0.0);
  }
  for (const char* expected : {"data", "host-to-device", "features", "normalize", "augment",
                               "encoder", "loss", "loss-check", "backward", "clip", "optimizer",
                               "scheduler", "logging", "step"}) {
    CHECK(names.count(expected) == 1);
  }
  const std::string log = read_file(dir.file("log.txt"));
  CHECK_THAT(log, Catch::Contains("step profile of the first 3 batches"));
  CHECK_THAT(log, Catch::Contains("first optimizer step done"));
  // The epoch record carries the epoch's throughput.
  bool epoch_record = false;
  std::istringstream records(read_file(out + "/log.jsonl"));
  for (std::string line; std::getline(records, line);) {
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r["kind"] != "epoch") continue;
    epoch_record = true;
    CHECK(r["train_audio_seconds"].get<double>() > 0.0);
    CHECK(r["train_seconds"].get<double>() > 0.0);
    CHECK(r["train_audio_per_sec"].get<double>() ==
          Approx(r["train_audio_seconds"].get<double>() / r["train_seconds"].get<double>()));
  }
  CHECK(epoch_record);

  // --profile-from skips the warm-up: batches 3 and 4.
  const std::string later = dir.file("later");
  REQUIRE(testing::run_command(testing::mamba_asr_exe() + " train " +
                               testing::tiny_ctc_args(dir.file("corpus"), later, 1) +
                               " --threads 1 --profile 2 --profile-from 2 2> " +
                               dir.file("later.txt")) == 0);
  CHECK(nlohmann::json::parse(read_file(later + "/profile.json"))["steps"] == 2);
  CHECK_THAT(read_file(dir.file("later.txt")), Catch::Contains("step profile of batches 3-4"));
}

TEST_CASE("StepProfile: the training thread's CPU time per step (Linux schedstat)", "[train]") {
  StepProfile profile(at::kCPU);
  for (int step = 0; step < 3; ++step) {
    profile.begin_step("work");
    busy_for(std::chrono::milliseconds(30));  // about 30 ms of CPU on this thread
    profile.end_step();
  }
  const nlohmann::json j = profile.json();
  REQUIRE(j.contains("threads_per_step_ms"));
  const auto& threads = j["threads_per_step_ms"];
  REQUIRE(threads["training_run"].size() == 3);
  REQUIRE(threads["autograd_run"].size() == 3);
#ifdef __linux__
  for (double run : threads["training_run"].get<std::vector<double>>()) {
    // The busy loop ran on this thread (less only if the machine took the CPU away, which
    // training_cpu_wait then shows).
    CHECK(run > 5.0);
    CHECK(run < 1000.0);
  }
  for (double wait : threads["training_cpu_wait"].get<std::vector<double>>()) CHECK(wait >= 0.0);
#endif
}

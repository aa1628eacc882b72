// tests/train/test_hostile_kill9.cpp
// Fault injection for training: N runs of the tiny recipe, each killed with SIGKILL at one to
// three random moments (startup, mid-epoch, checkpointing, validation, the final averaging), then
// run to the end. Every run must resume and end with exactly the parameters of an uninterrupted
// run (CPU, one thread). [.slow]: scripts/kill_trials.sh runs it and prints the counts.
//   MASR_KILL_TRIALS=20 MASR_KILL_SEED=1 build/tests/test_masr "[kill9]"
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include <torch/torch.h>

#include "core/atomic_file.h"
#include "models/checkpoint.h"
#include "train_fixtures.h"
#include "core/remove_tree.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string train_command(const masr::testing::TempDir& dir, const std::string& out) {
  return masr::testing::mamba_asr_exe() + " train " +
         masr::testing::tiny_ctc_args(dir.file("corpus"), out, 3) +
         " --ckpt-every-steps 1 --threads 1 -q 2>> " + out + ".log";
}

// Starts `command` and SIGKILLs it after `delay`; true when it was still running then.
bool run_and_kill(const std::string& command, std::chrono::milliseconds delay) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), nullptr);
    _exit(127);
  }
  const auto deadline = Clock::now() + delay;
  int status = 0;
  while (Clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return false;  // finished first
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status);
}

long env_or(const char* name, long fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atol(value) : fallback;
}

}  // namespace

TEST_CASE("train: runs killed with SIGKILL at random moments all resume to the same model",
          "[train][kill9][.slow]") {
  const long trials = env_or("MASR_KILL_TRIALS", 20);
  std::mt19937 rng(static_cast<unsigned>(env_or("MASR_KILL_SEED", 1)));
  masr::testing::TempDir dir("kill9");
  masr::testing::write_synth_corpus(dir.file("corpus"));

  const auto start = Clock::now();
  REQUIRE(masr::testing::run_command(train_command(dir, dir.file("reference"))) == 0);
  const auto full = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  const auto reference = masr::models::read_checkpoint(dir.file("reference/model.masr")).state;

  long kills = 0, finished_before_kill = 0, resumed = 0, identical = 0;
  for (long t = 0; t < trials; ++t) {
    const std::string out = dir.file("trial" + std::to_string(t));
    const int kill_count = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int k = 0; k < kill_count; ++k) {
      // Anywhere in a whole run's time: a resumed run has less left, so late kills may miss.
      const auto delay = std::chrono::milliseconds(
          std::uniform_int_distribution<long>(0, static_cast<long>(full.count() * 1.1))(rng));
      if (run_and_kill(train_command(dir, out), delay)) {
        ++kills;
      } else {
        ++finished_before_kill;
      }
    }
    const int code = masr::testing::run_command(train_command(dir, out));
    INFO("trial " << t << " log: " << masr::read_file(out + ".log"));
    CHECK(code == 0);
    if (code != 0) continue;
    ++resumed;
    const auto state = masr::models::read_checkpoint(out + "/model.masr").state;
    bool same = state.size() == reference.size();
    for (size_t i = 0; same && i < state.size(); ++i) {
      same = state[i].first == reference[i].first &&
             torch::equal(state[i].second, reference[i].second);
    }
    CHECK(same);
    identical += same ? 1 : 0;
    masr::remove_tree(out);
  }
  // One machine-readable line for scripts/kill_trials.sh and docs/reliability.md.
  std::printf(
      "kill9: trials=%ld kills=%ld finished_before_kill=%ld resumed=%ld identical=%ld "
      "uninterrupted_run_ms=%lld\n",
      trials, kills, finished_before_kill, resumed, identical,
      static_cast<long long>(full.count()));
  CHECK(identical == trials);
}

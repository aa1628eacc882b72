// tests/toolkit/test_decode_threads.cpp
// `decode --threads auto` counts the CPUs that no other runnable thread wants before timing
// thread counts (toolkit/decode_threads.h).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "toolkit/decode_threads.h"

using masr::toolkit::idle_cpus;
using masr::toolkit::procs_running_of;

TEST_CASE("procs_running is read from /proc/stat's text", "[toolkit]") {
  CHECK(procs_running_of("cpu  1 2 3\nintr 5\nctxt 9\nprocs_running 3\nprocs_blocked 0\n") == 3);
  CHECK(procs_running_of("cpu  1 2 3\nprocs_blocked 0\n") == -1);
  CHECK(procs_running_of("procs_running x\n") == -1);
  CHECK(procs_running_of("") == -1);
}

TEST_CASE("idle_cpus stays between 1 and the CPUs given", "[toolkit]") {
  for (int cpus : {1, 2, 64}) {
    const int idle = idle_cpus(cpus);
    CHECK(idle >= 1);
    CHECK(idle <= cpus);
  }
  CHECK(idle_cpus(0) == 1);
  // Every CPU made busy by spinning processes (not threads of this one, which do not count):
  // at most one is left.
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<pid_t> spinners;
  for (int i = 0; i < cpus; ++i) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      volatile unsigned long spins = 0;  // a volatile store: the loop is not optimized away
      for (;;) spins = spins + 1;
    }
    spinners.push_back(pid);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int busy = idle_cpus(cpus);
  for (pid_t pid : spinners) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  CHECK(busy == 1);
}

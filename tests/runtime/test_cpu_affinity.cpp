// tests/runtime/test_cpu_affinity.cpp
// Per-rank CPU blocks on hand-computable lists, and binding the whole process (threads started
// before and after the call) on Linux.
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#ifdef __linux__
#include <sched.h>
#endif

#include "runtime/cpu_affinity.h"

using namespace masr::runtime;

TEST_CASE("rank_cpu_share deals out whole cores, hyperthreads together", "[runtime]") {
  // 8 CPUs, 4 cores on one package; CPU i and i + 4 are the two threads of core i (the usual
  // numbering: first threads, then their siblings).
  std::vector<int> cpus;
  std::vector<CpuPlace> places;
  for (int c = 0; c < 8; ++c) cpus.push_back(c), places.push_back({0, c % 4});
  CHECK(rank_cpu_share(cpus, places, 0, 2) == std::vector<int>{0, 1, 4, 5});
  CHECK(rank_cpu_share(cpus, places, 1, 2) == std::vector<int>{2, 3, 6, 7});
  // 3 ranks over 4 cores: the first rank gets one core more.
  CHECK(rank_cpu_share(cpus, places, 0, 3) == std::vector<int>{0, 1, 4, 5});
  CHECK(rank_cpu_share(cpus, places, 1, 3) == std::vector<int>{2, 6});
  CHECK(rank_cpu_share(cpus, places, 2, 3) == std::vector<int>{3, 7});
  // Two packages: cores go package by package (core ids restart on each).
  std::vector<CpuPlace> two = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 0}, {0, 1}, {1, 0}, {1, 1}};
  CHECK(rank_cpu_share(cpus, two, 0, 2) == std::vector<int>{0, 1, 4, 5});
  CHECK(rank_cpu_share(cpus, two, 1, 2) == std::vector<int>{2, 3, 6, 7});
  // Fewer cores than ranks: contiguous runs of the CPUs; fewer CPUs than ranks: all of them.
  const std::vector<CpuPlace> one_core(4, CpuPlace{0, 0});
  CHECK(rank_cpu_share({0, 1, 2, 3}, one_core, 1, 2) == std::vector<int>{2, 3});
  CHECK(rank_cpu_share({0, 1}, one_core, 2, 3) == std::vector<int>{0, 1});
  // One rank: everything. Any CPU list, not only 0..n-1 (a taskset or cgroup may allow a few).
  CHECK(rank_cpu_share(cpus, places, 0, 1) == cpus);
  CHECK(rank_cpu_share({4, 5, 12, 13}, {{0, 4}, {0, 5}, {0, 12}, {0, 13}}, 1, 2) ==
        std::vector<int>{12, 13});
  CHECK(cpu_list_string({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(cpu_list_string({}).empty());
}

TEST_CASE("cpu_places reads this machine's topology", "[runtime]") {
  const std::vector<int> cpus = allowed_cpus();
  const std::vector<CpuPlace> places = cpu_places(cpus);
  REQUIRE(places.size() == cpus.size());
  // Each rank of as many ranks as there are cores gets at least one CPU, and together they get
  // every CPU once.
  std::vector<int> all;
  const int ranks = static_cast<int>(std::max<size_t>(1, cpus.size()));
  for (int r = 0; r < ranks; ++r) {
    const auto share = rank_cpu_share(cpus, places, r, ranks);
    all.insert(all.end(), share.begin(), share.end());
  }
  std::sort(all.begin(), all.end());
  if (ranks > 1) CHECK(all == cpus);
}

#ifdef __linux__
TEST_CASE("bind_process_to binds running and later threads", "[runtime]") {
  const std::vector<int> before = allowed_cpus();
  REQUIRE_FALSE(before.empty());
  const auto thread_cpus = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof(set), &set);
    std::vector<int> out;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) out.push_back(c);
    }
    return out;
  };
  // A thread that exists before the call, asked afterwards.
  std::mutex m;
  std::condition_variable cv;
  bool bound = false;
  std::vector<int> early;
  std::thread waiting([&] {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return bound; });
    early = thread_cpus();
  });
  const std::vector<int> one{before.back()};
  CHECK(bind_process_to(one));
  {
    std::lock_guard<std::mutex> lock(m);
    bound = true;
  }
  cv.notify_all();
  waiting.join();
  std::vector<int> late;
  std::thread([&] { late = thread_cpus(); }).join();
  CHECK(allowed_cpus() == one);
  CHECK(early == one);
  CHECK(late == one);
  CHECK(bind_process_to(before));  // the other tests get their CPUs back
  CHECK(allowed_cpus() == before);
}
#endif

// tests/data/test_loader.cpp
// DataLoader: batches in the sampler's order whatever the workers' timing, the items of one batch
// made by several workers, worker errors reach the consumer as thrown, bounded prefetch, and
// early destruction without hangs (checked with timeouts so a regression fails instead of
// blocking the suite).
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#ifdef __linux__
#include <cerrno>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "data/loader.h"

using namespace masr::data;
using namespace std::chrono_literals;

namespace {

Manifest numbered_manifest(size_t n) {
  Manifest m;
  m.origin = "test";
  for (size_t i = 0; i < n; ++i) {
    ManifestRow row;
    row.id = "u" + std::to_string(i);
    row.duration = 1.0 + static_cast<double>(i % 7);
    m.rows.push_back(row);
  }
  return m;
}

// Runs `body` on another thread and fails (rather than hangs) if it takes over 20 s.
template <typename F>
bool finishes_in_time(F body) {
  auto done = std::async(std::launch::async, body);
  if (done.wait_for(20s) != std::future_status::ready) return false;
  done.get();
  return true;
}

struct LoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

TEST_CASE("loader returns batches in the sampler's order", "[data]") {
  const Manifest m = numbered_manifest(40);
  FixedBatchOptions o;
  o.batch_size = 3;
  o.sorting = SortOrder::kRandom;
  const auto batches = fixed_size_batches({std::vector<double>(40, 1.0)}, o, 3);
  for (int workers : {0, 1, 4}) {
    // Items take uneven times so that workers finish out of order.
    DataLoader<std::string> loader(
        m, batches,
        [](const ManifestRow& row) {
          std::this_thread::sleep_for(std::chrono::microseconds((row.id.size() * 37) % 500));
          return row.id;
        },
        {workers, 2});
    std::vector<std::string> items;
    Batch indices;
    size_t b = 0;
    while (loader.next(items, &indices)) {
      REQUIRE(b < batches.size());
      CHECK(indices == batches[b]);
      REQUIRE(items.size() == batches[b].size());
      for (size_t k = 0; k < items.size(); ++k) CHECK(items[k] == m.rows[batches[b][k]].id);
      ++b;
    }
    CHECK(b == batches.size());
    CHECK_FALSE(loader.next(items));
  }
}

TEST_CASE("a worker's exception reaches the consumer unchanged, in order", "[data]") {
  const Manifest m = numbered_manifest(20);
  const auto batches = fixed_size_batches(std::vector<double>(20, 1.0), {2});
  for (int workers : {0, 3}) {
    DataLoader<int> loader(m, batches,
                           [](const ManifestRow& row) {
                             if (row.id == "u9") throw LoadError("cannot read audio for " + row.id);
                             return std::stoi(row.id.substr(1));
                           },
                           {workers, 2});
    std::vector<int> items;
    for (int b = 0; b < 4; ++b) {  // batches {0,1} .. {6,7} come first
      REQUIRE(loader.next(items));
      CHECK(items == std::vector<int>{2 * b, 2 * b + 1});
    }
    CHECK_THROWS_AS(loader.next(items), LoadError);  // batch {8, 9}
    CHECK_FALSE(loader.next(items));                 // the loader ended
  }
  bool failed = false;
  try {
    DataLoader<int> loader(
        m, batches, [](const ManifestRow&) -> int { throw LoadError("row says no"); }, {2, 1});
    std::vector<int> items;
    loader.next(items);
  } catch (const LoadError& e) {
    failed = std::string(e.what()) == "row says no";
  }
  CHECK(failed);
}

// Workers share out the items of a batch: the first batch of an epoch, which the consumer waits
// for, is made by several workers at once rather than by one.
TEST_CASE("several workers make the items of one batch together", "[data]") {
  const Manifest m = numbered_manifest(16);
  const std::vector<Batch> batches = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}};
  std::atomic<int> in_flight{0}, most{0};
  DataLoader<std::string> loader(m, batches,
                                 [&](const ManifestRow& row) {
                                   const int now = ++in_flight;
                                   int seen = most.load();
                                   while (now > seen && !most.compare_exchange_weak(seen, now)) {
                                   }
                                   std::this_thread::sleep_for(30ms);
                                   --in_flight;
                                   return row.id;
                                 },
                                 {4, 1});  // a window of 4 batches; 2 exist
  std::vector<std::string> items;
  REQUIRE(loader.next(items));
  CHECK(items == std::vector<std::string>{"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7"});
  CHECK(most.load() > 1);
  REQUIRE(loader.next(items));
  CHECK(items.front() == "u8");
  CHECK(items.back() == "u15");
  CHECK_FALSE(loader.next(items));
}

// A batch of no items (none of the samplers makes one) comes out collated as empty.
TEST_CASE("a batch of no items comes out empty", "[data]") {
  const Manifest m = numbered_manifest(4);
  for (int workers : {0, 2}) {
    DataLoader<std::string> loader(m, {{0}, {}, {1, 2}}, [](const ManifestRow& r) { return r.id; },
                                   {workers, 1});
    std::vector<std::string> items;
    REQUIRE(loader.next(items));
    CHECK(items == std::vector<std::string>{"u0"});
    REQUIRE(loader.next(items));
    CHECK(items.empty());
    REQUIRE(loader.next(items));
    CHECK(items == std::vector<std::string>{"u1", "u2"});
    CHECK_FALSE(loader.next(items));
  }
}

TEST_CASE("loader prefetch is bounded", "[data]") {
  const Manifest m = numbered_manifest(50);
  const auto batches = fixed_size_batches(std::vector<double>(50, 1.0), {1});
  std::atomic<int> made{0};
  DataLoader<int> loader(m, batches,
                         [&](const ManifestRow&) {
                           ++made;
                           return 0;
                         },
                         {2, 2});
  std::this_thread::sleep_for(200ms);
  // 2 workers x 2 batches ahead, one item each: never more than 4 made before any is consumed.
  CHECK(made.load() <= 4);
  std::vector<int> items;
  REQUIRE(loader.next(items));
  std::this_thread::sleep_for(100ms);
  CHECK(made.load() <= 5);
}

TEST_CASE("destroying a loader early does not hang", "[data]") {
  const Manifest m = numbered_manifest(200);
  const auto batches = fixed_size_batches(std::vector<double>(200, 1.0), {4});
  auto slow = [](const ManifestRow& row) {
    std::this_thread::sleep_for(2ms);
    return row.id;
  };
  // Destroyed before anything is consumed, after one batch, and with workers blocked on a full
  // prefetch window.
  CHECK(finishes_in_time([&] { DataLoader<std::string> loader(m, batches, slow, {4, 2}); }));
  CHECK(finishes_in_time([&] {
    DataLoader<std::string> loader(m, batches, slow, {3, 1});
    std::vector<std::string> items;
    REQUIRE(loader.next(items));
  }));
  CHECK(finishes_in_time([&] {
    DataLoader<std::string> loader(m, batches, [](const ManifestRow& r) { return r.id; }, {2, 1});
    std::this_thread::sleep_for(50ms);  // the window fills; workers wait
  }));
}

TEST_CASE("loader rejects batches beyond the manifest", "[data]") {
  const Manifest m = numbered_manifest(3);
  CHECK_THROWS_WITH(DataLoader<int>(m, {{0, 5}}, [](const ManifestRow&) { return 0; }),
                    Catch::Contains("batch 0 refers to row 5") && Catch::Contains("has 3 rows"));
}

#ifdef __linux__
TEST_CASE("loader workers run at the niceness asked for; the consumer keeps its own", "[data]") {
  const Manifest m = numbered_manifest(12);
  FixedBatchOptions o;
  o.batch_size = 2;
  const auto batches = fixed_size_batches({std::vector<double>(12, 1.0)}, o);
  const auto thread_nice = [] {
    errno = 0;
    return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  };
  const int base = thread_nice();
  REQUIRE(base <= 15);  // room for the increment below
  LoaderOptions options{2, 2};
  options.worker_nice = 4;
  DataLoader<int> loader(m, batches, [&](const ManifestRow&) { return thread_nice(); }, options);
  std::vector<int> seen;
  size_t items = 0;
  while (loader.next(seen)) {
    for (int nice : seen) CHECK(nice == base + 4);
    items += seen.size();
  }
  CHECK(items == 12);
  CHECK(thread_nice() == base);
}
#endif

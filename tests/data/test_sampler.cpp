// tests/data/test_sampler.cpp
// DynamicBatchSampler and fixed-size batching on hand-computable datasets; torch's randperm
// seeding and the log-normal boundaries pinned against Python.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <limits>
#include <random>
#include <set>

#include "data/sampler.h"

using namespace masr::data;

namespace {

// index:   0    1    2    3    4    5    6    7    8
// length: 1.0  3.0  1.5  2.0  9.0  3.5  0.5  5.0  2.5
const std::vector<double> kLengths = {1.0, 3.0, 1.5, 2.0, 9.0, 3.5, 0.5, 5.0, 2.5};

DynamicBatchOptions hand_options() {
  DynamicBatchOptions o;
  o.max_batch_length = 8.0;
  o.bucket_boundaries = {2.0, 4.0, 8.0};
  o.shuffle = false;
  o.batch_ordering = BatchOrdering::kAscending;
  return o;
}

}  // namespace

TEST_CASE("DynamicBatchSampler fills buckets as SpeechBrain does", "[data]") {
  // Bucket batch sizes: floor(8/2)=4, floor(8/4)=2, floor(8/8)=1, and 1 for longer examples.
  // In order: 0->b0, 1->b1, 2->b0, 3->b0 (2.0 is on the boundary: searchsorted left),
  // 4->b3 full [4], 5->b1 full [1,5], 6->b0 full [0,2,3,6], 7->b2 full [7], 8->b1 left over [8].
  DynamicBatchSampler sampler(kLengths, hand_options());
  CHECK(sampler.bucket_batch_sizes() == std::vector<int64_t>{4, 2, 1, 1});
  // Ascending by each batch's longest example: 2.0, 2.5, 3.5, 5.0, 9.0.
  CHECK(sampler.batches() == std::vector<Batch>{{0, 2, 3, 6}, {8}, {1, 5}, {7}, {4}});

  auto o = hand_options();
  o.batch_ordering = BatchOrdering::kDescending;
  CHECK(DynamicBatchSampler(kLengths, o).batches() ==
        std::vector<Batch>{{4}, {7}, {1, 5}, {8}, {0, 2, 3, 6}});
  o.drop_last = true;  // the left-over [8] goes
  CHECK(DynamicBatchSampler(kLengths, o).batches() ==
        std::vector<Batch>{{4}, {7}, {1, 5}, {0, 2, 3, 6}});

  // max_batch_ex = 3 caps bucket 0: [0,2,3] full at index 3, then [6] is left over.
  o = hand_options();
  o.max_batch_ex = 3;
  DynamicBatchSampler capped(kLengths, o);
  CHECK(capped.bucket_batch_sizes() == std::vector<int64_t>{3, 2, 1, 1});
  CHECK(capped.batches() == std::vector<Batch>{{6}, {0, 2, 3}, {8}, {1, 5}, {7}, {4}});
  CHECK(capped.describe().find("bucket 3 [8, inf]: batch size 1, 1 examples") != std::string::npos);
}

TEST_CASE("DynamicBatchSampler random orders are seeded by seed + epoch", "[data]") {
  std::vector<double> lengths;
  for (int i = 0; i < 200; ++i) lengths.push_back(1.0 + (i * 7919 % 100) / 10.0);
  DynamicBatchOptions o;
  o.max_batch_length = 30.0;
  o.num_buckets = 5;
  o.shuffle = true;
  DynamicBatchSampler a(lengths, o, 1), b(lengths, o, 1), c(lengths, o, 2);
  CHECK(a.batches() == b.batches());
  CHECK(a.batches() != c.batches());
  // Every example exactly once, and no batch over the limit unless it holds one example.
  std::multiset<size_t> seen;
  for (const auto& batch : c.batches()) {
    double total = 0;
    for (size_t i : batch) {
      seen.insert(i);
      total += lengths[i];
    }
    CHECK((total <= 30.0 + 1e-9 || batch.size() == 1));
  }
  CHECK(seen.size() == 200);
  CHECK(std::set<size_t>(seen.begin(), seen.end()).size() == 200);
  a.set_epoch(2);
  CHECK(a.batches() == c.batches());
  CHECK(a.epoch() == 2);
}

TEST_CASE("seeded_randperm matches torch.randperm with a seeded generator", "[data]") {
  // /usr/bin/python3: g = torch.Generator(); g.manual_seed(43); torch.randperm(10, generator=g)
  CHECK(seeded_randperm(10, 43) == std::vector<size_t>{8, 4, 9, 0, 5, 1, 6, 7, 2, 3});
  FILE* pipe = ::popen(
      "/usr/bin/python3 -c \"import torch; g=torch.Generator(); g.manual_seed(2024); "
      "print(' '.join(map(str, torch.randperm(37, generator=g).tolist())))\" 2>/dev/null",
      "r");
  REQUIRE(pipe != nullptr);
  std::vector<size_t> python;
  unsigned long value = 0;
  while (std::fscanf(pipe, "%lu", &value) == 1) python.push_back(value);
  ::pclose(pipe);
  if (python.empty()) {
    WARN("Debian's /usr/bin/python3 with torch is not available; checked the fixed case only");
  } else {
    CHECK(seeded_randperm(37, 2024) == python);
  }
}

TEST_CASE("log-normal bucket boundaries", "[data]") {
  // exp(Phi^-1(p)) at p = 1/4, 1/2, 3/4, scaled to end at 10 (Python statistics.NormalDist).
  const auto b = lognormal_bucket_boundaries(10.0, 3);
  REQUIRE(b.size() == 3);
  CHECK(b[0] == Approx(2.5950495026507134).epsilon(1e-12));
  CHECK(b[1] == Approx(5.094162838632775).epsilon(1e-12));
  CHECK(b[2] == Approx(10.0).epsilon(1e-15));
  // Mamba-ASR's train setting: 850 s over 200 buckets.
  const auto big = lognormal_bucket_boundaries(850.0, 200);
  CHECK(big[0] == Approx(4.904383622477897).epsilon(1e-11));
  CHECK(big[99] == Approx(64.16433018060573).epsilon(1e-11));
  CHECK(lognormal_bucket_boundaries(7.0, 1) == std::vector<double>{7.0});
}

TEST_CASE("DynamicBatchSampler configuration errors", "[data]") {
  DynamicBatchOptions o;
  o.max_batch_length = 10;
  CHECK_THROWS_WITH(DynamicBatchSampler({1.0}, o), Catch::Contains("give num_buckets"));
  o.bucket_boundaries = {2.0, 2.0};
  CHECK_THROWS_WITH(DynamicBatchSampler({1.0}, o), Catch::Contains("ascending without duplicates"));
  o.bucket_boundaries = {-1.0};
  CHECK_THROWS_WITH(DynamicBatchSampler({1.0}, o), Catch::Contains("must be >= 0"));
  o.bucket_boundaries.clear();
  o.num_buckets = 2;
  o.max_batch_length = 0;
  CHECK_THROWS_WITH(DynamicBatchSampler({1.0}, o), Catch::Contains("max_batch_length must be > 0"));
  CHECK_THROWS_WITH(parse_batch_ordering("sorted", "train_sampler"),
                    Catch::Contains("train_sampler: batch_ordering 'sorted'"));
  CHECK_THROWS_WITH(parse_sort_order("up", "sorting"), Catch::Contains("sorting 'up'"));
}

TEST_CASE("fixed-size batches with sorting", "[data]") {
  const std::vector<double> lengths = {3, 1, 2, 5, 4};
  FixedBatchOptions o;
  o.batch_size = 2;
  CHECK(fixed_size_batches(lengths, o) == std::vector<Batch>{{0, 1}, {2, 3}, {4}});
  o.sorting = SortOrder::kAscending;
  CHECK(fixed_size_batches(lengths, o) == std::vector<Batch>{{1, 2}, {0, 4}, {3}});
  o.sorting = SortOrder::kDescending;
  CHECK(fixed_size_batches(lengths, o) == std::vector<Batch>{{3, 4}, {0, 2}, {1}});
  o.drop_last = true;
  CHECK(fixed_size_batches(lengths, o) == std::vector<Batch>{{3, 4}, {0, 2}});
  // Equal lengths keep their order (stable), also descending.
  CHECK(fixed_size_batches({1, 1, 1}, o) == std::vector<Batch>{{0, 1}});
  o.sorting = SortOrder::kRandom;
  o.drop_last = false;
  o.seed = 42;
  // randperm(5) seeded 43 (seed + epoch 1), cut in pairs.
  const auto perm = seeded_randperm(5, 43);
  CHECK(fixed_size_batches(lengths, o, 1) ==
        std::vector<Batch>{{perm[0], perm[1]}, {perm[2], perm[3]}, {perm[4]}});
  o.batch_size = 0;
  CHECK_THROWS_WITH(fixed_size_batches(lengths, o), Catch::Contains("batch_size must be > 0"));
}

namespace {

// Summed (max - mean) cost over consecutive rounds: the time the ranks of the steps wait.
double round_wait(const std::vector<double>& costs, size_t round) {
  double wait = 0.0;
  for (size_t start = 0; start + round <= costs.size(); start += round) {
    double top = 0.0, sum = 0.0;
    for (size_t k = start; k < start + round; ++k) top = std::max(top, costs[k]), sum += costs[k];
    wait += top - sum / static_cast<double>(round);
  }
  return wait;
}

// The least summed wait over every way of cutting `costs` into rounds, by brute force.
double best_wait(std::vector<double> costs, size_t round) {
  std::vector<size_t> order(costs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  double best = std::numeric_limits<double>::infinity();
  do {
    std::vector<double> c;
    for (size_t i : order) c.push_back(costs[i]);
    best = std::min(best, round_wait(c, round));
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

}  // namespace

TEST_CASE("group_rounds_by_cost pairs batches of similar cost, keeping the random order",
          "[data]") {
  // Batch i is {i}; costs in plan order. Rounds of 2, most expensive first:
  // {7 (9.0), 1 (8.0)}, {4 (5.0), 0 (4.9)}, {2 (2.0), 6 (1.9)}, {3 (1.0), 5 (0.9)}; then placed
  // where their earliest batch stood: {0,4} at 0, {1,7} at 1, {2,6} at 2, {3,5} at 3.
  std::vector<Batch> batches;
  for (size_t i = 0; i < 8; ++i) batches.push_back({i});
  const std::vector<double> cost = {4.9, 8.0, 2.0, 1.0, 5.0, 0.9, 1.9, 9.0};
  const std::vector<Batch> expected = {{0}, {4}, {1}, {7}, {2}, {6}, {3}, {5}};
  CHECK(group_rounds_by_cost(batches, cost, 2) == expected);
  // Rounds of 3: {7,1,4}, {0,2,6}; the two cheapest (3, 5) are left for the end.
  const std::vector<Batch> by_three = {{0}, {2}, {6}, {1}, {4}, {7}, {3}, {5}};
  CHECK(group_rounds_by_cost(batches, cost, 3) == by_three);
  CHECK(group_rounds_by_cost(batches, cost, 1) == batches);
  CHECK_THROWS(group_rounds_by_cost(batches, {1.0, 2.0}, 2));
}

TEST_CASE("group_rounds_by_cost: no cut into rounds waits less (brute force)", "[data]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> uniform(0.0, 10.0);
  for (size_t round : {2, 3, 4}) {
    for (int trial = 0; trial < 12; ++trial) {
      const size_t n = round == 4 ? 8 : 6 + static_cast<size_t>(trial % 2) * (round == 2 ? 2 : 0);
      std::vector<double> cost;
      std::vector<Batch> batches;
      for (size_t i = 0; i < n; ++i) cost.push_back(uniform(rng)), batches.push_back({i});
      const auto out = group_rounds_by_cost(batches, cost, round);
      std::vector<double> out_cost;
      for (const Batch& b : out) out_cost.push_back(cost[b.front()]);
      CAPTURE(round, n, trial);
      CHECK(round_wait(out_cost, round) == Approx(best_wait(cost, round)).margin(1e-12));
    }
  }
}

// cost_lengths: the rounds' costs from the lengths as trained (after speed perturbation), the
// batches from the manifest's (SpeechBrain's), so a step's batches cost alike as they run.
TEST_CASE("DynamicBatchSampler step_round with cost_lengths: rounds of similar trained cost",
          "[data]") {
  std::vector<double> lengths, trained;
  const double speeds[] = {0.95, 1.0, 1.05};
  for (int i = 0; i < 2000; ++i) {
    lengths.push_back(5.0 + (i * 37 % 251) * 0.1);
    trained.push_back(lengths.back() * speeds[(i * 7919) % 3]);
  }
  DynamicBatchOptions o;
  o.max_batch_length = 400.0;
  o.num_buckets = 40;
  o.seed = 11;
  o.step_round = 4;
  DynamicBatchSampler by_manifest(lengths, o, 2);
  o.cost_lengths = trained;
  DynamicBatchSampler by_trained(lengths, o, 2);
  // The same batches (SpeechBrain's), in another order.
  std::multiset<Batch> a(by_manifest.batches().begin(), by_manifest.batches().end());
  std::multiset<Batch> b(by_trained.batches().begin(), by_trained.batches().end());
  CHECK(a == b);
  CHECK(by_manifest.batches() != by_trained.batches());
  // What the ranks of a step wait for, in trained seconds of padded audio.
  const auto wait = [&](const std::vector<Batch>& batches) {
    std::vector<double> cost;
    for (const Batch& batch : batches) cost.push_back(padded_length(batch, trained));
    return round_wait(cost, 4);
  };
  const double before = wait(by_manifest.batches()), after = wait(by_trained.batches());
  CAPTURE(before, after);
  CHECK(after < 0.75 * before);  // measured: 210.3 -> 134.5 s
  o.cost_lengths = {1.0, 2.0};
  CHECK_THROWS(DynamicBatchSampler(lengths, o, 2));
}

TEST_CASE("DynamicBatchSampler step_round: rounds of similar cost, the batches are the same",
          "[data]") {
  std::vector<double> lengths;
  for (int i = 0; i < 300; ++i) lengths.push_back(0.5 + (i * 37 % 100) * 0.2);
  DynamicBatchOptions o;
  o.max_batch_length = 60.0;
  o.num_buckets = 6;
  o.seed = 7;
  DynamicBatchSampler plain(lengths, o, 3);
  std::vector<double> plain_cost;
  for (const Batch& b : plain.batches()) plain_cost.push_back(padded_length(b, lengths));
  for (size_t round : {2, 4}) {
    o.step_round = round;
    DynamicBatchSampler grouped(lengths, o, 3);
    const auto& b = grouped.batches();
    // A permutation of the same batches.
    std::multiset<Batch> a_set(plain.batches().begin(), plain.batches().end());
    std::multiset<Batch> b_set(b.begin(), b.end());
    CHECK(a_set == b_set);
    CHECK(b != plain.batches());
    std::vector<double> cost;
    for (const Batch& batch : b) cost.push_back(padded_length(batch, lengths));
    // The ranks of a step wait under a quarter of what SpeechBrain's order makes them wait.
    CAPTURE(round, round_wait(cost, round), round_wait(plain_cost, round));
    CHECK(round_wait(cost, round) < 0.25 * round_wait(plain_cost, round));
    // Every round's batches are neighbours in cost order (no costlier batch between them).
    for (size_t start = 0; start + round <= b.size(); start += round) {
      const auto [lo, hi] = std::minmax_element(cost.begin() + start, cost.begin() + start + round);
      size_t inside = 0;
      for (double c : cost) inside += c > *lo && c < *hi;
      CHECK(inside <= round - 2);
    }
  }
}

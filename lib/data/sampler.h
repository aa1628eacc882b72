// lib/data/sampler.h
// Batching of a manifest: SpeechBrain's DynamicBatchSampler (total duration per batch over length
// buckets) and fixed-size batches with ascending / descending / random sorting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace masr::data {

// Indices into a manifest's rows.
using Batch = std::vector<size_t>;

enum class BatchOrdering { kRandom, kAscending, kDescending };
// "random" | "ascending" | "descending"; anything else is a config error naming `key`.
BatchOrdering parse_batch_ordering(const std::string& text, const std::string& key);

// SB:dataio/sampler.py DynamicBatchSampler arguments (lengths are in seconds, as `length_func`
// returns x["duration"] in the LibriSpeech recipes).
struct DynamicBatchOptions {
  double max_batch_length = 0.0;          // upper bound on the sum of lengths in a batch
  int num_buckets = 0;                    // used when bucket_boundaries is empty
  std::vector<double> bucket_boundaries;  // right boundaries, ascending, >= 0
  int64_t max_batch_ex = 0;               // most examples per batch; 0: no limit (SB's None)
  bool shuffle = true;                    // shuffle examples before bucketing (seed + epoch)
  BatchOrdering batch_ordering = BatchOrdering::kRandom;
  uint64_t seed = 42;
  bool drop_last = false;  // drop the partly filled buckets left at the end
  // Batches taken together by one optimizer step (data-parallel ranks x gradient accumulation).
  // Above 1, random ordering hands out rounds of that many batches of similar cost (padded
  // length), so that no rank of a step waits long for the slowest at the gradient all-reduce
  // (group_rounds_by_cost). 1: SpeechBrain's order.
  size_t step_round = 1;
  // The lengths the rounds' costs are computed from, one per example, when they differ from
  // those the batches are made from (the lengths as trained: after speed perturbation, which
  // moves an utterance by 5 %; the batches stay SpeechBrain's); empty: the same lengths.
  std::vector<double> cost_lengths;

  void validate() const;  // config errors name the field
};

// The quantiles of a standard log-normal distribution at 1/(n+1) .. n/(n+1), scaled so that the
// last equals max_batch_length (SB's _get_boundaries_through_warping).
std::vector<double> lognormal_bucket_boundaries(double max_batch_length, int num_buckets);

// Batches are regenerated for every epoch, deterministically from seed + epoch, with torch's
// randperm (so they match SpeechBrain's for the same LibTorch version).
class DynamicBatchSampler {
 public:
  DynamicBatchSampler(std::vector<double> lengths, DynamicBatchOptions options, int64_t epoch = 0);

  // SpeechBrain's Brain calls set_epoch before each epoch; batches() are then that epoch's.
  void set_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }
  const std::vector<Batch>& batches() const { return batches_; }
  size_t size() const { return batches_.size(); }

  const std::vector<double>& bucket_boundaries() const { return boundaries_; }
  // Examples per batch in each bucket (one more bucket than boundaries, for longer examples).
  const std::vector<int64_t>& bucket_batch_sizes() const { return bucket_sizes_; }
  // One line per bucket: boundaries, batch size and how many examples fell in it.
  std::string describe() const;

 private:
  void generate();

  std::vector<double> lengths_;
  DynamicBatchOptions options_;
  std::vector<double> boundaries_;
  std::vector<int64_t> bucket_sizes_;
  std::vector<int64_t> bucket_counts_;
  std::vector<Batch> batches_;
  int64_t epoch_ = 0;
};

enum class SortOrder { kOriginal, kAscending, kDescending, kRandom };
// "original" | "ascending" | "descending" | "random" (SpeechBrain's `sorting` hparam).
SortOrder parse_sort_order(const std::string& text, const std::string& key);

struct FixedBatchOptions {
  int64_t batch_size = 8;
  SortOrder sorting = SortOrder::kOriginal;
  // SB's ReproducibleRandomSampler seed, used for kRandom with seed + epoch.
  uint64_t seed = 563375142;
  bool drop_last = false;
};

// Consecutive batches of batch_size after sorting the examples: ascending/descending by length
// (stable, as SB's filtered_sorted), or a random permutation (randperm seeded with seed + epoch).
std::vector<Batch> fixed_size_batches(const std::vector<double>& lengths,
                                      const FixedBatchOptions& options, int64_t epoch = 0);

// What a batch costs to train on: its padded length, count x longest (the encoder and the
// backward run over every padded frame).
double padded_length(const Batch& batch, const std::vector<double>& lengths);

// Reorders `batches` (cost[i]: batch i's cost) into rounds of `round` consecutive batches whose
// costs are as close as they can be: the batches sorted by cost are cut into runs of `round`,
// from the most expensive down, which minimises the summed (max - mean) cost over the rounds, the
// time the ranks of a data-parallel step wait for the slowest. Rounds keep the batches' random
// order: a round stands where its earliest batch stood, its batches in their order. The cheapest
// n % round batches, too few for a round, go at the end (a data-parallel epoch drops them). A
// permutation: nothing is lost. round <= 1 returns the batches unchanged.
std::vector<Batch> group_rounds_by_cost(std::vector<Batch> batches,
                                        const std::vector<double>& cost, size_t round);

// A random permutation of 0..n-1 as torch.randperm(n, generator=manual_seed(seed)) gives it.
std::vector<size_t> seeded_randperm(size_t n, uint64_t seed);

}  // namespace masr::data

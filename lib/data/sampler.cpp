// lib/data/sampler.cpp
// DynamicBatchSampler and fixed-size batching, reproducing SB:dataio/sampler.py (v1.0).
#include "data/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace masr::data {
namespace {

// The standard normal quantile: Acklam's rational approximation (relative error 1e-9), polished by
// two Halley steps on erfc to double precision. SciPy's lognorm.ppf(p, 1) is exp(of this).
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double low = 0.02425;
  double x;
  if (p < low || p > 1.0 - low) {
    const double q = std::sqrt(-2.0 * std::log(p < low ? p : 1.0 - p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
    if (p > 1.0 - low) x = -x;
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  }
  for (int step = 0; step < 2; ++step) {
    const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
    const double u = e * std::sqrt(2.0 * M_PI) * std::exp(x * x / 2.0);
    x -= u / (1.0 + x * u / 2.0);
  }
  return x;
}

std::vector<size_t> identity(size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  return order;
}

double max_length(const Batch& batch, const std::vector<double>& lengths) {
  double longest = -std::numeric_limits<double>::infinity();
  for (size_t index : batch) longest = std::max(longest, lengths[index]);
  return longest;
}

}  // namespace

std::vector<size_t> seeded_randperm(size_t n, uint64_t seed) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const at::Tensor perm = at::randperm(static_cast<int64_t>(n), generator, at::kLong);
  const int64_t* data = perm.data_ptr<int64_t>();
  return std::vector<size_t>(data, data + n);
}

BatchOrdering parse_batch_ordering(const std::string& text, const std::string& key) {
  if (text == "random") return BatchOrdering::kRandom;
  if (text == "ascending") return BatchOrdering::kAscending;
  if (text == "descending") return BatchOrdering::kDescending;
  throw_config_error(key + ": batch_ordering '" + text +
                     "' is not one of random, ascending, descending");
}

SortOrder parse_sort_order(const std::string& text, const std::string& key) {
  if (text == "original") return SortOrder::kOriginal;
  if (text == "ascending") return SortOrder::kAscending;
  if (text == "descending") return SortOrder::kDescending;
  if (text == "random") return SortOrder::kRandom;
  throw_config_error(key + ": sorting '" + text +
                     "' is not one of original, ascending, descending, random");
}

void DynamicBatchOptions::validate() const {
  if (!(max_batch_length > 0.0)) {
    throw_config_error("DynamicBatchSampler: max_batch_length must be > 0, got " +
                       std::to_string(max_batch_length));
  }
  if (bucket_boundaries.empty() && num_buckets <= 0) {
    throw_config_error(
        "DynamicBatchSampler: give num_buckets (> 0) or bucket_boundaries (SpeechBrain has no "
        "default for them)");
  }
  for (size_t i = 0; i < bucket_boundaries.size(); ++i) {
    if (bucket_boundaries[i] < 0.0) {
      throw_config_error("DynamicBatchSampler: bucket_boundaries must be >= 0, got " +
                         std::to_string(bucket_boundaries[i]));
    }
    if (i > 0 && bucket_boundaries[i] <= bucket_boundaries[i - 1]) {
      throw_config_error(
          "DynamicBatchSampler: bucket_boundaries must be ascending without duplicates");
    }
  }
  if (max_batch_ex < 0) throw_config_error("DynamicBatchSampler: max_batch_ex must be >= 0");
}

std::vector<double> lognormal_bucket_boundaries(double max_batch_length, int num_buckets) {
  // Evenly spaced points of the latent (normal) space, mapped through the log-normal quantile.
  std::vector<double> quantiles(static_cast<size_t>(num_buckets));
  for (int i = 0; i < num_buckets; ++i) {
    quantiles[i] = std::exp(normal_quantile(static_cast<double>(i + 1) / (num_buckets + 1)));
  }
  const double scale = max_batch_length / quantiles.back();
  for (double& q : quantiles) q *= scale;
  return quantiles;
}

DynamicBatchSampler::DynamicBatchSampler(std::vector<double> lengths, DynamicBatchOptions options,
                                         int64_t epoch)
    : lengths_(std::move(lengths)), options_(std::move(options)), epoch_(epoch) {
  options_.validate();
  if (!options_.cost_lengths.empty() && options_.cost_lengths.size() != lengths_.size()) {
    throw Error(ErrorKind::kInternal,
                "DynamicBatchSampler: " + std::to_string(options_.cost_lengths.size()) +
                    " cost lengths for " + std::to_string(lengths_.size()) + " examples");
  }
  boundaries_ = options_.bucket_boundaries.empty()
                    ? lognormal_bucket_boundaries(options_.max_batch_length, options_.num_buckets)
                    : options_.bucket_boundaries;
  // How many examples of a bucket's longest length fit in max_batch_length (at least 1, at most
  // max_batch_ex); examples longer than the last boundary go one per batch.
  for (double boundary : boundaries_) {
    const double fit = boundary > 0.0 ? std::floor(options_.max_batch_length / boundary)
                                      : std::numeric_limits<double>::infinity();
    double size = std::max(1.0, fit);
    if (options_.max_batch_ex > 0)
      size = std::min(size, static_cast<double>(options_.max_batch_ex));
    bucket_sizes_.push_back(std::isinf(size) ? std::numeric_limits<int64_t>::max()
                                             : static_cast<int64_t>(size));
  }
  bucket_sizes_.push_back(1);
  generate();
}

void DynamicBatchSampler::set_epoch(int64_t epoch) {
  epoch_ = epoch;
  generate();
}

void DynamicBatchSampler::generate() {
  const uint64_t seed = options_.seed + static_cast<uint64_t>(epoch_);
  const std::vector<size_t> order =
      options_.shuffle ? seeded_randperm(lengths_.size(), seed) : identity(lengths_.size());
  batches_.clear();
  std::vector<Batch> open(bucket_sizes_.size());
  bucket_counts_.assign(bucket_sizes_.size(), 0);
  for (size_t index : order) {
    // np.searchsorted (side "left"): the first boundary >= the length.
    const size_t bucket = static_cast<size_t>(
        std::lower_bound(boundaries_.begin(), boundaries_.end(), lengths_[index]) -
        boundaries_.begin());
    open[bucket].push_back(index);
    ++bucket_counts_[bucket];
    if (static_cast<int64_t>(open[bucket].size()) >= bucket_sizes_[bucket]) {
      batches_.push_back(std::move(open[bucket]));
      open[bucket].clear();
    }
  }
  if (!options_.drop_last) {
    for (auto& batch : open) {
      if (!batch.empty()) batches_.push_back(std::move(batch));
    }
  }
  // SB v1.0 reorders the batches in every case (_permute_batches).
  if (options_.batch_ordering == BatchOrdering::kRandom) {
    const std::vector<size_t> perm = seeded_randperm(batches_.size(), seed);
    std::vector<Batch> shuffled;
    shuffled.reserve(batches_.size());
    for (size_t k : perm) shuffled.push_back(std::move(batches_[k]));
    batches_ = std::move(shuffled);
    if (options_.step_round > 1) {
      std::vector<double> cost;
      cost.reserve(batches_.size());
      const std::vector<double>& by =
          options_.cost_lengths.empty() ? lengths_ : options_.cost_lengths;
      for (const Batch& b : batches_) cost.push_back(padded_length(b, by));
      batches_ = group_rounds_by_cost(std::move(batches_), cost, options_.step_round);
    }
  } else {
    const bool ascending = options_.batch_ordering == BatchOrdering::kAscending;
    // Python's sorted (also with reverse=True) keeps equal keys in their original order.
    std::stable_sort(batches_.begin(), batches_.end(), [&](const Batch& x, const Batch& y) {
      const double lx = max_length(x, lengths_), ly = max_length(y, lengths_);
      return ascending ? lx < ly : lx > ly;
    });
  }
}

std::string DynamicBatchSampler::describe() const {
  std::ostringstream out;
  out << "DynamicBatchSampler: " << batches_.size() << " batches, " << boundaries_.size()
      << " buckets (epoch " << epoch_ << ")\n";
  for (size_t i = 0; i < bucket_sizes_.size(); ++i) {
    const double left = i == 0 ? 0.0 : boundaries_[i - 1];
    out << "  bucket " << i << " [" << left << ", ";
    if (i < boundaries_.size())
      out << boundaries_[i];
    else
      out << "inf";
    out << "]: batch size " << bucket_sizes_[i] << ", " << bucket_counts_[i] << " examples\n";
  }
  return out.str();
}

double padded_length(const Batch& batch, const std::vector<double>& lengths) {
  return batch.empty() ? 0.0 : static_cast<double>(batch.size()) * max_length(batch, lengths);
}

std::vector<Batch> group_rounds_by_cost(std::vector<Batch> batches,
                                        const std::vector<double>& cost, size_t round) {
  if (cost.size() != batches.size()) {
    throw Error(ErrorKind::kInternal, "group_rounds_by_cost: one cost per batch expected");
  }
  if (round <= 1) return batches;
  // Most expensive first; equal costs keep their order, so the result depends on the plan only.
  std::vector<size_t> by_cost = identity(batches.size());
  std::stable_sort(by_cost.begin(), by_cost.end(),
                   [&](size_t x, size_t y) { return cost[x] > cost[y]; });
  const size_t rounds = batches.size() / round;
  std::vector<std::vector<size_t>> members(rounds);
  for (size_t r = 0; r < rounds; ++r) {
    members[r].assign(by_cost.begin() + static_cast<std::ptrdiff_t>(r * round),
                      by_cost.begin() + static_cast<std::ptrdiff_t>((r + 1) * round));
    std::sort(members[r].begin(), members[r].end());
  }
  std::sort(members.begin(), members.end(),
            [](const std::vector<size_t>& x, const std::vector<size_t>& y) {
              return x.front() < y.front();
            });
  std::vector<size_t> rest(by_cost.begin() + static_cast<std::ptrdiff_t>(rounds * round),
                           by_cost.end());
  std::sort(rest.begin(), rest.end());
  std::vector<Batch> out;
  out.reserve(batches.size());
  for (const auto& m : members) {
    for (size_t k : m) out.push_back(std::move(batches[k]));
  }
  for (size_t k : rest) out.push_back(std::move(batches[k]));
  return out;
}

std::vector<Batch> fixed_size_batches(const std::vector<double>& lengths,
                                      const FixedBatchOptions& options, int64_t epoch) {
  if (options.batch_size <= 0) {
    throw_config_error("batch_size must be > 0, got " + std::to_string(options.batch_size));
  }
  std::vector<size_t> order = identity(lengths.size());
  if (options.sorting == SortOrder::kRandom) {
    order = seeded_randperm(lengths.size(), options.seed + static_cast<uint64_t>(epoch));
  } else if (options.sorting != SortOrder::kOriginal) {
    const bool ascending = options.sorting == SortOrder::kAscending;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return ascending ? lengths[x] < lengths[y] : lengths[x] > lengths[y];
    });
  }
  std::vector<Batch> batches;
  const size_t size = static_cast<size_t>(options.batch_size);
  for (size_t start = 0; start < order.size(); start += size) {
    const size_t end = std::min(order.size(), start + size);
    if (end - start < size && options.drop_last) break;
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

}  // namespace masr::data

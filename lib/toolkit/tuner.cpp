// lib/toolkit/tuner.cpp
// Threads first (train step at a small batch, decode at batch 1), then batch sizes doubling until
// the next one would not fit the memory budget or stops paying, per precision.
#include "toolkit/tuner.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.h"
#include "core/log.h"
#include "hparams/hparams.h"
#include "runtime/peak_memory.h"
#include "toolkit/auto_settings.h"
#include "toolkit/model_facts.h"
#include "toolkit/step_bench.h"

namespace masr::toolkit {
namespace {

struct Candidate {
  int threads = 1;
  runtime::Precision precision = runtime::Precision::kFp32;
  int64_t batch = 1;
  bool ok = false;
  double throughput = 0;  // audio-s/s (train) or RTFx (decode)
  double median_s = 0;
  int64_t peak_bytes = 0;
};

std::vector<int> thread_candidates(const TuneOptions& o, const RuntimeProfile& p) {
  if (!o.threads.empty()) return o.threads;
  std::vector<int> out;
  for (int t = 1; t < p.intra_op_threads; t *= 2) out.push_back(t);
  out.push_back(p.intra_op_threads);
  return out;
}

std::vector<runtime::Precision> precision_candidates(const RuntimeProfile& p) {
  if (!p.device.is_cuda() || p.precision == runtime::Precision::kFp32) {
    return {runtime::Precision::kFp32};
  }
  return {p.precision, runtime::Precision::kFp32};
}

class Measurer {
 public:
  Measurer(const TuneOptions& o, const hparams::Hparams& hp) : o_(o), train_(hp, o.device) {
    settings_.warmup = o.warmup;
    settings_.repeat = o.repeat;
    decode_hp_ = &hp;
  }

  // Runs one candidate; failures become warnings (the plan falls back to what did work).
  Candidate run(Candidate c, bool decode) {
    at::set_num_threads(c.threads);
    StepSpec spec{o_.device, c.precision, c.batch, o_.seconds};
    try {
      ++count_;
      const runtime::BenchResult r =
          decode ? decoder().run(spec, settings_) : train_.run(spec, settings_);
      c.median_s = r.median();
      c.throughput = decode ? 1.0 / std::max(1e-12, r.median() / r.work) : r.throughput();
      for (const auto& [name, value] : r.metrics) {
        if (name == "peak_bytes") c.peak_bytes = static_cast<int64_t>(value);
      }
      c.ok = true;
    } catch (const std::exception& e) {
      const std::string what = e.what();
      MASR_LOG_WARN(
          "tune: %s batch %lld, %s, %d threads failed (%s); falling back",
          decode ? "decode" : "train step", static_cast<long long>(c.batch),
          runtime::precision_name(c.precision), c.threads,
          runtime::is_out_of_memory(what) ? "out of memory" : what.substr(0, 200).c_str());
    }
    log_.push_back({{"kind", decode ? "decode" : "train"},
                    {"threads", c.threads},
                    {"precision", runtime::precision_name(c.precision)},
                    {"batch", c.batch},
                    {"seconds", o_.seconds},
                    {"ok", c.ok},
                    {"median_s", c.median_s},
                    {decode ? "rtfx" : "audio_s_per_s", c.throughput},
                    {"peak_bytes", c.peak_bytes}});
    return c;
  }
  int count() const { return count_; }
  const nlohmann::json& log() const { return log_; }

 private:
  DecodeBench& decoder() {
    if (!decode_) decode_ = std::make_unique<DecodeBench>(*decode_hp_, o_.device);
    return *decode_;
  }
  const TuneOptions& o_;
  TrainStepBench train_;
  std::unique_ptr<DecodeBench> decode_;
  const hparams::Hparams* decode_hp_ = nullptr;
  runtime::BenchSettings settings_;
  int count_ = 0;
  nlohmann::json log_ = nlohmann::json::array();
};

Candidate best_of(const std::vector<Candidate>& all) {
  Candidate best;
  for (const auto& c : all) {
    if (c.ok && c.throughput > best.throughput) best = c;
  }
  return best;
}

// Doubling batch sizes at `threads` and `precision` while the next one is predicted to fit (peak
// memory grows about linearly with the batch) and the last doubling gained at least 5 %.
std::vector<Candidate> sweep_batches(Measurer& m, const TuneOptions& o, const RuntimeProfile& p,
                                     int threads, runtime::Precision precision) {
  std::vector<Candidate> out;
  std::vector<int64_t> batches = o.batches;
  const bool explicit_batches = !batches.empty();
  if (!explicit_batches) {
    for (int64_t b = 1; b <= o.max_batch; b *= 2) batches.push_back(b);
  }
  for (int64_t b : batches) {
    Candidate c = m.run({threads, precision, b}, false);
    out.push_back(c);
    if (!c.ok) break;  // out of memory or unsupported: larger ones will not do better
    if (explicit_batches) continue;
    const double next_peak = static_cast<double>(c.peak_bytes) * 2.0;
    if (next_peak > static_cast<double>(p.memory_budget_bytes)) break;
    if (out.size() >= 2 && c.throughput < 1.05 * out[out.size() - 2].throughput) break;
  }
  return out;
}

// The growth of peak memory per audio second between the smallest and the largest batch that
// ran (the process's baseline cancels out); with one batch, its whole peak (an upper bound).
double memory_per_audio_second(const std::vector<Candidate>& batches, double seconds) {
  const Candidate* lo = nullptr;
  const Candidate* hi = nullptr;
  for (const auto& c : batches) {
    if (!c.ok) continue;
    if (lo == nullptr || c.batch < lo->batch) lo = &c;
    if (hi == nullptr || c.batch > hi->batch) hi = &c;
  }
  if (lo == nullptr) return 0;
  if (hi->batch > lo->batch && hi->peak_bytes > lo->peak_bytes) {
    return static_cast<double>(hi->peak_bytes - lo->peak_bytes) /
           (static_cast<double>(hi->batch - lo->batch) * seconds);
  }
  return static_cast<double>(hi->peak_bytes) / (static_cast<double>(hi->batch) * seconds);
}

// The fastest train step's settings replace the profile's; the accumulation keeps the
// effective batch and the measured memory growth caps the batch length.
void adopt(const Candidate& best, const std::vector<Candidate>& batches, double seconds,
           RuntimeProfile& profile) {
  profile.intra_op_threads = best.threads;
  profile.inter_op_threads = std::min(profile.inter_op_threads, best.threads);
  profile.precision = best.precision;
  const int64_t effective = profile.effective_batch();
  profile.batch_size = best.batch;
  profile.grad_accumulation_factor =
      std::max<int64_t>(1, (effective + best.batch - 1) / best.batch);
  const double per_s = memory_per_audio_second(batches, seconds);
  const double fits =
      per_s > 0 ? std::floor(static_cast<double>(profile.memory_budget_bytes) / per_s) : 0;
  if (fits > 0 && fits < profile.max_batch_length_train) profile.max_batch_length_train = fits;
  profile.reasons.push_back(
      "measured: batch " + std::to_string(best.batch) + ", " + std::to_string(best.threads) +
      " threads, " + runtime::precision_name(best.precision) +
      " was the fastest train step that fit (" + std::to_string(best.throughput) + " audio-s/s)");
}

// Threads first (train step at batch 2, decode at batch 1 for latency), then batch sizes per
// precision at the best threads. Fills `plan` (not its signature); returns the measurements run.
int measure_plan(const TuneOptions& o, const hparams::Hparams& hp, RuntimeProfile profile,
                 RuntimePlan& plan) {
  runtime::apply_cuda_settings(profile.tf32, profile.cudnn_benchmark);
  const int previous_threads = at::get_num_threads();
  Measurer m(o, hp);
  std::vector<Candidate> train_threads, decode_threads;
  for (int t : thread_candidates(o, profile)) {
    train_threads.push_back(
        m.run({t, runtime::Precision::kFp32, o.batches.empty() ? 2 : o.batches.front()}, false));
    decode_threads.push_back(m.run({t, runtime::Precision::kFp32, 1}, true));
  }
  const Candidate threads = best_of(train_threads), decode = best_of(decode_threads);
  std::vector<Candidate> batches;
  for (const runtime::Precision precision : precision_candidates(profile)) {
    const int t = threads.ok ? threads.threads : profile.intra_op_threads;
    for (const auto& c : sweep_batches(m, o, profile, t, precision)) batches.push_back(c);
  }
  at::set_num_threads(previous_threads);
  const Candidate best = best_of(batches);
  if (best.ok) {
    adopt(best, batches, o.seconds, profile);
  } else {
    MASR_LOG_WARN("tune: no candidate could be measured; the plan is the detect profile");
  }
  profile.reasons.push_back("CUDA graphs: not measured (no graph-capture path in this build)");
  plan.profile = profile;
  plan.decode_threads = decode.ok ? decode.threads : profile.intra_op_threads;
  plan.measured = m.log();
  return m.count();
}

}  // namespace

TuneOutcome tune(const TuneOptions& o) {
  const runtime::MachineInfo machine = runtime::detect_machine();
  const hparams::Hparams hp =
      load_hparams_for_runtime(o.hparams_file, o.overrides, machine, o.device);
  const ModelFacts facts = model_facts_from(hp);
  nlohmann::json constraints = nlohmann::json::object();
  if (!o.threads.empty()) constraints["threads"] = o.threads;
  if (!o.batches.empty()) constraints["batches"] = o.batches;
  constraints["seconds"] = o.seconds;
  TuneOutcome out;
  out.plan.signature = plan_signature(machine, o.device, facts.hparams_hash, constraints);
  out.path = plan_path(out.plan.signature);
  if (!o.replan) {
    if (auto cached = load_plan(out.path, out.plan.signature)) {
      MASR_LOG_INFO(
          "tune: reusing the cached plan %s (signature %s); nothing measured "
          "(--replan measures again)",
          out.path.c_str(), out.plan.signature.hash.c_str());
      out.plan = *cached;
      out.source = "cache";
      return out;
    }
  }
  out.measurements = measure_plan(o, hp, derive_profile(machine, o.device, &facts), out.plan);
  out.source = "measured";
  save_plan(out.plan, out.path);
  MASR_LOG_INFO("tune: %d measurements; plan saved to %s", out.measurements, out.path.c_str());
  return out;
}

}  // namespace masr::toolkit

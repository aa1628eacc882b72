// lib/toolkit/loader_bench.cpp
// The "loader" benchmark: the training input pipeline end to end on a synthetic corpus written to
// a temporary folder, so it measures file reading and resampling as well as features.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "audio/audio_reader.h"
#include "audio/speed_perturb.h"
#include "core/error.h"
#include "core/remove_tree.h"
#include "core/string_printf.h"
#include "data/batch.h"
#include "data/loader.h"
#include "data/manifest.h"
#include "data/sampler.h"
#include "features/fbank.h"
#include "runtime/benchmark.h"
#include "toolkit/benchmarks.h"

namespace masr::toolkit {
namespace {

// Measures lib/data: its names unqualified.
using namespace data;  // NOLINT(build/namespaces)

namespace fs = std::filesystem;

constexpr int kFiles = 24;
constexpr int kModelRate = 16000;
// Files at the model's rate and at two others, so a third of the items resample on reading.
constexpr int kFileRates[] = {16000, 22050, 44100};

// A temporary folder removed with everything in it when the benchmark ends.
class TempDir {
 public:
  TempDir() {
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = fs::temp_directory_path() / ("masr_loader_bench_" + std::to_string(stamp) + "_" +
                                         std::to_string(std::random_device()()));
    fs::create_directories(path_);
  }
  ~TempDir() { remove_tree(path_.string()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A few harmonics with a slow pitch glide, amplitude bursts like syllables, and low noise.
std::vector<float> synth_utterance(double seconds, int rate, std::mt19937_64& rng) {
  const size_t n = static_cast<size_t>(seconds * rate);
  std::uniform_real_distribution<double> f0_dist(90.0, 250.0);
  std::normal_distribution<double> noise(0.0, 0.01);
  const double f0 = f0_dist(rng);
  std::vector<float> x(n);
  double phase = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / rate;
    phase += 2.0 * M_PI * f0 * (1.0 + 0.1 * std::sin(2.0 * M_PI * 0.7 * t)) / rate;
    const double envelope = 0.5 + 0.5 * std::sin(2.0 * M_PI * 4.0 * t);
    double v = 0.0;
    for (int h = 1; h <= 8; ++h) v += std::sin(h * phase) / h;
    x[i] = static_cast<float>(0.1 * envelope * v + noise(rng));
  }
  return x;
}

// Writes kFiles WAVs of 1.5 to 3.5 s and a SpeechBrain CSV naming them; returns the CSV's path.
std::string write_corpus(const fs::path& dir) {
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> duration(1.5, 3.5);
  Manifest manifest;
  for (int i = 0; i < kFiles; ++i) {
    const int rate = kFileRates[i % 3];
    ManifestRow row;
    row.id = "utt" + std::to_string(i);
    row.wav = (dir / (row.id + ".wav")).string();
    const std::vector<float> samples = synth_utterance(duration(rng), rate, rng);
    audio::write_audio(row.wav, samples, rate);
    row.duration = static_cast<double>(samples.size()) / rate;
    row.spk_id = "spk" + std::to_string(i % 4);
    row.wrd = "SYNTHETIC";
    manifest.rows.push_back(std::move(row));
  }
  const std::string csv = (dir / "train.csv").string();
  write_speechbrain_csv(csv, manifest);
  return csv;
}

// One pass over the corpus as a training epoch would make it; returns the frames produced so the
// work cannot be optimized away.
int64_t one_epoch(const Manifest& manifest, const DynamicBatchSampler& sampler, int num_workers,
                  const features::Fbank& fbank, const audio::SpeedPerturb& perturb) {
  auto make_item = [&](const ManifestRow& row) {
    const audio::Audio audio = audio::read_audio(row.wav, kModelRate);
    // Seeded per utterance, so every worker count draws the same speeds.
    std::mt19937_64 rng(std::hash<std::string>()(row.id));
    std::vector<float> samples = perturb(audio.samples, rng).samples;
    const at::Tensor wav =
        at::from_blob(samples.data(), {static_cast<int64_t>(samples.size())}, at::kFloat);
    return fbank(wav)[0];  // (frames, n_mels); a new tensor, independent of `samples`
  };
  LoaderOptions options;
  options.num_workers = num_workers;
  DataLoader<at::Tensor> loader(manifest, sampler.batches(), make_item, options);
  int64_t frames = 0;
  std::vector<at::Tensor> items;
  while (loader.next(items)) frames += pad_right(items).data.size(1);
  return frames;
}

// The training input pipeline on real files (SpeechBrain CSVs given with --input): read and
// decode, resample to 16 kHz, speed perturbation 95/100/105 and padding into batches of
// --batch-seconds, as `mamba-asr train` makes them for a GPU (its features are computed there).
std::vector<runtime::BenchResult> run_loader_on_files(const runtime::BenchSettings& settings) {
  Manifest manifest;
  for (const auto& csv : settings.inputs) {
    if (csv.size() < 4 || csv.compare(csv.size() - 4, 4, ".csv") != 0) {
      throw Error(ErrorKind::kUsage,
                  "bench loader: --input takes SpeechBrain CSV files (ID, "
                  "duration, wav, ...); '" +
                      csv + "' is not one");
    }
    // $data_root in the CSV stands for the CSV's own folder.
    const std::string folder = fs::absolute(csv).parent_path().string();
    for (auto& row : read_speechbrain_csv(csv, {{"data_root", folder}}).rows) {
      manifest.rows.push_back(std::move(row));
    }
  }
  std::vector<double> lengths;
  for (const auto& row : manifest.rows) lengths.push_back(row.duration);
  DynamicBatchOptions batching;
  batching.max_batch_length = settings.batch_seconds > 0 ? settings.batch_seconds : 500.0;
  batching.num_buckets = 200;  // ConMamba-L's num_bucket
  const DynamicBatchSampler sampler(lengths, batching);
  audio::SpeedPerturbConfig speeds;
  speeds.speeds = {95, 100, 105};
  const audio::SpeedPerturb perturb(speeds);
  auto make_item = [&](const ManifestRow& row) {
    std::mt19937_64 rng(std::hash<std::string>()(row.id));
    std::vector<float> samples =
        perturb(audio::read_audio(row.wav, kModelRate).samples, rng).samples;
    return at::from_blob(samples.data(), {static_cast<int64_t>(samples.size())}, at::kFloat)
        .clone();
  };
  std::vector<int64_t> counts = settings.workers;
  if (counts.empty()) {
    const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
    for (int64_t w = 1; w <= cores; w *= 2) counts.push_back(w);
  }
  std::vector<runtime::BenchResult> results;
  for (int64_t workers : counts) {
    // The wait for the first batch (what a training step waits for at an epoch's start), per run.
    std::vector<double> first_ms;
    auto r = runtime::measure("loader-files/workers" + std::to_string(workers), settings, [&] {
      const auto start = std::chrono::steady_clock::now();
      LoaderOptions options;
      options.num_workers = static_cast<int>(workers);
      DataLoader<at::Tensor> loader(manifest, sampler.batches(), make_item, options);
      std::vector<at::Tensor> items;
      bool first = true;
      while (loader.next(items)) {
        if (first) {
          first_ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
          first = false;
        }
        (void)pad_right(items);
      }
    });
    r.work = manifest.total_duration();
    r.work_unit = "audio-s";
    r.note = string_printf(
        "%zu files (%.0f s), %zu batches of <= %.0f s, read + 16 kHz + speed 95/100/105 + "
        "padding, %lld workers",
        manifest.size(), manifest.total_duration(), sampler.size(), batching.max_batch_length,
        static_cast<long long>(workers));
    r.metrics.emplace_back("audio_s_per_s_per_worker",
                           r.throughput() / static_cast<double>(workers));
    if (!first_ms.empty()) {  // the median over every run, warm-ups included
      std::sort(first_ms.begin(), first_ms.end());
      r.metrics.emplace_back("first_batch_ms", first_ms[first_ms.size() / 2]);
    }
    results.push_back(std::move(r));
  }
  return results;
}

std::vector<runtime::BenchResult> run_loader_benchmark(const runtime::BenchSettings& settings) {
  if (!settings.inputs.empty()) return run_loader_on_files(settings);
  const TempDir dir;
  const Manifest manifest = read_speechbrain_csv(write_corpus(dir.path()));
  std::vector<double> lengths;
  for (const auto& row : manifest.rows) lengths.push_back(row.duration);
  DynamicBatchOptions batching;
  batching.max_batch_length = 12.0;
  batching.num_buckets = 4;
  const DynamicBatchSampler sampler(lengths, batching);

  features::FbankConfig config;
  config.n_mels = 80;
  const features::Fbank fbank(config);
  audio::SpeedPerturbConfig speeds;
  speeds.speeds = {95, 100, 105};
  const audio::SpeedPerturb perturb(speeds);

  std::vector<runtime::BenchResult> results;
  const std::vector<int64_t> counts =
      settings.workers.empty() ? std::vector<int64_t>{0, 1, 2} : settings.workers;
  for (int64_t w : counts) {
    const int workers = static_cast<int>(w);
    auto r = runtime::measure("loader/workers" + std::to_string(workers), settings,
                              [&] { (void)one_epoch(manifest, sampler, workers, fbank, perturb); });
    r.work = manifest.total_duration();
    r.work_unit = "audio-s";
    r.note = string_printf(
        "%zu WAVs at 16/22.05/44.1 kHz (%.1f s), %zu batches of <= 12 s, speed 95/100/105, "
        "Fbank 80 mels, %d intra-op threads",
        manifest.size(), manifest.total_duration(), sampler.size(), at::get_num_threads());
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

void register_loader_bench() {
  runtime::register_benchmark(
      {"loader",
       "DataLoader over 24 synthetic WAVs (1.5-3.5 s at 16, 22.05 and 44.1 kHz): read, resample to "
       "16 kHz, speed perturbation 95/100/105, SpeechBrain Fbank (80 mels), padding; "
       "DynamicBatchSampler batches of <= 12 s; 0, 1 and 2 workers (--workers); throughput in "
       "audio seconds. With --input CSV...: those files as `train` loads them for a GPU (read, "
       "16 kHz, speed perturbation, padding into --batch-seconds batches) for 1, 2, 4, ... workers",
       run_loader_benchmark});
}

}  // namespace masr::toolkit

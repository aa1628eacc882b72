// tests/data/test_loader_pipeline.cpp
// The loader with a real item pipeline (WAVs at several rates read from a CSV manifest, resampled,
// speed-perturbed, Fbank, padded): the same features whatever the number of workers.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <random>

#include <unistd.h>

#include "audio/audio_reader.h"
#include "audio/speed_perturb.h"
#include "data/batch.h"
#include "data/loader.h"
#include "data/manifest.h"
#include "data/sampler.h"
#include "features/fbank.h"
#include "core/remove_tree.h"

using namespace masr::data;
namespace fs = std::filesystem;

namespace {

std::vector<float> chirp(double seconds, int rate, double f0) {
  std::vector<float> x(static_cast<size_t>(seconds * rate));
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / rate;
    x[i] = static_cast<float>(0.3 * std::sin(2 * M_PI * (f0 + 200 * t) * t));
  }
  return x;
}

// Padded features of every batch, in order.
std::vector<PaddedTensor> load_all(const Manifest& manifest, const std::vector<Batch>& batches,
                                   int workers) {
  masr::features::FbankConfig config;
  config.n_mels = 80;
  const masr::features::Fbank fbank(config);
  const masr::audio::SpeedPerturb perturb({16000, {95, 100, 105}});
  auto make_item = [&](const ManifestRow& row) {
    const auto audio = masr::audio::read_audio(row.wav, 16000);
    std::mt19937_64 rng(std::hash<std::string>()(row.id));
    std::vector<float> x = perturb(audio.samples, rng).samples;
    return fbank(at::from_blob(x.data(), {static_cast<int64_t>(x.size())}, at::kFloat))[0];
  };
  LoaderOptions options;
  options.num_workers = workers;
  DataLoader<at::Tensor> loader(manifest, batches, make_item, options);
  std::vector<PaddedTensor> out;
  std::vector<at::Tensor> items;
  while (loader.next(items)) out.push_back(pad_right(items));
  return out;
}

}  // namespace

TEST_CASE("a feature-extracting loader gives the same batches with 0, 1 and 2 workers", "[data]") {
  const fs::path dir = fs::temp_directory_path() / ("masr_pipeline_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Manifest written;
  const int rates[] = {16000, 8000, 44100};
  for (int i = 0; i < 6; ++i) {
    ManifestRow row;
    row.id = "utt" + std::to_string(i);
    row.wav = (dir / (row.id + ".wav")).string();
    const int rate = rates[i % 3];
    const auto x = chirp(0.3 + 0.1 * i, rate, 100.0 * (i + 1));
    masr::audio::write_audio(row.wav, x, rate);
    row.duration = static_cast<double>(x.size()) / rate;
    written.rows.push_back(row);
  }
  write_speechbrain_csv((dir / "train.csv").string(), written);
  const Manifest manifest = read_speechbrain_csv((dir / "train.csv").string());
  std::vector<double> lengths;
  for (const auto& row : manifest.rows) lengths.push_back(row.duration);
  DynamicBatchOptions options;
  options.max_batch_length = 1.5;
  options.num_buckets = 2;
  const DynamicBatchSampler sampler(lengths, options);
  REQUIRE(sampler.size() >= 2);

  const auto serial = load_all(manifest, sampler.batches(), 0);
  REQUIRE(serial.size() == sampler.size());
  for (size_t b = 0; b < serial.size(); ++b) {
    // Padded to the longest item; the longest has relative length 1.
    CHECK(serial[b].data.size(0) == static_cast<int64_t>(sampler.batches()[b].size()));
    CHECK(serial[b].data.size(2) == 80);
    CHECK(serial[b].lengths.max().item<float>() == 1.0f);
  }
  for (int workers : {1, 2}) {
    const auto parallel = load_all(manifest, sampler.batches(), workers);
    REQUIRE(parallel.size() == serial.size());
    for (size_t b = 0; b < serial.size(); ++b) {
      INFO("workers " << workers << ", batch " << b);
      // The same samples and speeds; only BLAS blocking in other threads may round differently.
      REQUIRE(parallel[b].data.sizes() == serial[b].data.sizes());
      CHECK((parallel[b].data - serial[b].data).abs().max().item<float>() <= 1e-4f);
      CHECK(at::equal(parallel[b].lengths, serial[b].lengths));
    }
  }
  masr::remove_tree(dir);
}

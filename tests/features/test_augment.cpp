// tests/features/test_augment.cpp
// SpectrogramDrop, Warping, AddNoise, RandAmp, DoClip, DropBitResolution, Augmenter and mamba-asr's
// own VTLP, SpectralSmoothing, Reverb and Vocoder:
// hand-checked cases, statistics over seeds,
// reproducibility, parity with a PyTorch reference of SpeechBrain v1.0's formulas, hparams
// builders.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "core/error.h"
#include "core/remove_tree.h"
#include "features/augment/amplitude.h"
#include "features/augment/augmenter.h"
#include "features/augment/noise.h"
#include "features/augment/reverb.h"
#include "features/augment/spectral_smoothing.h"
#include "features/augment/spectrogram_drop.h"
#include "features/augment/vocoder.h"
#include "features/augment/vtlp.h"
#include "features/augment/warping.h"
#include "hparams/hparams.h"
#include "toolkit/registration.h"

using namespace masr::features;
namespace fs = std::filesystem;

namespace {

at::Tensor full_lengths(int64_t batch) { return torch::ones({batch}); }

at::Tensor ramp(int64_t b, int64_t t, int64_t f) {
  return torch::arange(b * t * f, torch::kFloat).view({b, t, f});
}

// Lengths of the runs of zeros in row r of a (B, T) boolean "dropped" matrix.
std::vector<int64_t> zero_runs(const at::Tensor& dropped) {
  std::vector<int64_t> runs;
  int64_t run = 0;
  for (int64_t t = 0; t < dropped.size(0); ++t) {
    if (dropped[t].item<bool>()) {
      ++run;
    } else if (run > 0) {
      runs.push_back(run);
      run = 0;
    }
  }
  if (run > 0) runs.push_back(run);
  return runs;
}

void write_floats(const fs::path& path, const at::Tensor& x) {
  auto c = x.contiguous();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(c.data_ptr<float>()), c.numel() * sizeof(float));
}

at::Tensor read_floats(const fs::path& path, at::IntArrayRef shape) {
  auto out = torch::empty(shape, torch::kFloat);
  std::ifstream(path, std::ios::binary)
      .read(reinterpret_cast<char*>(out.data_ptr<float>()), out.numel() * sizeof(float));
  return out;
}

// Runs tests/features/augment_reference.py on x and returns its output.
at::Tensor python_reference(const at::Tensor& x, const std::string& kind, uint64_t seed,
                            const std::string& params) {
  const fs::path dir = fs::temp_directory_path() / ("masr_aug_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_floats(dir / "in.bin", x);
  const std::string cmd =
      "/usr/bin/python3 " MASR_SOURCE_DIR "/tests/features/augment_reference.py " + kind + " " +
      (dir / "in.bin").string() + " " + (dir / "out.bin").string() + " " +
      std::to_string(x.size(0)) + " " + std::to_string(x.size(1)) + " " +
      std::to_string(x.size(2)) + " " + std::to_string(seed) + " " + params;
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto out = read_floats(dir / "out.bin", x.sizes());
  masr::remove_tree(dir);
  return out;
}

// A fake augmentation that records its order of application: x -> x * 10 + tag.
class Tagger : public Augmentation {
 public:
  explicit Tagger(int tag) : tag_(tag) {}
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator&) const override {
    return {x * 10 + tag_, lengths, {}};
  }
  std::string name() const override { return "Tagger" + std::to_string(tag_); }

 private:
  int tag_;
};

std::vector<std::shared_ptr<const Augmentation>> taggers(int n) {
  std::vector<std::shared_ptr<const Augmentation>> out;
  for (int i = 1; i <= n; ++i) out.push_back(std::make_shared<Tagger>(i));
  return out;
}

SpectrogramDropConfig drop_cfg(int64_t len_low, int64_t len_high, int64_t count_low,
                               int64_t count_high, const std::string& replace, int64_t dim) {
  SpectrogramDropConfig c;
  c.drop_length_low = len_low;
  c.drop_length_high = len_high;
  c.drop_count_low = count_low;
  c.drop_count_high = count_high;
  c.replace = replace;
  c.dim = dim;
  return c;
}

WarpingConfig warp_cfg(int64_t window, const std::string& mode, int64_t dim) {
  WarpingConfig c;
  c.warp_window = window;
  c.warp_mode = mode;
  c.dim = dim;
  return c;
}

AugmenterConfig aug_cfg(int64_t min_augmentations, int64_t max_augmentations) {
  AugmenterConfig c;
  c.min_augmentations = min_augmentations;
  c.max_augmentations = max_augmentations;
  return c;
}

}  // namespace

TEST_CASE("SpectrogramDrop: hand-checked chunks on a ramp", "[augment]") {
  auto gen = make_generator(0);
  const auto x = ramp(1, 10, 3);  // frame t holds 3t, 3t+1, 3t+2; mean 14.5
  // Chunks [2, 4) and [6, 7) over time.
  auto pos = torch::tensor({{2, 6}}, torch::kLong);
  auto len = torch::tensor({{2, 1}}, torch::kLong);
  auto zeros = SpectrogramDrop::drop_chunks(x, pos, len, 1, "zeros", gen);
  auto expected = x.clone();
  expected.index_put_({0, torch::tensor({2, 3, 6})}, 0.0);
  CHECK(torch::equal(zeros, expected));

  auto mean = SpectrogramDrop::drop_chunks(x, pos, len, 1, "mean", gen);
  expected = x.clone();
  expected.index_put_({0, torch::tensor({2, 3, 6})}, 14.5);
  CHECK(torch::equal(mean, expected));

  // Frequency bin 1 of every frame.
  auto freq =
      SpectrogramDrop::drop_chunks(x, torch::tensor({{1}}), torch::tensor({{1}}), 2, "zeros", gen);
  expected = x.clone();
  expected.index_put_({0, torch::indexing::Slice(), 1}, 0.0);
  CHECK(torch::equal(freq, expected));

  // "rand" stays within [min, max] of the batch; "cutcat" copies the previous utterance.
  auto rnd = SpectrogramDrop::drop_chunks(x, pos, len, 1, "rand", gen);
  CHECK(rnd.min().item<float>() >= 0.0f);
  CHECK(rnd.max().item<float>() <= 29.0f);
  CHECK_FALSE(torch::equal(rnd, x));
  auto two = ramp(2, 4, 1);
  auto cut = SpectrogramDrop::drop_chunks(two, torch::tensor({{0}, {0}}), torch::tensor({{1}, {1}}),
                                          1, "cutcat", gen);
  CHECK(cut[0][0][0].item<float>() == 4.0f);  // from utterance 1
  CHECK(cut[1][0][0].item<float>() == 0.0f);  // from utterance 0
}

TEST_CASE(
    "SpectrogramDrop: lengths from low up to high exclusive, positions inside, counts inclusive",
    "[augment]") {
  SpectrogramDrop drop(drop_cfg(3, 7, 1, 1, "zeros", 1));
  std::set<int64_t> seen_lengths;
  const auto x = torch::ones({4, 40, 2});
  for (uint64_t seed = 0; seed < 200; ++seed) {
    auto gen = make_generator(seed);
    auto out = drop.apply(x, full_lengths(4), gen).x;
    auto dropped = (out.select(2, 0) == 0);
    for (int64_t b = 0; b < 4; ++b) {
      auto runs = zero_runs(dropped[b]);
      REQUIRE(runs.size() == 1);
      seen_lengths.insert(runs[0]);
    }
    CHECK(torch::equal(out.select(2, 0), out.select(2, 1)));  // whole frames
  }
  CHECK(seen_lengths == std::set<int64_t>{3, 4, 5, 6});

  SpectrogramDrop counted(drop_cfg(1, 2, 0, 2, "zeros", 2));
  std::set<int64_t> counts;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    auto gen = make_generator(seed);
    auto out = counted.apply(torch::ones({1, 1, 50}), full_lengths(1), gen).x;
    counts.insert((out == 0).sum().item<int64_t>());  // distinct bins: count, or fewer on overlap
  }
  CHECK(counts.count(0) == 1);
  CHECK(counts.count(2) == 1);
  CHECK(*counts.rbegin() <= 2);
}

TEST_CASE("SpectrogramDrop and Warping: same seed, same output", "[augment]") {
  SpectrogramDrop drop(drop_cfg(15, 25, 4, 4, "mean", 1));
  Warping warp(warp_cfg(5, "bicubic", 1));
  const auto x = torch::randn({3, 120, 8}, make_generator(1));
  auto g1 = make_generator(42), g2 = make_generator(42), g3 = make_generator(43);
  auto a = warp.apply(drop.apply(x, full_lengths(3), g1).x, full_lengths(3), g1).x;
  auto b = warp.apply(drop.apply(x, full_lengths(3), g2).x, full_lengths(3), g2).x;
  auto c = warp.apply(drop.apply(x, full_lengths(3), g3).x, full_lengths(3), g3).x;
  CHECK(torch::equal(a, b));
  CHECK_FALSE(torch::equal(a, c));
  CHECK(torch::equal(x, torch::randn({3, 120, 8}, make_generator(1))));  // input untouched
}

TEST_CASE("SpectrogramDrop matches the PyTorch reference draw for draw", "[augment]") {
  const auto x = torch::randn({3, 60, 10}, make_generator(5));
  for (int64_t dim : {1, 2}) {
    for (uint64_t seed : {0, 7}) {
      SpectrogramDrop drop(drop_cfg(2, 6, 1, 3, "mean", dim));
      auto gen = make_generator(seed);
      auto ours = drop.apply(x, full_lengths(3), gen).x;
      auto ref = python_reference(x, "drop", seed, "2 6 1 3 " + std::to_string(dim));
      INFO("dim " << dim << " seed " << seed);
      CHECK(torch::allclose(ours, ref, 0.0, 1e-6));
    }
  }
}

TEST_CASE("Warping: hand-checked identity and linear ramp", "[augment]") {
  const auto x = torch::randn({2, 20, 4}, make_generator(3));
  // w == c maps each side onto itself: align_corners=True samples the original frames exactly.
  CHECK(torch::allclose(Warping::warp(x, 8, 8, "bicubic"), x, 0.0, 1e-5));
  // On a time ramp x[t] = t, bilinear warping is piecewise linear: frames [0, c) land on [0, w)
  // and [c, L) on [w, L). c = 8, w = 10, L = 20: out[i] = i * 7/9 for i < 10, and
  // out[10 + j] = 8 + j * 11/9 for j < 10.
  auto time = torch::arange(20, torch::kFloat).view({1, 20, 1}).expand({1, 20, 3}).contiguous();
  auto out = Warping::warp(time, 8, 10, "bilinear");
  for (int i = 0; i < 10; ++i)
    CHECK(out[0][i][1].item<float>() == Approx(i * 7.0 / 9).margin(1e-5));
  for (int j = 0; j < 10; ++j) {
    CHECK(out[0][10 + j][2].item<float>() == Approx(8 + j * 11.0 / 9).margin(1e-5));
  }
  // Too short to warp: L - window <= window.
  Warping warp(warp_cfg(5, "bicubic", 1));
  auto gen = make_generator(0);
  auto short_x = torch::randn({1, 10, 3});
  CHECK(torch::equal(warp.apply(short_x, full_lengths(1), gen).x, short_x));
}

TEST_CASE("Warping matches the PyTorch reference (interpolate, align_corners=True)", "[augment]") {
  const auto x = torch::randn({2, 50, 12}, make_generator(9));
  for (const std::string mode : {"bicubic", "bilinear"}) {
    for (int64_t dim : {1, 2}) {
      for (uint64_t seed : {3}) {
        Warping warp(warp_cfg(5, mode, dim));
        auto gen = make_generator(seed);
        auto ours = warp.apply(x, full_lengths(2), gen).x;
        auto ref = python_reference(x, "warp", seed, "5 " + mode + " " + std::to_string(dim));
        INFO(mode << " dim " << dim << " seed " << seed);
        CHECK(torch::allclose(ours, ref, 0.0, 1e-5));
      }
    }
  }
}

TEST_CASE("AddNoise: the drawn SNR is the measured SNR", "[augment]") {
  AddNoiseConfig ten_db;
  ten_db.snr_low = ten_db.snr_high = 10.0;
  AddNoise noise(ten_db);
  auto gen = make_generator(4);
  const auto x = torch::randn({2, 16000}, make_generator(2)) * 0.1;
  auto y = noise.apply(x, full_lengths(2), gen).x;
  // y = (1 - a) x + n', so the SNR is 20 log10(rms((1 - a) x) / rms(n')) with a = 1/(10^0.5 + 1).
  const double a = 1.0 / (std::pow(10.0, 0.5) + 1.0);
  auto clean = x * (1.0 - a);
  auto snr = 20.0 * torch::log10(clean.pow(2).mean(1).sqrt() / (y - clean).pow(2).mean(1).sqrt());
  CHECK(snr[0].item<double>() == Approx(10.0).margin(1e-3));
  CHECK(snr[1].item<double>() == Approx(10.0).margin(1e-3));
  AddNoiseConfig inverted;
  inverted.snr_low = 5;
  CHECK_THROWS_WITH(AddNoise(inverted), Catch::Contains("snr_low (5.000000 dB)"));
}

TEST_CASE("Augmenter: order, count, concat_original, repeat, parallel, indices", "[augment]") {
  const auto x = torch::zeros({4, 1, 1});
  const auto lengths = torch::tensor({1.0f, 0.5f, 0.75f, 1.0f});
  auto gen = make_generator(0);

  // min = max = 3 in order: ((0*10+1)*10+2)*10+3 = 123, as in the S2S recipes.
  Augmenter all(aug_cfg(3, 3), taggers(3));
  auto out = all.apply(x, lengths, gen);
  CHECK(torch::all(out.x == 123).item<bool>());
  CHECK(torch::equal(out.source, torch::arange(4)));

  // concat_original + repeat_augment 2 on rows [1, 3): original 4 rows, then 2 x 2 augmented.
  AugmenterConfig cfg = aug_cfg(1, 1);
  cfg.concat_original = true;
  cfg.repeat_augment = 2;
  cfg.augment_start_index = 1;
  cfg.augment_end_index = 3;
  out = Augmenter(cfg, taggers(2)).apply(x, lengths, gen);
  CHECK(torch::equal(out.source, torch::tensor({0, 1, 2, 3, 1, 2, 1, 2}, torch::kLong)));
  CHECK(torch::allclose(out.lengths, lengths.index_select(0, out.source)));
  CHECK(out.x.index({torch::indexing::Slice(4)}).eq(1).all().item<bool>());

  // parallel: each selected augmentation sees the whole batch; outputs concatenated.
  AugmenterConfig par = aug_cfg(2, 2);
  par.parallel_augment = true;
  out = Augmenter(par, taggers(2)).apply(x, lengths, gen);
  CHECK(out.x.size(0) == 8);
  CHECK(out.x.index({torch::indexing::Slice(0, 4)}).eq(1).all().item<bool>());
  CHECK(out.x.index({torch::indexing::Slice(4, 8)}).eq(2).all().item<bool>());

  // augment_prob 0: never applied.
  AugmenterConfig never;
  never.augment_prob = 0.0;
  out = Augmenter(never, taggers(2)).apply(x, lengths, gen);
  CHECK(torch::equal(out.x, x));

  // min 1, max 3, shuffled: over seeds every count and every first augmentation occurs.
  AugmenterConfig shuffled = aug_cfg(1, 3);
  shuffled.shuffle_augmentations = true;
  Augmenter random_aug(shuffled, taggers(3));
  std::set<int64_t> values;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    auto g = make_generator(seed);
    values.insert(random_aug.apply(x, lengths, g).x[0][0][0].item<int64_t>());
  }
  // 3 singletons + 6 ordered pairs + 6 permutations of three.
  CHECK(values.size() == 15);
}

TEST_CASE("Augmentations keep lengths and the row map on the host, whatever x's device",
          "[augment]") {
  // The meta device stands in for a GPU (shapes, no data): a training step must not have to read
  // lengths or the row map back from x's device, so they come out on the host, equal to a CPU
  // run's (they depend on the draws only, which come from the CPU generator). LibTorch 1.13 has
  // no meta kernel for where(), which "mean" uses; the replacement does not touch the lengths.
  const std::vector<std::shared_ptr<const Augmentation>> augs{
      std::make_shared<SpectrogramDrop>(drop_cfg(2, 5, 1, 3, "zeros", 1)),
      std::make_shared<SpectrogramDrop>(drop_cfg(1, 3, 1, 2, "zeros", 2)),
      std::make_shared<Warping>(warp_cfg(3, "bicubic", 1))};
  AugmenterConfig sequential = aug_cfg(1, 3);
  sequential.shuffle_augmentations = true;
  sequential.concat_original = true;
  sequential.repeat_augment = 2;
  AugmenterConfig parallel = aug_cfg(2, 3);
  parallel.parallel_augment = true;
  const auto lengths = torch::tensor({1.0f, 0.6f, 0.8f});
  const auto x = torch::randn({3, 40, 8}, make_generator(3));
  const auto meta = x.to(at::Device(at::kMeta));
  for (const AugmenterConfig& cfg : {sequential, parallel}) {
    const Augmenter augmenter(cfg, augs);
    for (uint64_t seed = 0; seed < 6; ++seed) {
      INFO("seed " << seed);
      auto g_cpu = make_generator(seed), g_meta = make_generator(seed);
      const AugmentBatch on_cpu = augmenter.apply(x, lengths, g_cpu);
      const AugmentBatch on_meta = augmenter.apply(meta, lengths, g_meta);
      CHECK(on_meta.x.device().type() == at::kMeta);
      CHECK(on_meta.x.sizes() == on_cpu.x.sizes());
      REQUIRE(on_meta.lengths.is_cpu());
      REQUIRE(on_meta.source.is_cpu());
      CHECK(torch::equal(on_meta.lengths, on_cpu.lengths));
      CHECK(torch::equal(on_meta.source, on_cpu.source));
    }
  }
  AddNoiseConfig noise_cfg;
  auto g = make_generator(1);
  const AugmentBatch noisy =
      AddNoise(noise_cfg).apply(torch::zeros({3, 800}).to(at::Device(at::kMeta)), lengths, g);
  CHECK(noisy.x.device().type() == at::kMeta);
  CHECK(noisy.lengths.is_cpu());
}

TEST_CASE("Augmenter: SpeechBrain's min/max resolution and errors", "[augment]") {
  Augmenter defaults(AugmenterConfig(), taggers(4));
  CHECK(defaults.min_augmentations() == 1);
  CHECK(defaults.max_augmentations() == 4);
  Augmenter clamped(aug_cfg(9, 9), taggers(2));
  CHECK(clamped.min_augmentations() == 2);
  CHECK(clamped.max_augmentations() == 2);
  AugmenterConfig bad_end;
  bad_end.augment_start_index = 3;
  bad_end.augment_end_index = 1;
  CHECK_THROWS_WITH(Augmenter(bad_end, taggers(1)),
                    Catch::Contains("augment_end_index 1 is smaller than augment_start_index 3"));
  AugmenterConfig bad_enable;
  bad_enable.enable_augmentations = {true};
  CHECK_THROWS_WITH(Augmenter(bad_enable, taggers(2)),
                    Catch::Contains("enable_augmentations has 1 entries but there are 2"));
  AugmenterConfig bad_repeat;
  bad_repeat.repeat_augment = -1;
  CHECK_THROWS_WITH(Augmenter(bad_repeat, taggers(1)), Catch::Contains("repeat_augment -1"));
}

TEST_CASE("Augmentation configs reject bad values with the value in the message", "[augment]") {
  CHECK_THROWS_WITH(SpectrogramDrop(drop_cfg(5, 5, 1, 3, "zeros", 1)),
                    Catch::Contains("drop_length_low (5) must be >= 0 and less than"));
  CHECK_THROWS_WITH(SpectrogramDrop(drop_cfg(5, 15, 3, 1, "zeros", 1)),
                    Catch::Contains("drop_count_low (3)"));
  CHECK_THROWS_WITH(SpectrogramDrop(drop_cfg(5, 15, 1, 3, "noise", 1)),
                    Catch::Contains("replace 'noise'"));
  CHECK_THROWS_WITH(SpectrogramDrop(drop_cfg(5, 15, 1, 3, "zeros", 3)), Catch::Contains("dim 3"));
  CHECK_THROWS_WITH(Warping(warp_cfg(5, "nearest", 1)), Catch::Contains("warp_mode 'nearest'"));
  CHECK_THROWS_WITH(Warping(warp_cfg(0, "bicubic", 1)), Catch::Contains("warp_window 0"));
  SpectrogramDrop drop{SpectrogramDropConfig()};
  auto gen = make_generator(0);
  CHECK_THROWS_WITH(drop.apply(torch::ones({4, 5}), full_lengths(4), gen),
                    Catch::Contains("got 2 dimensions"));
}

TEST_CASE("hparams build the S2S recipe's Augmenter", "[augment]") {
  masr::toolkit::register_all();
  const std::string yaml = R"(
time_drop: !new:speechbrain.augment.freq_domain.SpectrogramDrop
    drop_length_low: 15
    drop_length_high: 25
    drop_count_low: 4
    drop_count_high: 4
    replace: "mean"
freq_drop: !new:speechbrain.augment.freq_domain.SpectrogramDrop
    drop_length_low: 10
    drop_length_high: 20
    drop_count_low: 4
    drop_count_high: 4
    replace: "mean"
    dim: 2
time_warp: !new:speechbrain.augment.freq_domain.Warping
    warp_window: 5
    warp_mode: bicubic
fea_augment: !new:speechbrain.augment.augmenter.Augmenter
    min_augmentations: 3
    max_augmentations: 3
    augment_prob: 1.0
    augmentations: [!ref <time_drop>, !ref <freq_drop>, !ref <time_warp>]
)";
  auto hp = masr::hparams::load_text(yaml);
  auto augmenter = std::dynamic_pointer_cast<Augmenter>(hp["fea_augment"].instance()->object);
  REQUIRE(augmenter);
  CHECK(augmenter->size() == 3);
  CHECK(augmenter->summary() == "3-3 of [SpectrogramDrop, SpectrogramDrop, Warping], sequential");
  auto gen = make_generator(11);
  auto x = torch::randn({2, 100, 80});
  auto out = augmenter->apply(x, torch::ones({2}), gen);
  CHECK(out.x.sizes() == x.sizes());
  CHECK_FALSE(torch::equal(out.x, x));

  CHECK_THROWS_WITH(
      masr::hparams::load_text("d: !new:speechbrain.augment.freq_domain.SpectrogramDrop\n"
                               "    replace: bogus\n"),
      Catch::Contains("key 'd'") && Catch::Contains("replace 'bogus'"));
  CHECK_THROWS_WITH(masr::hparams::load_text("sp: !new:torch.nn.GELU\n"
                                             "a: !new:speechbrain.augment.augmenter.Augmenter\n"
                                             "    augmentations: [!ref <sp>]\n"),
                    Catch::Contains("augmentations[0] is 'torch.nn.GELU'"));
}

namespace {

// Waveform augmentations through the (B, T, 1) reference.
at::Tensor wave_reference(const at::Tensor& w, const std::string& kind, uint64_t seed,
                          const std::string& params) {
  return python_reference(w.unsqueeze(2), kind, seed, params).squeeze(2);
}

}  // namespace

TEST_CASE("RandAmp, DoClip and DropBitResolution match the PyTorch reference", "[augment]") {
  const auto w = torch::randn({3, 400}, make_generator(21)) * 0.3;
  for (uint64_t seed : {0, 4}) {
    INFO("seed " << seed);
    RandAmpConfig amp;
    amp.amp_low = 0.2;
    amp.amp_high = 1.4;
    auto gen = make_generator(seed);
    CHECK(torch::allclose(RandAmp(amp).apply(w, full_lengths(3), gen).x,
                          wave_reference(w, "randamp", seed, "0.2 1.4"), 1e-6, 1e-7));
    DoClipConfig clip;
    clip.clip_low = 0.3;
    clip.clip_high = 0.8;
    gen = make_generator(seed);
    CHECK(torch::allclose(DoClip(clip).apply(w, full_lengths(3), gen).x,
                          wave_reference(w, "doclip", seed, "0.3 0.8"), 1e-6, 1e-7));
  }
  for (const std::string target : {"int16", "int8", "float16"}) {
    INFO(target);
    CHECK(torch::allclose(DropBitResolution::quantize(w, target),
                          wave_reference(w, "dropbit", 0, target), 1e-6, 1e-7));
  }
}

TEST_CASE("RandAmp, DoClip and DropBitResolution: hand-checked properties", "[augment]") {
  auto w = torch::randn({4, 1000}, make_generator(2));
  w[2].zero_();  // a silent row stays silent, not NaN
  RandAmpConfig amp;
  amp.amp_low = 0.5;
  amp.amp_high = 0.9;
  auto gen = make_generator(3);
  const auto gained = RandAmp(amp).apply(w, full_lengths(4), gen).x;
  const auto peaks = std::get<0>(gained.abs().max(1));
  for (int64_t b : {0, 1, 3}) {
    CHECK(peaks[b].item<float>() >= 0.5f);
    CHECK(peaks[b].item<float>() < 0.9f + 1e-6f);
    // A gain, nothing else: the row is proportional to the input.
    const auto ratio = gained[b] / w[b];
    CHECK(torch::allclose(ratio, ratio.mean().expand_as(ratio), 1e-4, 1e-6));
  }
  CHECK(torch::equal(gained[2], w[2]));

  DoClipConfig clip;
  clip.clip_low = clip.clip_high = 0.25;
  gen = make_generator(0);
  const auto clipped = DoClip(clip).apply(w, full_lengths(4), gen).x;
  CHECK_FALSE(torch::isnan(clipped).any().item<bool>());
  for (int64_t b : {0, 1, 3}) {
    // Level 0.25 of the peak: what was below passes times 4, the rest is cut at the peak.
    const float peak = w[b].abs().max().item<float>();
    CHECK(clipped[b].abs().max().item<float>() == Approx(peak).epsilon(1e-5));
    const auto small = w[b].abs() < 0.25f * peak;
    CHECK(torch::allclose(clipped[b].masked_select(small), w[b].masked_select(small) * 4.0f, 1e-5,
                          1e-6));
  }

  // int8: at most 255 distinct levels, the error at most half a step of peak / 127 (truncation:
  // a whole step), and values keep their sign.
  const auto q = DropBitResolution::quantize(w, "int8");
  const float step = w.abs().max().item<float>() / 127.0f;
  CHECK((q - w).abs().max().item<float>() <= step * 1.0001f);
  CHECK(std::get<0>(at::_unique(q)).numel() <= 255);
  CHECK(((q * w) >= 0).all().item<bool>());
  CHECK(torch::equal(DropBitResolution::quantize(w, "float16"),
                     w.to(torch::kHalf).to(torch::kFloat)));
  CHECK(torch::equal(DropBitResolution::quantize(torch::zeros({2, 8}), "int16"),
                     torch::zeros({2, 8})));
  // "random" picks one of the three from the generator: the same seed, the same pick.
  DropBitResolutionConfig any;
  auto g1 = make_generator(9), g2 = make_generator(9);
  CHECK(torch::equal(DropBitResolution(any).apply(w, full_lengths(4), g1).x,
                     DropBitResolution(any).apply(w, full_lengths(4), g2).x));

  CHECK_THROWS_WITH(DropBitResolution(DropBitResolutionConfig{"int4"}),
                    Catch::Contains("target_dtype 'int4'"));
  RandAmpConfig bad_amp;
  bad_amp.amp_low = 2.0;
  CHECK_THROWS_WITH(RandAmp(bad_amp), Catch::Contains("amp_low (2)"));
  DoClipConfig bad_clip;
  bad_clip.clip_low = 0.0;
  CHECK_THROWS_WITH(DoClip(bad_clip), Catch::Contains("0 < clip_low"));
  CHECK_THROWS_WITH(RandAmp(amp).apply(torch::ones({2, 3, 4}), full_lengths(2), gen),
                    Catch::Contains("got 3 dimensions"));
}

TEST_CASE("hparams build RandAmp, DoClip and DropBitResolution in a waveform Augmenter",
          "[augment]") {
  masr::toolkit::register_all();
  const std::string yaml = R"(
amp: !new:speechbrain.augment.time_domain.RandAmp
    amp_low: 0.1
    amp_high: 0.9
clip: !new:speechbrain.augment.time_domain.DoClip
    clip_low: 0.4
    clip_high: 0.9
bits: !new:speechbrain.augment.time_domain.DropBitResolution
    target_dtype: int8
wav_augment: !new:speechbrain.augment.augmenter.Augmenter
    min_augmentations: 3
    max_augmentations: 3
    augmentations: [!ref <amp>, !ref <clip>, !ref <bits>]
)";
  auto hp = masr::hparams::load_text(yaml);
  auto augmenter = std::dynamic_pointer_cast<Augmenter>(hp["wav_augment"].instance()->object);
  REQUIRE(augmenter);
  CHECK(augmenter->summary() == "3-3 of [RandAmp, DoClip, DropBitResolution], sequential");
  auto gen = make_generator(1);
  const auto w = torch::randn({2, 800});
  const auto out = augmenter->apply(w, torch::ones({2}), gen);
  CHECK(out.x.sizes() == w.sizes());
  CHECK(std::get<0>(out.x.abs().max(1)).le(0.9f + 1e-6f).all().item<bool>());
  CHECK_THROWS_WITH(
      masr::hparams::load_text("b: !new:speechbrain.augment.time_domain.DropBitResolution\n"
                               "    target_dtype: int4\n"),
      Catch::Contains("key 'b'") && Catch::Contains("target_dtype 'int4'"));
}

TEST_CASE("AddNoise with pink_noise_like: SpeechBrain's spectral shaping, and its hparams",
          "[augment]") {
  const auto white = torch::randn({3, 301}, make_generator(8));  // odd length: the middle bin
  const auto alpha = torch::tensor({0.0f, 1.0f, 2.0f});
  CHECK(torch::allclose(AddNoise::colored_noise(white, alpha, 50.0),
                        wave_reference(white, "pink", 0, "0,1,2 50"), 1e-5, 1e-6));
  const auto even = torch::randn({2, 400}, make_generator(9));
  CHECK(torch::allclose(AddNoise::colored_noise(even, torch::tensor({0.5f, -1.0f}), 8000.0),
                        wave_reference(even, "pink", 0, "0.5,-1 8000"), 1e-5, 1e-6));
  // alpha 0 leaves white noise white.
  CHECK(
      torch::allclose(AddNoise::colored_noise(white, torch::zeros({3}), 50.0), white, 1e-5, 1e-5));

  masr::toolkit::register_all();
  auto hp = masr::hparams::load_text(R"(
brown: !new:speechbrain.augment.time_domain.AddNoise
    snr_low: 10
    snr_high: 10
    noise_funct: !name:speechbrain.augment.time_domain.pink_noise_like
        alpha_low: 2.0
        alpha_high: 2.0
white: !new:speechbrain.augment.time_domain.AddNoise
    noise_funct: !name:torch.randn_like
)");
  auto brown = std::dynamic_pointer_cast<AddNoise>(hp["brown"].instance()->object);
  REQUIRE(brown);
  CHECK_THAT(brown->summary(), Catch::Contains("1/f^"));
  // A sine at 10 dB SNR: the noise is what is left after the scaled sine.
  auto gen = make_generator(5);
  const auto t = torch::arange(4000, torch::kFloat) / 16000.0;
  const auto sine = torch::sin(2 * M_PI * 440.0 * t).unsqueeze(0).repeat({2, 1});
  const double a = 1.0 / (std::pow(10.0, 10.0 / 20.0) + 1.0);
  const auto noisy = brown->apply(sine, full_lengths(2), gen).x;
  const auto noise = noisy - sine * (1.0 - a);
  const double snr = 20 * std::log10((sine * (1.0 - a)).pow(2).mean().sqrt().item<double>() /
                                     noise.pow(2).mean().sqrt().item<double>());
  CHECK(snr == Approx(10.0).margin(0.01));
  // Brown noise: most of its power in the lowest tenth of the band.
  const auto power = torch::abs(torch::fft::rfft(noise, c10::nullopt, 1)).pow(2);
  const double low = power.narrow(1, 1, 200).sum().item<double>();
  const double all = power.narrow(1, 1, 2000).sum().item<double>();
  CHECK(low / all > 0.9);
  CHECK(std::dynamic_pointer_cast<AddNoise>(hp["white"].instance()->object)
            ->summary()
            .find("white") != std::string::npos);
  CHECK_THROWS_WITH(
      masr::hparams::load_text("n: !new:speechbrain.augment.time_domain.AddNoise\n"
                               "    noise_funct: !name:speechbrain.nnet.losses.ctc_loss\n"),
      Catch::Contains("noise_funct is") && Catch::Contains("pink_noise_like"));
}

TEST_CASE("VTLP: the warp, bin positions on a mel ramp, draws and hparams", "[augment]") {
  VtlpConfig c;  // 0.9-1.1, f_hi 4800 Hz, 16 kHz, 0-8000 Hz
  const Vtlp vtlp(c);
  // The warp: alpha * f below the boundary, the band's top fixed, continuous at the boundary.
  CHECK(vtlp.warp_hz(1000.0, 1.1) == Approx(1100.0));
  CHECK(vtlp.warp_hz(1000.0, 0.9) == Approx(900.0));
  CHECK(vtlp.warp_hz(8000.0, 1.1) == Approx(8000.0));
  CHECK(vtlp.warp_hz(8000.0, 0.9) == Approx(8000.0));
  const double boundary = 4800.0 / 1.1;
  CHECK(vtlp.warp_hz(boundary + 1e-6, 1.1) == Approx(vtlp.warp_hz(boundary, 1.1)).margin(1e-3));
  CHECK(vtlp.warp_hz(4800.0 + 1e-6, 0.9) == Approx(4800.0 * 0.9).margin(1e-3));

  // Features equal to each bin's mel position (linear in the bin index, so linear
  // interpolation is exact): after the warp, bin k holds mel(warp(centre_k)) in bin units.
  const int64_t bins = 80;
  const auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
  const double step = mel(8000.0) / (bins + 1);
  const auto positions = torch::arange(bins, torch::kFloat).view({1, 1, bins}).expand({2, 5, bins});
  const auto warped = vtlp.warp(positions.contiguous(), torch::tensor({1.1, 0.9}, torch::kDouble));
  for (int64_t k : {0, 10, 40, 60, 79}) {
    const double centre = 700.0 * (std::pow(10.0, (k + 1) * step / 2595.0) - 1.0);
    for (int64_t b : {0, 1}) {
      const double alpha = b == 0 ? 1.1 : 0.9;
      const double want =
          std::clamp(mel(vtlp.warp_hz(centre, alpha)) / step - 1.0, 0.0, double(bins - 1));
      INFO("bin " << k << " alpha " << alpha);
      CHECK(warped[b][3][k].item<float>() == Approx(want).margin(1e-3));
    }
  }
  // Below the boundary the formants move up (alpha > 1) or down (alpha < 1).
  CHECK(warped[0][0][20].item<float>() > 20.0f);
  CHECK(warped[1][0][20].item<float>() < 20.0f);
  // alpha 1 is the identity; every frame of a row gets the same warp.
  const auto x = torch::randn({2, 7, bins}, make_generator(4));
  CHECK(torch::allclose(vtlp.warp(x, torch::ones({2}, torch::kDouble)), x, 1e-5, 1e-5));

  // Draws: the same seed, the same output; alpha within [0.9, 1.1) (the ramp's bin 20 moves by
  // at most what 0.9 and 1.1 give).
  auto g1 = make_generator(6), g2 = make_generator(6);
  const auto y1 = vtlp.apply(x, full_lengths(2), g1).x;
  CHECK(torch::equal(y1, vtlp.apply(x, full_lengths(2), g2).x));
  auto g3 = make_generator(7);
  const auto ramp_out = vtlp.apply(positions.contiguous(), full_lengths(2), g3).x;
  CHECK(ramp_out.select(2, 20).min().item<float>() >= warped[1][0][20].item<float>() - 1e-4f);
  CHECK(ramp_out.select(2, 20).max().item<float>() <= warped[0][0][20].item<float>() + 1e-4f);

  VtlpConfig bad = c;
  bad.warp_low = 1.2;
  CHECK_THROWS_WITH(Vtlp{bad}, Catch::Contains("warp_low <= warp_high"));
  bad = c;
  bad.f_hi = 9000.0;
  CHECK_THROWS_WITH(Vtlp{bad}, Catch::Contains("f_hi (9000 Hz)"));
  auto g4 = make_generator(0);
  CHECK_THROWS_WITH(vtlp.apply(torch::ones({2, 3}), full_lengths(2), g4),
                    Catch::Contains("got 2 dimensions"));

  masr::toolkit::register_all();
  auto hp = masr::hparams::load_text(R"(
vtlp: !new:mamba_asr.VTLP
    warp_low: 0.85
    warp_high: 1.15
fea_augment: !new:speechbrain.augment.augmenter.Augmenter
    augmentations: [!ref <vtlp>]
)");
  auto augmenter = std::dynamic_pointer_cast<Augmenter>(hp["fea_augment"].instance()->object);
  REQUIRE(augmenter);
  CHECK_THAT(augmenter->summary(), Catch::Contains("VTLP"));
  auto g5 = make_generator(1);
  CHECK(augmenter->apply(x, full_lengths(2), g5).x.sizes() == x.sizes());
}

TEST_CASE("SpectralSmoothing: moving average and liftering against loops, lengths, draws, hparams",
          "[augment]") {
  const int64_t batch = 3, frames = 9, bins = 12;
  const auto x = torch::randn({batch, frames, bins}, make_generator(21)).to(torch::kDouble);
  const auto lengths = torch::tensor({1.0, 6.0 / 9.0, 1.0}, torch::kDouble);  // 9, 6, 9 frames
  SpectralSmoothingConfig c;
  c.time_width_high = 5;
  c.keep_low = 1;
  c.keep_high = bins;
  const SpectralSmoothing smoothing(c);
  // The reference, in plain loops over doubles: window t-(w-1)/2 .. t+w/2 held inside the valid
  // frames, then each valid frame's DCT-II (orthonormal, written out) cut after `keep`.
  const auto reference = [&](int64_t b, int64_t w, int64_t keep) {
    const int64_t valid = b == 1 ? 6 : 9;
    auto out = x[b].clone();
    for (int64_t t = 0; t < valid; ++t) {
      std::vector<double> y(bins, 0.0);
      for (int64_t k = -(w - 1) / 2; k <= w / 2; ++k) {
        const int64_t src = std::clamp<int64_t>(t + k, 0, valid - 1);
        for (int64_t f = 0; f < bins; ++f) y[f] += x[b][src][f].item<double>() / double(w);
      }
      if (keep > 0) {
        std::vector<double> cep(bins, 0.0), back(bins, 0.0);
        for (int64_t q = 0; q < bins; ++q) {
          for (int64_t n = 0; n < bins; ++n) {
            cep[q] += std::sqrt((q == 0 ? 1.0 : 2.0) / bins) *
                      std::cos(M_PI * (n + 0.5) * q / bins) * y[n];
          }
        }
        for (int64_t n = 0; n < bins; ++n) {
          for (int64_t q = 0; q < std::min(keep, bins); ++q) {
            back[n] += std::sqrt((q == 0 ? 1.0 : 2.0) / bins) *
                       std::cos(M_PI * (n + 0.5) * q / bins) * cep[q];
          }
        }
        y = back;
      }
      for (int64_t f = 0; f < bins; ++f) out[t][f] = y[f];
    }
    return out;
  };
  const std::vector<std::array<int64_t, 2>> settings = {{1, 0}, {3, 0}, {4, 0}, {5, 4}, {2, 1}, {1, bins}};
  for (const auto& [w, keep] : settings) {
    INFO("width " << w << ", keep " << keep);
    const auto widths = torch::full({batch}, w, torch::kLong);
    const auto keeps = torch::full({batch}, keep, torch::kLong);
    const auto got = smoothing.smooth(x.to(torch::kFloat), lengths, widths, keeps);
    for (int64_t b = 0; b < batch; ++b) {
      INFO("row " << b);
      CHECK(torch::allclose(got[b].to(torch::kDouble), reference(b, w, keep), 1e-5, 1e-5));
    }
  }
  // Width 1 and nothing liftered (or every coefficient kept) is the identity; one coefficient
  // leaves each frame's mean over the bins; rows take their own widths.
  const auto xf = x.to(torch::kFloat);
  CHECK(torch::equal(smoothing.smooth(xf, lengths, torch::ones({batch}, torch::kLong),
                                      torch::zeros({batch}, torch::kLong)),
                     xf));
  const auto flat = smoothing.smooth(xf, torch::ones({batch}), torch::ones({batch}, torch::kLong),
                                     torch::ones({batch}, torch::kLong));
  CHECK(torch::allclose(flat, xf.mean(2, true).expand_as(xf), 1e-5, 1e-5));
  const auto mixed = smoothing.smooth(xf, lengths, torch::tensor({1, 3, 5}, torch::kLong),
                                      torch::zeros({batch}, torch::kLong));
  CHECK(torch::allclose(mixed[0].to(torch::kDouble), reference(0, 1, 0), 1e-5, 1e-5));
  CHECK(torch::allclose(mixed[1].to(torch::kDouble), reference(1, 3, 0), 1e-5, 1e-5));
  CHECK(torch::allclose(mixed[2].to(torch::kDouble), reference(2, 5, 0), 1e-5, 1e-5));
  // Frames past a row's length pass unchanged.
  CHECK(torch::equal(mixed[1].narrow(0, 6, 3), xf[1].narrow(0, 6, 3)));
  // A length of 4.5 frames counts 4 (torch.round: halves to even, as the input normalization
  // counts them): frame 4 passes unchanged, frame 3 averages frames 2, 3 and 3 again.
  const auto half = smoothing.smooth(xf, torch::tensor({0.5, 0.5, 0.5}, torch::kDouble),
                                     torch::full({batch}, 3, torch::kLong),
                                     torch::zeros({batch}, torch::kLong));
  CHECK(torch::equal(half[0][4], xf[0][4]));
  CHECK(torch::allclose(half[0][3], (xf[0][2] + 2 * xf[0][3]) / 3, 1e-5, 1e-6));

  // Draws: the same seed, the same output; widths within [1, 5] and keeps within [1, 12].
  auto g1 = make_generator(8), g2 = make_generator(8);
  const auto y1 = smoothing.apply(xf, lengths, g1);
  CHECK(torch::equal(y1.x, smoothing.apply(xf, lengths, g2).x));
  CHECK(torch::equal(y1.lengths, lengths));
  CHECK_FALSE(torch::equal(y1.x, xf));

  SpectralSmoothingConfig bad;
  bad.time_width_low = 0;
  CHECK_THROWS_WITH(SpectralSmoothing{bad}, Catch::Contains("1 <= time_width_low"));
  bad = SpectralSmoothingConfig{};
  bad.keep_high = 20;
  CHECK_THROWS_WITH(SpectralSmoothing{bad}, Catch::Contains("keep_low >= 1"));
  auto g3 = make_generator(0);
  CHECK_THROWS_WITH(smoothing.apply(torch::ones({2, 3}), full_lengths(2), g3),
                    Catch::Contains("got 2 dimensions"));

  masr::toolkit::register_all();
  auto hp = masr::hparams::load_text(R"(
smoothing: !new:mamba_asr.SpectralSmoothing
    time_width_low: 1
    time_width_high: 4
    keep_low: 20
    keep_high: 40
fea_augment: !new:speechbrain.augment.augmenter.Augmenter
    augmentations: [!ref <smoothing>]
)");
  auto augmenter = std::dynamic_pointer_cast<Augmenter>(hp["fea_augment"].instance()->object);
  REQUIRE(augmenter);
  CHECK_THAT(augmenter->summary(), Catch::Contains("SpectralSmoothing"));
  auto built = std::dynamic_pointer_cast<SpectralSmoothing>(hp["smoothing"].instance()->object);
  REQUIRE(built);
  CHECK(built->summary() == "time width 1-4 frames, 20-40 cepstral coefficients");
  auto g4 = make_generator(1);
  CHECK(augmenter->apply(torch::randn({2, 7, 80}), full_lengths(2), g4).x.sizes() ==
        std::vector<int64_t>({2, 7, 80}));
}

TEST_CASE("Reverb: the response's decay and direct-to-reverberant ratio, lengths, hparams",
          "[augment]") {
  ReverbConfig c;
  c.rt60_low = c.rt60_high = 0.5;
  c.drr_low = c.drr_high = 3.0;
  const Reverb reverb(c);
  // An impulse comes out as the response, rescaled to the impulse's RMS.
  const int64_t t = 16000;
  auto impulse = torch::zeros({1, t});
  impulse[0][100] = 1.0f;
  auto gen = make_generator(3);
  const auto out = reverb.apply(impulse, full_lengths(1), gen).x;
  REQUIRE(out.sizes() == impulse.sizes());
  CHECK(out.narrow(1, 0, 100).abs().max().item<float>() < 1e-5f);  // causal
  const auto h = out[0].narrow(0, 100, t - 100);
  // Direct-to-reverberant energy ratio: 3 dB.
  const double direct = h[0].item<double>() * h[0].item<double>();
  const double tail = h.narrow(0, 1, h.size(0) - 1).pow(2).sum().item<double>();
  CHECK(10 * std::log10(direct / tail) == Approx(3.0).margin(0.05));
  // RT60 from the Schroeder integral of the tail: the time from -5 to -25 dB, times 3.
  const auto energy = h.narrow(0, 1, 8000).pow(2).to(torch::kDouble);
  const auto schroeder = torch::flip(torch::cumsum(torch::flip(energy, {0}), 0), {0});
  const auto db = 10 * torch::log10(schroeder / schroeder[0]);
  const int64_t at5 = (db > -5.0).sum().item<int64_t>(), at25 = (db > -25.0).sum().item<int64_t>();
  CHECK(3.0 * double(at25 - at5) / 16000.0 == Approx(0.5).epsilon(0.1));
  // RMS kept, lengths unchanged, same seed same room.
  const auto x = torch::randn({2, 8000}, make_generator(1));
  const auto lengths = torch::tensor({1.0f, 0.5f});
  auto g1 = make_generator(8), g2 = make_generator(8);
  const auto y = Reverb(ReverbConfig{}).apply(x, lengths, g1);
  CHECK(torch::equal(y.x, Reverb(ReverbConfig{}).apply(x, lengths, g2).x));
  CHECK(torch::equal(y.lengths, lengths));
  CHECK(y.x[1].narrow(0, 0, 4000).pow(2).mean().sqrt().item<float>() ==
        Approx(x[1].narrow(0, 0, 4000).pow(2).mean().sqrt().item<float>()).epsilon(1e-4));
  CHECK_FALSE(torch::allclose(y.x, x, 1e-2, 1e-2));

  ReverbConfig bad;
  bad.rt60_low = 0.0;
  CHECK_THROWS_WITH(Reverb{bad}, Catch::Contains("0 < rt60_low"));
  bad = ReverbConfig{};
  bad.drr_low = 20.0;
  CHECK_THROWS_WITH(Reverb{bad}, Catch::Contains("drr_low (20 dB)"));
  masr::toolkit::register_all();
  auto hp = masr::hparams::load_text(R"(
room: !new:mamba_asr.Reverb
    rt60_low: 0.3
    rt60_high: 0.9
wav_augment: !new:speechbrain.augment.augmenter.Augmenter
    augmentations: [!ref <room>]
)");
  auto augmenter = std::dynamic_pointer_cast<Augmenter>(hp["wav_augment"].instance()->object);
  REQUIRE(augmenter);
  CHECK_THAT(augmenter->summary(), Catch::Contains("Reverb"));
}

namespace {

// A voice with a known pitch and formant: pulses every sr / f0 samples through a two-pole
// resonator (the formant's centre and bandwidth in Hz), 1 s at 16 kHz.
at::Tensor pulse_vowel(double f0, double formant, double bandwidth) {
  const double sr = 16000.0, pi = std::acos(-1.0);
  const int64_t t = 16000;
  std::vector<double> source(t, 0.0), out(t, 0.0);
  for (double k = 0; k * sr / f0 < t; ++k)
    source[static_cast<size_t>(std::lround(k * sr / f0)) % t] = 1.0;
  const double r = std::exp(-pi * bandwidth / sr), c = 2 * r * std::cos(2 * pi * formant / sr);
  for (int64_t n = 0; n < t; ++n) {
    out[n] = source[n] + (n >= 1 ? c * out[n - 1] : 0.0) - (n >= 2 ? r * r * out[n - 2] : 0.0);
  }
  return torch::tensor(out).to(torch::kFloat).unsqueeze(0);
}

// The median pitch of the voiced frames, their share of the frames, and the frequency (Hz) of the
// mean log envelope's highest point between 300 and 1500 Hz.
struct Voice {
  double f0 = 0, voiced = 0, formant = 0;
};
Voice voice_of(const Vocoder& v, const at::Tensor& x) {
  const auto valid = torch::full({x.size(0)}, x.size(1), torch::kLong);
  const auto a = v.analyze(x, valid, torch::full({x.size(0)}, 40, torch::kLong));
  const auto f0 = a.f0[0];
  const auto voiced = f0.masked_select(f0 > 0);
  Voice r;
  r.voiced = static_cast<double>(voiced.numel()) / static_cast<double>(f0.numel());
  if (voiced.numel() > 0) r.f0 = voiced.median().item<double>();
  const auto envelope = a.log_envelope[0].mean(1);  // (F)
  const double hz_per_bin = 16000.0 / static_cast<double>(v.n_fft());
  const int64_t lo = std::lround(300 / hz_per_bin), hi = std::lround(1500 / hz_per_bin);
  r.formant = (envelope.narrow(0, lo, hi - lo).argmax().item<int64_t>() + lo) * hz_per_bin;
  return r;
}

}  // namespace

TEST_CASE("Vocoder: pitch and formant kept or moved apart, voicing, RMS, lengths, draws, hparams",
          "[augment]") {
  VocoderConfig c;
  c.noise_low = c.noise_high = 0.0;
  const Vocoder plain(c);
  CHECK(plain.window() == 512);
  CHECK(plain.hop() == 80);
  CHECK(plain.n_fft() == 512);
  const auto vowel = pulse_vowel(150.0, 700.0, 120.0);
  // The analysis finds the pitch and the formant the signal was made with.
  const Voice in = voice_of(plain, vowel);
  INFO("input: f0 " << in.f0 << ", voiced " << in.voiced << ", formant " << in.formant);
  CHECK(in.f0 == Approx(150.0).epsilon(0.01));
  CHECK(in.voiced > 0.9);
  CHECK(in.formant == Approx(700.0).margin(60.0));
  // White noise is not voiced.
  const auto white = torch::randn({1, 16000}, make_generator(4));
  CHECK(voice_of(plain, white).voiced < 0.1);

  // Resynthesized at its own pitch: the same pitch and formant, the same RMS.
  const auto lengths = full_lengths(1);
  auto g1 = make_generator(5);
  const auto same = plain.apply(vowel, lengths, g1).x;
  REQUIRE(same.sizes() == vowel.sizes());
  const Voice out = voice_of(plain, same);
  INFO("resynthesized: f0 " << out.f0 << ", voiced " << out.voiced << ", formant " << out.formant);
  CHECK(out.f0 == Approx(150.0).epsilon(0.02));
  CHECK(out.voiced > 0.85);
  CHECK(out.formant == Approx(in.formant).margin(60.0));
  CHECK(same.pow(2).mean().sqrt().item<double>() ==
        Approx(vowel.pow(2).mean().sqrt().item<double>()).epsilon(1e-4));
  CHECK_FALSE(torch::allclose(same, vowel, 1e-2, 1e-2));

  // At 1.5 times the pitch: the pitch moves, the formant stays.
  VocoderConfig up = c;
  up.pitch_low = up.pitch_high = 1.5;
  auto g2 = make_generator(5);
  const auto higher = Vocoder(up).apply(vowel, lengths, g2).x;
  const Voice moved = voice_of(plain, higher);
  INFO("x1.5: f0 " << moved.f0 << ", voiced " << moved.voiced << ", formant " << moved.formant);
  CHECK(moved.f0 == Approx(225.0).epsilon(0.03));
  CHECK(moved.formant == Approx(in.formant).margin(80.0));

  // Lengths: zeros past an utterance's end whatever the padding held, the RMS over its valid
  // samples, the lengths passed through; the same seed gives the same output, another seed
  // other draws.
  auto batch = torch::cat({vowel, vowel}, 0);
  batch[1].narrow(0, 9600, 6400).copy_(torch::randn({6400}, make_generator(6)) * 10);
  const auto rel = torch::tensor({1.0f, 0.6f});
  auto g3 = make_generator(7), g4 = make_generator(7), g5 = make_generator(8);
  const Vocoder drawn{VocoderConfig{}};
  const auto y = drawn.apply(batch, rel, g3);
  CHECK(torch::equal(y.lengths, rel));
  CHECK(y.x[1].narrow(0, 9600, 6400).abs().max().item<float>() == 0.0f);
  CHECK(y.x[1].narrow(0, 0, 9600).pow(2).mean().sqrt().item<double>() ==
        Approx(vowel[0].narrow(0, 0, 9600).pow(2).mean().sqrt().item<double>()).epsilon(1e-4));
  CHECK(torch::equal(y.x, drawn.apply(batch, rel, g4).x));
  CHECK_FALSE(torch::equal(y.x, drawn.apply(batch, rel, g5).x));
  CHECK(std::isfinite(y.x.abs().max().item<double>()));

  VocoderConfig bad;
  bad.order_high = 300;
  CHECK_THROWS_WITH(Vocoder{bad}, Catch::Contains("order_high (300) must be at most 256"));
  bad = VocoderConfig{};
  bad.pitch_low = 0.0;
  CHECK_THROWS_WITH(Vocoder{bad}, Catch::Contains("0 < pitch_low"));
  bad = VocoderConfig{};
  bad.noise_high = 1.5;
  CHECK_THROWS_WITH(Vocoder{bad}, Catch::Contains("noise_high <= 1"));
  bad = VocoderConfig{};
  bad.f0_min = 20.0;
  CHECK_THROWS_WITH(Vocoder{bad}, Catch::Contains("< f0_min < f0_max"));
  masr::toolkit::register_all();
  auto hp = masr::hparams::load_text(R"(
vocoder: !new:mamba_asr.Vocoder
    order_low: 24
    order_high: 40
    pitch_low: 0.9
    pitch_high: 1.1
wav_augment: !new:speechbrain.augment.augmenter.Augmenter
    augmentations: [!ref <vocoder>]
)");
  auto augmenter = std::dynamic_pointer_cast<Augmenter>(hp["wav_augment"].instance()->object);
  REQUIRE(augmenter);
  CHECK_THAT(augmenter->summary(), Catch::Contains("[Vocoder]"));
  auto vocoder = std::dynamic_pointer_cast<Vocoder>(hp["vocoder"].instance()->object);
  REQUIRE(vocoder);
  CHECK_THAT(vocoder->summary(), Catch::Contains("cepstral order [24, 40], pitch x[0.9, 1.1)"));
}

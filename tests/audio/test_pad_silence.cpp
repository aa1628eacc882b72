// tests/audio/test_pad_silence.cpp
// PadSilence: margins within their bounds, the samples untouched between them, reproducible
// draws, prob, config errors; and the training pipeline applying it (hparams `pad_silence`,
// training items only).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <utility>

#include "../text/text_corpus.h"
#include "audio/audio_reader.h"
#include "audio/pad_silence.h"
#include "core/error.h"
#include "data/manifest.h"
#include "hparams/hparams.h"
#include "text/tokenizer.h"
#include "toolkit/registration.h"
#include "train/train_data.h"

using masr::audio::PadSilence;
using masr::audio::PadSilenceConfig;

namespace {

std::vector<float> ramp(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = 0.25f + 0.5f * static_cast<float>(i) / n;  // never 0
  return x;
}

PadSilenceConfig config(double lead, double tail, double prob = 1.0) {
  PadSilenceConfig c;
  c.max_lead = lead;
  c.max_tail = tail;
  c.prob = prob;
  return c;
}

// The samples between `lead` zeros and `tail` zeros are `x`, and nothing else is there.
void check_padded(const std::vector<float>& out, const std::vector<float>& x, int64_t lead,
                  int64_t tail) {
  REQUIRE(out.size() == x.size() + static_cast<size_t>(lead + tail));
  CHECK(std::all_of(out.begin(), out.begin() + lead, [](float v) { return v == 0.0f; }));
  CHECK(std::equal(x.begin(), x.end(), out.begin() + lead));
  CHECK(std::all_of(out.end() - tail, out.end(), [](float v) { return v == 0.0f; }));
}

// A character tokenizer trained in `dir` (what a maker needs to encode the transcripts).
std::shared_ptr<const masr::text::Tokenizer> char_tokenizer(const masr::testing::TempDir& dir) {
  masr::text::TokenizerTrainOptions options;
  options.model_type = "char";
  return std::make_shared<const masr::text::Tokenizer>(masr::text::Tokenizer::train(
      masr::testing::librispeech_like_sentences(200), dir.file("31_char"), options));
}

}  // namespace

TEST_CASE("PadSilence: margins drawn within [0, max] seconds, samples kept between them",
          "[audio]") {
  const PadSilence pad(config(0.5, 0.25));
  const std::vector<float> x = ramp(3000);
  std::mt19937_64 rng(5);
  int64_t longest_lead = 0, longest_tail = 0, shortest_lead = 1 << 30;
  for (int i = 0; i < 200; ++i) {
    const auto r = pad(x, rng);
    CHECK(r.lead >= 0);
    CHECK(r.lead <= 8000);
    CHECK(r.tail >= 0);
    CHECK(r.tail <= 4000);
    check_padded(r.samples, x, r.lead, r.tail);
    longest_lead = std::max(longest_lead, r.lead);
    shortest_lead = std::min(shortest_lead, r.lead);
    longest_tail = std::max(longest_tail, r.tail);
  }
  // Uniform draws: 200 of them reach near both ends of each range.
  CHECK(longest_lead > 7000);
  CHECK(shortest_lead < 1000);
  CHECK(longest_tail > 3500);
}

TEST_CASE("PadSilence: a seeded generator reproduces the margins; prob pads that share",
          "[audio]") {
  const std::vector<float> x = ramp(100);
  const PadSilence pad(config(0.1, 0.1));
  std::mt19937_64 a(9), b(9);
  for (int i = 0; i < 20; ++i) {
    const auto ra = pad(x, a);
    const auto rb = pad(x, b);
    CHECK(ra.lead == rb.lead);
    CHECK(ra.tail == rb.tail);
    CHECK(ra.samples == rb.samples);
  }
  const PadSilence never(config(0.1, 0.1, 0.0));
  const PadSilence sometimes(config(0.1, 0.1, 0.3));
  std::mt19937_64 rng(1), rng2(1);
  int padded = 0;
  for (int i = 0; i < 1000; ++i) {
    CHECK(never(x, rng).samples == x);
    const auto r = sometimes(x, rng2);
    if (r.lead + r.tail > 0) {
      ++padded;
    } else {
      CHECK(r.samples == x);
    }
  }
  // 1000 draws at 0.3: 300 expected, standard deviation 14.5.
  CHECK(padded > 240);
  CHECK(padded < 360);
  // The same number of draws whether or not it pads: what comes after does not shift.
  std::mt19937_64 c(3), d(3);
  never(x, c);
  pad(x, d);
  CHECK(c() == d());
}

TEST_CASE("PadSilence rejects bad configs", "[audio]") {
  CHECK_THROWS_WITH(PadSilence(config(-0.1, 0.1)), Catch::Contains("max_lead"));
  CHECK_THROWS_WITH(PadSilence(config(0.1, 500)), Catch::Contains("max_tail"));
  CHECK_THROWS_WITH(PadSilence(config(0.1, std::nan(""))), Catch::Contains("max_tail"));
  CHECK_THROWS_WITH(PadSilence(config(0.1, 0.1, 1.5)), Catch::Contains("prob"));
  PadSilenceConfig c = config(0.1, 0.1);
  c.sample_rate = 0;
  CHECK_THROWS_WITH(PadSilence(c), Catch::Contains("sample_rate"));
}

TEST_CASE("training items get hparams pad_silence; validation items do not", "[audio][train]") {
  masr::testing::TempDir dir("pad_silence_items");
  const auto tok = char_tokenizer(dir);
  const std::vector<float> x = ramp(8000);
  masr::data::ManifestRow row;
  row.id = "utt1";
  row.wav = dir.file("utt1.wav");
  row.wrd = "THE CAT";
  masr::audio::write_audio(row.wav, x, 16000);
  const std::vector<float> read = masr::audio::read_audio(row.wav, 16000).samples;

  masr::toolkit::register_all();  // the hparams classes with their builders
  const auto hp = masr::hparams::load_text(
      "pad_silence: !new:mamba_asr.PadSilence\n"
      "    max_lead: 0.3\n"
      "    max_tail: 0.2\n",
      {}, "pad.yaml");
  const auto pad = masr::train::pad_silence_of(hp);
  REQUIRE(pad != nullptr);
  CHECK(pad->config().max_lead == 0.3);
  CHECK(pad->config().max_tail == 0.2);
  CHECK(masr::train::pad_silence_of(masr::hparams::load_text("seed: 1\n", {}, "t.yaml")) ==
        nullptr);

  const masr::train::UtteranceMaker maker(tok, 16000, nullptr, 42, pad);
  CHECK(maker(row, false, 1).samples == read);
  // Each epoch draws its own margins, the same ones every time it is replayed (a resumed run).
  std::set<size_t> lengths;
  for (int64_t epoch = 1; epoch <= 6; ++epoch) {
    const auto item = maker(row, true, epoch);
    CHECK(item.samples == maker(row, true, epoch).samples);
    const auto first = std::find_if(item.samples.begin(), item.samples.end(),
                                    [](float v) { return v != 0.0f; });
    const int64_t lead = first - item.samples.begin();
    CHECK(lead <= 4800);
    REQUIRE(item.samples.size() >= read.size() + static_cast<size_t>(lead));
    check_padded(item.samples, read, lead,
                 static_cast<int64_t>(item.samples.size() - read.size()) - lead);
    CHECK(item.samples.size() - read.size() - static_cast<size_t>(lead) <= 3200);
    lengths.insert(item.samples.size());
  }
  CHECK(lengths.size() > 1);

  CHECK_THROWS_WITH(masr::train::UtteranceMaker(tok, 8000, nullptr, 42, pad),
                    Catch::Contains("pad_silence's sample_rate 16000"));
  CHECK_THROWS_WITH(masr::hparams::load_text("pad_silence: !new:mamba_asr.PadSilence\n"
                                             "    max_lead: 0.3\n    max_tial: 0.2\n",
                                             {}, "typo.yaml"),
                    Catch::Contains("max_tial"));
}

// The planner's view of a training item's length (UtteranceMaker::trained_seconds, the cost of a
// data-parallel step's batches): the same draws as the item itself, without reading the audio.
TEST_CASE("trained_seconds is the length of the training item the maker makes", "[audio][train]") {
  masr::testing::TempDir dir("trained_seconds");
  const auto tok = char_tokenizer(dir);
  masr::toolkit::register_all();
  const auto hp = masr::hparams::load_text(
      "speed_perturb: !new:speechbrain.augment.time_domain.SpeedPerturb\n"
      "    orig_freq: 16000\n"
      "    speeds: [95, 100, 105]\n"
      "pad_silence: !new:mamba_asr.PadSilence\n"
      "    max_lead: 0.3\n"
      "    max_tail: 0.2\n"
      "    prob: 0.5\n",
      {}, "perturb.yaml");
  const auto speed = masr::train::speed_perturb_of(hp);
  const auto pad = masr::train::pad_silence_of(hp);
  REQUIRE(speed != nullptr);
  std::vector<masr::data::ManifestRow> rows;
  for (int i = 0; i < 4; ++i) {
    masr::data::ManifestRow row;
    row.id = "utt" + std::to_string(i);
    row.wav = dir.file(row.id + ".wav");
    row.wrd = "THE CAT";
    const size_t n = 12000 + 3001 * static_cast<size_t>(i);
    masr::audio::write_audio(row.wav, ramp(n), 16000);
    row.duration = static_cast<double>(n) / 16000;
    rows.push_back(row);
  }
  for (const auto& [with_speed, with_pad] : {std::pair{true, false}, {false, true}, {true, true}}) {
    const masr::train::UtteranceMaker maker(tok, 16000, with_speed ? speed : nullptr, 42,
                                            with_pad ? pad : nullptr);
    std::set<long> seen;  // lengths differ between draws: the draws are exercised
    for (int64_t epoch = 1; epoch <= 5; ++epoch) {
      for (const auto& row : rows) {
        const size_t samples = maker(row, true, epoch).samples.size();
        const double made = static_cast<double>(samples) / 16000;
        const double told = maker.trained_seconds(row, epoch);
        INFO(row.id << " epoch " << epoch << ": made " << made << " s, told " << told << " s");
        CHECK(maker.trained_samples(row, epoch) == static_cast<int64_t>(samples));
        CHECK(std::abs(made - told) <= 0.5 / 16000);
        seen.insert(std::lround(told * 16000) - std::lround(row.duration * 16000));
      }
    }
    CHECK(seen.size() > 2);
  }
  const masr::train::UtteranceMaker plain(tok, 16000, nullptr, 42, nullptr);
  CHECK(plain.trained_seconds(rows[1], 3) == rows[1].duration);
}

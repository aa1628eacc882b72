// tests/decode/test_batch_decoder.cpp
// decode_batch on a fake model whose "waveform" spells its CTC frames, so every search has a
// known answer; batched decoding equals one-at-a-time; CTC forced alignment by hand.
#include <ATen/ATen.h>

#include <algorithm>

#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "decode/batch_decoder.h"

using namespace masr::decode;

namespace {

const std::string kMark = "\xe2\x96\x81";

// Every 100 samples are one encoder frame whose most likely token is the first sample's value
// (0 blank, 1 bos, 2 eos, 3 "▁a", 4 "▁b"); the decoder is uniform over a, b and eos.
class SpellingModel : public RecognitionModel {
 public:
  std::pair<at::Tensor, at::Tensor> encode(const at::Tensor& wavs,
                                           const at::Tensor& rel_lens) override {
    const int64_t frames = wavs.size(1) / 100;
    const at::Tensor ids = wavs.narrow(1, 0, frames * 100)
                               .view({wavs.size(0), frames, 100})
                               .select(2, 0)
                               .to(at::kLong);
    const at::Tensor enc = at::log_softmax(at::one_hot(ids, 5).to(at::kFloat) * 6.0, -1);
    return {enc, at::round(rel_lens * frames).to(at::kLong)};
  }
  at::Tensor ctc_log_probs(const at::Tensor& enc) override { return enc; }
  bool has_decoder() const override { return true; }
  at::Tensor decoder_log_probs(const at::Tensor&, const at::Tensor&,
                               const at::Tensor& tokens) override {
    at::Tensor out = at::full({tokens.size(0), tokens.size(1), 5}, -30.0f);
    out.narrow(2, 2, 3).fill_(std::log(1.0f / 3));
    return out;
  }
  std::vector<std::string> pieces() const override {
    return {"<blank>", "<s>", "</s>", kMark + "a", kMark + "b"};
  }
  int sample_rate() const override { return 2500; }  // 100 samples: one 40 ms frame
  std::string detokenize(const std::vector<int64_t>& tokens) const override {
    std::string text;
    for (int64_t t : tokens) text += (text.empty() ? "" : " ") + pieces()[t].substr(kMark.size());
    return text;
  }
};

std::vector<float> spell(const std::vector<int>& frames) {
  std::vector<float> w;
  for (int f : frames) w.insert(w.end(), 100, static_cast<float>(f));
  return w;
}

}  // namespace

TEST_CASE("decode_batch: every search on a spelled batch, batched equals one at a time",
          "[decode]") {
  SpellingModel model;
  const std::vector<float> first = spell({3, 3, 0, 4, 0, 3});  // a b a
  const std::vector<float> second = spell({4, 0, 0});          // b (padded to 6 frames)
  for (const std::string search : {"greedy", "ctc-beam", "s2s", "rescore"}) {
    DecodeConfig config;
    config.search = parse_search(search);
    config.ctc.beam_size = 4;
    config.ctc.nbest = 2;
    config.s2s.beam_size = 3;
    const auto both = decode_batch(model, {&first, &second}, config);
    REQUIRE(both.size() == 2);
    INFO(search);
    CHECK(both[0].text == "a b a");
    CHECK(both[1].text == "b");
    // Words timed from the CTC alignment, 40 ms frames: a [0, 2), b [3, 4), a [5, 6); starts
    // moved earlier by the CTC start shift (kCtcWordStartShift), never below 0 nor before the
    // previous word's end: 0.12 - 0.052 stops at a's end 0.08, 0.20 - 0.052 at b's end 0.16.
    REQUIRE(both[0].words.size() == 3);
    CHECK(both[0].words[0].start == 0.0);
    CHECK(both[0].words[0].end == Approx(0.08));
    CHECK(both[0].words[1].start == Approx(std::max(0.12 - kCtcWordStartShift, 0.08)));
    CHECK(both[0].words[1].end == Approx(0.16));
    CHECK(both[0].words[2].start == Approx(std::max(0.20 - kCtcWordStartShift, 0.16)));
    const auto alone = decode_batch(model, {&second}, config);
    CHECK(alone[0].text == both[1].text);
    CHECK(alone[0].score == Approx(both[1].score).epsilon(1e-4));
  }
  DecodeConfig unshifted;
  unshifted.search = Search::kGreedy;
  unshifted.word_start_shift = 0.0;
  CHECK(decode_batch(model, {&first}, unshifted)[0].words[1].start == Approx(0.12));
  CHECK_THROWS_WITH(parse_search("viterbi"), Catch::Contains("unknown search 'viterbi'"));
  DecodeConfig far;
  far.word_start_shift = 1.5;
  CHECK_THROWS_WITH(decode_batch(model, {&first}, far),
                    Catch::Contains("word start shift must be between -1 and 1"));
}

TEST_CASE("CTC forced alignment places each token on its best frames", "[decode]") {
  // frames' best tokens: 1 1 0 2 2 ; aligning [1, 2] gives 1 at [0, 2), 2 at [3, 5).
  at::Tensor logp = at::full({5, 3}, -5.0f);
  const int best[5] = {1, 1, 0, 2, 2};
  for (int t = 0; t < 5; ++t) logp[t][best[t]] = -0.01f;
  const CtcHypothesis hyp = ctc_forced_align(logp, {1, 2});
  CHECK(hyp.start_frames == std::vector<int64_t>{0, 3});
  CHECK(hyp.end_frames == std::vector<int64_t>{2, 5});
  CHECK(hyp.score == Approx(-0.05).margin(1e-5));
  // [1, 1] needs a blank between the repeats: 1 at [0, 2), blank at 2, 1 at [3, 5).
  const CtcHypothesis repeat = ctc_forced_align(logp, {1, 1});
  CHECK(repeat.start_frames == std::vector<int64_t>{0, 3});
  // Six tokens cannot fit in five frames: no timing.
  CHECK(ctc_forced_align(logp, {1, 2, 1, 2, 1, 2}).start_frames.empty());
}

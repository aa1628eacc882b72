// tests/decode/test_ctc_search.cpp
// CTC greedy and prefix beam search: hand tables, brute force over every path, pruning, errors.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "core/error.h"
#include "decode/ctc_greedy.h"
#include "decode/ctc_prefix_beam_search.h"
#include "ctc_brute_force.h"

using namespace masr::decode;

namespace {

at::Tensor log_table(const std::vector<std::vector<float>>& probs) {
  at::Tensor t =
      at::empty({1, static_cast<int64_t>(probs.size()), static_cast<int64_t>(probs[0].size())});
  for (size_t i = 0; i < probs.size(); ++i)
    for (size_t j = 0; j < probs[i].size(); ++j) t[0][i][j] = std::log(probs[i][j]);
  return t;
}

// P(label sequence | x) for every label sequence, by enumerating all V^T paths.
std::map<std::vector<int64_t>, double> brute_force(const at::Tensor& logp, int64_t blank = 0) {
  return masr::testing::ctc_sequence_probs(logp, blank);
}

CtcBeamSearchOptions exhaustive(int64_t beam = 1000) {
  CtcBeamSearchOptions o;
  o.beam_size = beam;
  o.beam_prune_logp = -1e30;
  o.token_prune_min_logp = -1e30;
  return o;
}

}  // namespace

TEST_CASE("CTC greedy collapses repeats, drops blanks and respects lengths", "[decode]") {
  // frame argmax:   utt 0: 1 1 0 1 2      -> tokens 1 1 2 (frames 0-2, 3-4, 4-5)
  //                 utt 1: 2 2 0 | 1 1   (length 3) -> tokens 2
  at::Tensor logp = at::full({2, 5, 3}, -5.0f);
  const int64_t best[2][5] = {{1, 1, 0, 1, 2}, {2, 2, 0, 1, 1}};
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 5; ++t) logp[b][t][best[b][t]] = -0.1f;
  const auto hyps = ctc_greedy_search(logp, at::tensor({5, 3}, at::kLong));
  REQUIRE(hyps.size() == 2);
  CHECK(hyps[0].tokens == std::vector<int64_t>{1, 1, 2});
  CHECK(hyps[0].start_frames == std::vector<int64_t>{0, 3, 4});
  CHECK(hyps[0].end_frames == std::vector<int64_t>{2, 4, 5});
  CHECK(hyps[0].score == Approx(-0.5).margin(1e-6));
  CHECK(hyps[1].tokens == std::vector<int64_t>{2});
  CHECK(hyps[1].end_frames == std::vector<int64_t>{2});
  CHECK_THROWS_WITH(ctc_greedy_search(logp, at::tensor({5, 6}, at::kLong)),
                    Catch::Contains("CTC length 6 of utterance 1 is outside [0, 5]"));
  CHECK_THROWS_WITH(ctc_greedy_search(logp[0], {}),
                    Catch::Contains("must be (batch, frames, vocab)"));
}

TEST_CASE("CTC prefix beam search finds the prefix greedy misses (hand table)", "[decode]") {
  // V = {blank, a}, two frames, p = 0.6 blank / 0.4 a at both:
  //   path  prob   labels
  //   - -   0.36   ""
  //   - a   0.24   "a"
  //   a -   0.24   "a"
  //   a a   0.16   "a"      => P("a") = 0.64 > P("") = 0.36; greedy says "".
  const at::Tensor logp = log_table({{0.6f, 0.4f}, {0.6f, 0.4f}});
  CHECK(ctc_greedy_search(logp, {})[0].tokens.empty());
  CtcBeamSearchOptions o = exhaustive();
  o.nbest = 2;
  const auto nbest = CtcPrefixBeamSearch(o).search(logp, {})[0];
  REQUIRE(nbest.size() == 2);
  CHECK(nbest[0].tokens == std::vector<int64_t>{1});
  CHECK(std::exp(nbest[0].score) == Approx(0.64).epsilon(1e-5));
  CHECK(nbest[1].tokens.empty());
  CHECK(std::exp(nbest[1].score) == Approx(0.36).epsilon(1e-5));
  // The most probable paths into "a" are -a and a- (0.24 each); the first found wins the tie:
  // -a, extending the better beam "" (0.6 > 0.4), which is visited first. Frame 1 only.
  CHECK(nbest[0].start_frames == std::vector<int64_t>{1});
  CHECK(nbest[0].end_frames == std::vector<int64_t>{2});
}

TEST_CASE("CTC prefix beam search equals brute force over all label sequences", "[decode]") {
  for (int seed = 0; seed < 5; ++seed) {
    at::manual_seed(seed);
    const at::Tensor logp = at::log_softmax(at::randn({1, 4, 3}) * 2.0, -1);  // V = 3, T = 4
    const auto exact = brute_force(logp[0]);
    CtcBeamSearchOptions o = exhaustive();
    o.nbest = static_cast<int64_t>(exact.size());
    const auto nbest = CtcPrefixBeamSearch(o).search(logp, {})[0];
    REQUIRE(nbest.size() == exact.size());
    double best = 0;
    std::vector<int64_t> best_labels;
    for (const auto& [labels, p] : exact) {
      if (p > best) best = p, best_labels = labels;
    }
    CHECK(nbest[0].tokens == best_labels);
    for (const auto& hyp : nbest)
      CHECK(std::exp(hyp.score) == Approx(exact.at(hyp.tokens)).epsilon(1e-4));
  }
}

TEST_CASE("CTC beam search equals greedy on peaked distributions, batched with lengths",
          "[decode]") {
  at::manual_seed(7);
  const int64_t batch = 3, frames = 12, vocab = 6;
  const at::Tensor ids = at::randint(vocab, {batch, frames}, at::kLong);
  const at::Tensor logp = at::log_softmax(
      at::one_hot(ids, vocab).to(at::kFloat) * 8.0 + 0.1 * at::randn({batch, frames, vocab}), -1);
  const at::Tensor lengths = at::tensor({12, 7, 9}, at::kLong);
  const auto greedy = ctc_greedy_search(logp, lengths);
  CtcBeamSearchOptions o;  // SpeechBrain's pruning
  o.beam_size = 10;
  const auto beams = CtcPrefixBeamSearch(o).search(logp, lengths);
  for (int64_t b = 0; b < batch; ++b) {
    CHECK(beams[b][0].tokens == greedy[b].tokens);
    // One at a time equals batched.
    const auto one = CtcPrefixBeamSearch(o).search(
        logp.narrow(0, b, 1).narrow(1, 0, lengths[b].item<int64_t>()), {});
    CHECK(one[0][0].tokens == beams[b][0].tokens);
    CHECK(one[0][0].score == Approx(beams[b][0].score).epsilon(1e-9));
  }
}

TEST_CASE("CTC beam search with a word n-gram LM prefers the LM's word", "[decode]") {
  // Pieces: blank, "▁a", "▁b", "▁c". Acoustics: frame 0 says "▁c", frame 2 slightly prefers
  // "▁a" (0.5) over "▁b" (0.4). The bigram LM says "c b" (log10 -0.1) >> "c a" (log10 -3).
  const std::string arpa =
      "\\data\\\nngram 1=5\nngram 2=3\n\n\\1-grams:\n-1 <s> 0\n-1 a 0\n-1 b 0\n-1 c 0\n-1 </s> "
      "0\n\n"
      "\\2-grams:\n-0.1 <s> c\n-0.1 c b\n-3 c a\n\\end\\\n";
  const ArpaLm lm = ArpaLm::from_string(arpa, "test.arpa");
  const std::vector<std::string> pieces = {"<blank>",
                                           "\xe2\x96\x81"
                                           "a",
                                           "\xe2\x96\x81"
                                           "b",
                                           "\xe2\x96\x81"
                                           "c"};
  const at::Tensor logp = log_table(
      {{0.05f, 0.05f, 0.05f, 0.85f}, {0.9f, 0.03f, 0.03f, 0.04f}, {0.06f, 0.5f, 0.4f, 0.04f}});
  CtcBeamSearchOptions o;
  o.token_prune_min_logp = -5;
  CHECK(CtcPrefixBeamSearch(o, pieces).search(logp, {})[0][0].tokens == std::vector<int64_t>{3, 1});
  o.arpa = &lm;
  o.arpa_weight = 0.5;
  o.word_insertion_bonus = 1.0;
  const auto fused = CtcPrefixBeamSearch(o, pieces).search(logp, {})[0][0];
  CHECK(fused.tokens == std::vector<int64_t>{3, 2});
  // score = ln P_ctc("c b") + 0.5 * ln(P(c|<s>) P(b|c) P(</s>|b)) + 2 * bonus; P(</s>|b) backs off
  // to the unigram (b's back-off 0): log10 -1.
  const double ln10 = std::log(10.0);
  const auto nolm = CtcPrefixBeamSearch([] {
                      CtcBeamSearchOptions e = exhaustive();
                      e.nbest = 20;
                      return e;
                    }())
                        .search(logp, {})[0];
  double p_cb = 0;
  for (const auto& h : nolm)
    if (h.tokens == std::vector<int64_t>{3, 2}) p_cb = h.score;
  REQUIRE(p_cb < 0);
  CHECK(fused.score == Approx(p_cb + 0.5 * ln10 * (-0.1 - 0.1 - 1.0) + 2.0).epsilon(1e-3));
}

TEST_CASE(
    "CTC beam search with a word n-gram LM: unknown words pay unk_offset, in full and in part",
    "[decode]") {
  // Characters: blank, the word separator "▁", "a", "b". Acoustics: "a", then blank (0.55) a
  // little likelier than "▁" (0.45), then "b", then blank or "a" (0.5 each): "ab" beats "a b"
  // acoustically by ln(0.55 / 0.45). The LM knows the words a and b (log10 -1 each, <unk> -1
  // too): at <unk>'s probability the one unknown word "ab" costs the LM less than the two known
  // ones, so only unk_offset keeps the search from running the words together.
  const ArpaLm lm = ArpaLm::from_string(
      "\\data\\\nngram 1=5\n\n\\1-grams:\n-1 <unk>\n-99 <s>\n-1 a\n-1 b\n-1 </s>\n"
      "\\end\\\n",
      "ab.arpa");
  const std::vector<std::string> pieces = {"<blank>", "\xe2\x96\x81", "a", "b"};
  const at::Tensor logp = log_table({{0.04f, 0.02f, 0.9f, 0.04f},
                                     {0.55f, 0.45f, 0.0f, 0.0f},
                                     {0.04f, 0.02f, 0.04f, 0.9f},
                                     {0.5f, 0.0f, 0.5f, 0.0f}});
  const std::vector<int64_t> run_together = {2, 3}, two_words = {2, 1, 3};
  CtcBeamSearchOptions o;
  o.token_prune_min_logp = -20;
  o.beam_prune_logp = -50;
  o.arpa = &lm;
  o.arpa_weight = 0.5;
  o.unk_offset = 0.0;
  CHECK(CtcPrefixBeamSearch(o, pieces).search(logp, {})[0][0].tokens == run_together);
  o.unk_offset = -10.0;  // the default, pyctcdecode's
  CHECK(CtcPrefixBeamSearch(o, pieces).search(logp, {})[0][0].tokens == two_words);
  // Two beams: at the last frame the unfinished "ab" and "aba" outrank "a b" acoustically and
  // would push it out before any of them is finished and charged; the partial word's penalty
  // (neither begins a word of the LM) keeps it.
  o.beam_size = 2;
  CHECK(CtcPrefixBeamSearch(o, pieces).search(logp, {})[0][0].tokens == two_words);
  o.unk_offset = 0.0;
  CHECK(CtcPrefixBeamSearch(o, pieces).search(logp, {})[0][0].tokens == run_together);
  o.unk_offset = 1.0;
  CHECK_THROWS_WITH(CtcPrefixBeamSearch(o, pieces), Catch::Contains("unk_offset must be <= 0"));
}

TEST_CASE("CTC beam search options and LM setup errors", "[decode]") {
  CtcBeamSearchOptions o;
  o.beam_size = 0;
  CHECK_THROWS_WITH(CtcPrefixBeamSearch(o), Catch::Contains("beam_size must be >= 1, got 0"));
  o = CtcBeamSearchOptions();
  o.beam_prune_logp = 1;
  CHECK_THROWS_WITH(CtcPrefixBeamSearch(o), Catch::Contains("beam_prune_logp must be <= 0"));
  o = CtcBeamSearchOptions();
  o.token_prune_min_logp = 0.5;
  CHECK_THROWS_WITH(CtcPrefixBeamSearch(o), Catch::Contains("token_prune_min_logp must be <= 0"));
  o = CtcBeamSearchOptions();
  o.nbest = 0;
  CHECK_THROWS_WITH(CtcPrefixBeamSearch(o), Catch::Contains("nbest must be >= 1"));
  const ArpaLm lm = ArpaLm::from_string("\\data\\\nngram 1=1\n\\1-grams:\n-1 a\n\\end\\\n", "x");
  o = CtcBeamSearchOptions();
  o.arpa = &lm;
  CHECK_THROWS_WITH(CtcPrefixBeamSearch(o), Catch::Contains("needs the vocabulary's pieces"));
  o = CtcBeamSearchOptions();
  o.blank = 5;
  CHECK_THROWS_WITH(CtcPrefixBeamSearch(o).search(at::zeros({1, 2, 3}), {}),
                    Catch::Contains("blank 5 is outside the 3-token vocabulary"));
}

// tests/decode/test_s2s_search.cpp
// The CTC prefix scorer against brute-force prefix probabilities, and the S2S beam search on a
// fake decoder whose outputs are a fixed table (hand-computed results).
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "core/error.h"
#include "decode/ctc_prefix_scorer.h"
#include "decode/s2s_beam_search.h"
#include "ctc_brute_force.h"

using namespace masr::decode;

namespace {

// ln of: the probability that the CTC output starts with `prefix` (exact = false) or equals it.
double brute_prefix(const at::Tensor& logp, const std::vector<int64_t>& prefix, bool exact) {
  double total = 0;
  for (const auto& [labels, p] : masr::testing::ctc_sequence_probs(logp)) {
    const bool starts =
        labels.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), labels.begin());
    if (exact ? labels == prefix : starts) total += p;
  }
  return std::log(total);
}

// A decoder whose next-token probabilities depend only on the last token.
class TableScorer : public SequenceScorer {
 public:
  explicit TableScorer(std::map<int64_t, std::vector<double>> rows) : rows_(std::move(rows)) {}
  void start(int64_t, int64_t) override {}
  at::Tensor next_log_probs(const at::Tensor& tokens) override {
    const int64_t n = tokens.size(0), vocab = static_cast<int64_t>(rows_.begin()->second.size());
    at::Tensor out = at::empty({n, vocab});
    for (int64_t i = 0; i < n; ++i) {
      const auto& row = rows_.at(tokens[i][tokens.size(1) - 1].item<int64_t>());
      for (int64_t v = 0; v < vocab; ++v) out[i][v] = std::log(std::max(row[v], 1e-30));
    }
    return out;
  }

 private:
  std::map<int64_t, std::vector<double>> rows_;
};

// Tokens: 0 blank/unk, 1 bos, 2 eos, 3 a, 4 b.
TableScorer hand_table() {
  return TableScorer({{1, {0, 0, 0.1, 0.5, 0.4}},    // after bos
                      {3, {0, 0, 0.2, 0.1, 0.7}},    // after a
                      {4, {0, 0, 0.9, 0.05, 0.05}},  // after b
                      {2, {0, 0, 1.0, 0, 0}},        // after eos (dead rows)
                      {0, {0, 0, 1.0, 0, 0}}});
}

}  // namespace

TEST_CASE("CTC prefix scores equal brute-force prefix probabilities", "[decode]") {
  at::manual_seed(3);
  // B = 2 utterances, beam 2, T = 4 (utterance 1 has 3 valid frames), V = 4 with eos = 3.
  const at::Tensor logp = at::log_softmax(at::randn({2, 4, 4}) * 1.5, -1);
  const at::Tensor lengths = at::tensor({4, 3}, at::kLong);
  CtcPrefixScorer scorer(logp, lengths, /*beam=*/2, /*blank=*/0, /*eos=*/3);
  const at::Tensor first = scorer.score(at::full({4}, 1, at::kLong));  // bos (ignored)
  for (int64_t b = 0; b < 2; ++b) {
    const at::Tensor x = logp[b].narrow(0, 0, lengths[b].item<int64_t>());
    for (int64_t row : {2 * b, 2 * b + 1}) {
      CHECK(first[row][1].item<double>() == Approx(brute_prefix(x, {1}, false)).epsilon(1e-4));
      CHECK(first[row][2].item<double>() == Approx(brute_prefix(x, {2}, false)).epsilon(1e-4));
      CHECK(first[row][3].item<double>() == Approx(brute_prefix(x, {}, true)).epsilon(1e-4));
      CHECK(first[row][0].item<double>() == Approx(CtcPrefixScorer::kMinusInf));
    }
  }
  // Keep "1" and "2" for utterance 0, "2" and "1" for utterance 1 (index = hyp * V + token).
  scorer.permute(at::tensor({1, 2, 2, 1}, at::kLong).view({2, 2}));
  const at::Tensor second = scorer.score(at::tensor({1, 2, 2, 1}, at::kLong));
  const int64_t kept[4] = {1, 2, 2, 1};
  for (int64_t row = 0; row < 4; ++row) {
    const int64_t b = row / 2;
    const at::Tensor x = logp[b].narrow(0, 0, lengths[b].item<int64_t>());
    const int64_t g = kept[row];
    const double psi_g = brute_prefix(x, {g}, false);
    for (int64_t c : {1, 2}) {
      CHECK(second[row][c].item<double>() ==
            Approx(brute_prefix(x, {g, c}, false) - psi_g).epsilon(1e-4));
    }
    CHECK(second[row][3].item<double>() ==
          Approx(brute_prefix(x, {g}, true) - psi_g).epsilon(1e-4));
  }
  CHECK_THROWS_WITH(scorer.score(at::zeros({3}, at::kLong)),
                    Catch::Contains("expected 4 last tokens, got 3"));
  CHECK_THROWS_WITH(CtcPrefixScorer(logp, lengths, 2, 0, 9),
                    Catch::Contains("eos 9 must be inside the 4-token vocabulary"));
}

TEST_CASE("S2S beam search on a fixed decoder table (hand-computed)", "[decode]") {
  // Beam 2, no CTC, 3 encoder frames (at most 3 steps). ln: .5 -0.693, .4 -0.916, .7 -0.357,
  // .2 -1.609, .9 -0.105, .1 -2.303.
  // step 0 (/1): a -0.693, b -0.916                      -> alive a, b
  // step 1 (/2): b.eos (-0.916-0.105)/2 = -0.511, a.b (-0.693-0.357)/2 = -0.525, a.eos -1.151
  //              -> [b] finished at -0.511; alive a.b (-1.050)
  // step 2 (/3): a.b.eos (-1.050-0.105)/3 = -0.385      -> [a b] finished at -0.385: beam full.
  // Best: [a b] (-0.385) over [b] (-0.511). Without length normalization [b] -1.021 beats
  // [a b] -1.155.
  TableScorer decoder = hand_table();
  S2SBeamSearchOptions o;
  o.beam_size = 2;
  o.ctc_weight = 0;
  o.nbest = 2;
  const at::Tensor lengths = at::tensor({3}, at::kLong);
  auto result = S2SBeamSearch(o).search(3, lengths, &decoder, {}, nullptr)[0];
  REQUIRE(result.size() == 2);
  CHECK(result[0].tokens == std::vector<int64_t>{3, 4});
  CHECK(result[0].score ==
        Approx((std::log(0.5) + std::log(0.7) + std::log(0.9)) / 3).epsilon(1e-5));
  CHECK(result[1].tokens == std::vector<int64_t>{4});
  CHECK(result[1].score == Approx((std::log(0.4) + std::log(0.9)) / 2).epsilon(1e-5));
  o.length_normalization = false;
  result = S2SBeamSearch(o).search(3, lengths, &decoder, {}, nullptr)[0];
  CHECK(result[0].tokens == std::vector<int64_t>{4});
  CHECK(result[0].score == Approx(std::log(0.4) + std::log(0.9)).epsilon(1e-5));
  // One frame: one step, then every alive hypothesis is forced to end: [a] -0.693, [b] -0.916,
  // each returned without its last token as SpeechBrain returns them (len(hyp) - 1 tokens), so
  // both are empty and keep their scores.
  o.length_normalization = true;
  result = S2SBeamSearch(o).search(1, at::tensor({1}, at::kLong), &decoder, {}, nullptr)[0];
  REQUIRE(result.size() == 2);
  CHECK(result[0].tokens.empty());
  CHECK(result[0].score == Approx(std::log(0.5)).epsilon(1e-5));
  CHECK(result[1].tokens.empty());
  CHECK(result[1].score == Approx(std::log(0.4)).epsilon(1e-5));
}

TEST_CASE("S2S beam search: joint CTC weight, LM fusion and batching", "[decode]") {
  // CTC alone (ctc_weight 1) on a one-hot "a b" alignment finds [a b]; blank is never emitted.
  at::Tensor ctc = at::full({1, 4, 5}, -20.0f);
  const int64_t path[4] = {3, 0, 4, 0};
  for (int t = 0; t < 4; ++t) ctc[0][t][path[t]] = 0.0f;
  ctc = at::log_softmax(ctc, -1);
  S2SBeamSearchOptions o;
  o.beam_size = 3;
  o.ctc_weight = 1.0;
  auto best = S2SBeamSearch(o).search(4, at::tensor({4}, at::kLong), nullptr, ctc, nullptr)[0][0];
  CHECK(best.tokens == std::vector<int64_t>{3, 4});
  // With the decoder table at weight 0.6 (beam 2) the CTC evidence wins: [a b].
  TableScorer decoder = hand_table();
  o.ctc_weight = 0.4;
  o.beam_size = 2;
  best = S2SBeamSearch(o).search(4, at::tensor({4}, at::kLong), &decoder, ctc, nullptr)[0][0];
  CHECK(best.tokens == std::vector<int64_t>{3, 4});
  // SpeechBrain stops as soon as beam_size hypotheses have ended, even when an alive one scores
  // better: with beam 3, [] ends at step 0 and [b], [a] at step 1 (CTC scores about -20 each), so
  // the search stops before [a b] can end, and [b] wins with (0.6 ln .4 + 0.6 ln .9 + 0.4 ln
  // P_ctc(b)) / 2.
  o.beam_size = 3;
  best = S2SBeamSearch(o).search(4, at::tensor({4}, at::kLong), &decoder, ctc, nullptr)[0][0];
  CHECK(best.tokens == std::vector<int64_t>{4});
  CHECK(best.score < -4.0);
  o.beam_size = 2;
  // ...and an LM that strongly wants [b] alone flips the attention-only result.
  TableScorer lm({{1, {0, 0, 0.01, 0.01, 0.98}},
                  {3, {0, 0, 0.98, 0.01, 0.01}},
                  {4, {0, 0, 0.98, 0.01, 0.01}},
                  {2, {0, 0, 1.0, 0, 0}},
                  {0, {0, 0, 1.0, 0, 0}}});
  o.ctc_weight = 0;
  o.lm_weight = 1.0;
  best = S2SBeamSearch(o).search(4, at::tensor({4}, at::kLong), &decoder, {}, &lm)[0][0];
  CHECK(best.tokens == std::vector<int64_t>{4});
  // Batched with padding equals one at a time.
  at::Tensor batch_ctc = at::cat({ctc, at::log_softmax(at::randn({1, 4, 5}), -1)});
  batch_ctc[1].narrow(0, 2, 2).fill_(0.0f);  // padding garbage past length 2
  o = S2SBeamSearchOptions();
  o.beam_size = 3;
  o.ctc_weight = 0.4;
  const auto both =
      S2SBeamSearch(o).search(4, at::tensor({4, 2}, at::kLong), &decoder, batch_ctc, nullptr);
  const auto alone = S2SBeamSearch(o).search(4, at::tensor({2}, at::kLong), &decoder,
                                             batch_ctc.narrow(0, 1, 1), nullptr);
  CHECK(both[1][0].tokens == alone[0][0].tokens);
  CHECK(both[1][0].score == Approx(alone[0][0].score).epsilon(1e-5));
  CHECK_THROWS_WITH(S2SBeamSearch(o).search(4, at::tensor({4}, at::kLong), nullptr, ctc, nullptr),
                    Catch::Contains("ctc_weight < 1 needs a decoder"));
  o.nbest = 5;
  CHECK_THROWS_WITH(S2SBeamSearch(o), Catch::Contains("nbest must be in [1, beam_size], got 5"));
}

// tests/decode/test_ctc_lm_fusion.cpp
// Neural LM shallow fusion in CTC prefix beam search: with pruning off the search must find the
// label sequence maximizing log P_ctc(y|x) + W log P_lm(y) + bonus |y| over every sequence.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "decode/ctc_prefix_beam_search.h"
#include "decode/model_scorers.h"
#include "ctc_brute_force.h"

using namespace masr;
using decode::CtcBeamSearchOptions;
using decode::CtcPrefixBeamSearch;

namespace {

constexpr int64_t kBos = 1, kEos = 2, kPad = 0;

models::TransformerLM random_lm(int64_t vocab) {
  models::TransformerLMConfig c;
  c.vocab = vocab;
  c.d_model = 16;
  c.nhead = 2;
  c.num_encoder_layers = 2;
  c.d_ffn = 32;
  c.dropout = 0.0;
  models::TransformerLM lm(c);
  lm->eval();
  return lm;
}

// log P_ctc(y | x) of every label sequence y, summing all V^T alignments.
std::map<std::vector<int64_t>, double> ctc_sequence_logp(const at::Tensor& logp) {
  auto probs = masr::testing::ctc_sequence_probs(logp);
  for (auto& [labels, p] : probs) p = std::log(p);
  return probs;
}

// log P_lm(y </s>) from one unpadded forward over <s> y.
double lm_sequence_logp(models::TransformerLM& lm, const std::vector<int64_t>& labels) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> input = {kBos};
  input.insert(input.end(), labels.begin(), labels.end());
  const at::Tensor logp =
      at::log_softmax(lm->forward(torch::tensor(input).unsqueeze(0), kPad)[0], -1);
  double total = 0;
  for (size_t i = 0; i < labels.size(); ++i) total += logp[i][labels[i]].item<double>();
  return total + logp[labels.size()][kEos].item<double>();
}

// Counts the prefixes the search asks for, to check that none is scored twice.
class CountingLm : public decode::PrefixLm {
 public:
  explicit CountingLm(decode::PrefixLm& inner) : inner_(inner) {}
  at::Tensor next_log_probs(const std::vector<std::vector<int64_t>>& prefixes) override {
    ++calls;
    for (const auto& p : prefixes) repeated += !seen.insert(p).second;
    return inner_.next_log_probs(prefixes);
  }
  int64_t eos() const override { return inner_.eos(); }
  std::set<std::vector<int64_t>> seen;
  int repeated = 0, calls = 0;

 private:
  decode::PrefixLm& inner_;
};

class FixedLm : public decode::PrefixLm {
 public:
  FixedLm(int64_t width, int64_t eos) : width_(width), eos_(eos) {}
  at::Tensor next_log_probs(const std::vector<std::vector<int64_t>>& prefixes) override {
    return at::zeros({static_cast<int64_t>(prefixes.size()), width_});
  }
  int64_t eos() const override { return eos_; }

 private:
  int64_t width_, eos_;
};

}  // namespace

TEST_CASE("CTC beam search with neural LM fusion equals brute force", "[ctc_lm]") {
  at::manual_seed(11);
  int cases = 0;
  for (int64_t vocab : {3, 4}) {
    for (int64_t frames : {2, 4, 6}) {
      for (double weight : {0.5, 1.5}) {
        const double bonus = weight > 1 ? 0.7 : 0.0;  // per-token bonus
        models::TransformerLM lm = random_lm(vocab);
        decode::TransformerLmPrefixScorer scorer(lm, kBos, kEos, kPad);
        CountingLm counting(scorer);
        const at::Tensor logp = at::log_softmax(at::randn({frames, vocab}) * 2, -1);
        std::vector<std::pair<double, std::vector<int64_t>>> expected;
        for (const auto& [labels, ctc] : ctc_sequence_logp(logp)) {
          expected.emplace_back(ctc + weight * lm_sequence_logp(lm, labels) +
                                    bonus * static_cast<double>(labels.size()),
                                labels);
        }
        std::sort(expected.rbegin(), expected.rend());
        CtcBeamSearchOptions o;
        o.beam_size = 100000;  // no pruning at all
        o.beam_prune_logp = -1e30;
        o.token_prune_min_logp = -1e30;
        o.nbest = 3;
        o.neural_lm = &counting;
        o.neural_lm_weight = weight;
        o.neural_lm_token_bonus = bonus;
        const auto hyps = CtcPrefixBeamSearch(o).search_one(logp.data_ptr<float>(), frames, vocab);
        INFO("V " << vocab << ", T " << frames << ", W " << weight << ", bonus " << bonus);
        REQUIRE(hyps.size() == std::min<size_t>(3, expected.size()));
        CHECK(hyps[0].tokens == expected[0].second);
        for (size_t i = 0; i < hyps.size(); ++i)
          CHECK(hyps[i].score == Approx(expected[i].first).margin(1e-4));
        CHECK(counting.repeated == 0);
        CHECK(counting.calls <= frames + 1);  // one batched call per frame, one at the end
        ++cases;
      }
    }
  }
  CHECK(cases == 12);
}

TEST_CASE("CTC beam search LM fusion changes the result", "[ctc_lm]") {
  // Frame posteriors favour "1 1" (1, blank, 1) weakly over "1 3"; an LM that strongly prefers
  // 3 after 1 must flip the result. Vocab {blank, 1, 2=eos, 3}.
  const at::Tensor logp = at::log(
      torch::tensor(
          {{0.1f, 0.8f, 0.0f, 0.1f}, {0.9f, 0.05f, 0.0f, 0.05f}, {0.1f, 0.48f, 0.0f, 0.42f}}) +
      1e-9f);
  class PrefersThree : public decode::PrefixLm {
   public:
    at::Tensor next_log_probs(const std::vector<std::vector<int64_t>>& prefixes) override {
      at::Tensor out = at::full({static_cast<int64_t>(prefixes.size()), 4}, std::log(0.3f));
      for (size_t i = 0; i < prefixes.size(); ++i) {
        if (!prefixes[i].empty() && prefixes[i].back() == 1)
          out[i][3] = std::log(0.9f), out[i][1] = std::log(0.01f);
      }
      return out;
    }
    int64_t eos() const override { return kEos; }
  } lm;
  CtcBeamSearchOptions o;
  o.beam_size = 10;
  const auto plain = CtcPrefixBeamSearch(o).search_one(logp.data_ptr<float>(), 3, 4);
  CHECK(plain[0].tokens == std::vector<int64_t>{1, 1});
  o.neural_lm = &lm;
  o.neural_lm_weight = 1.0;
  const auto fused = CtcPrefixBeamSearch(o).search_one(logp.data_ptr<float>(), 3, 4);
  CHECK(fused[0].tokens == std::vector<int64_t>{1, 3});
}

TEST_CASE("TransformerLmPrefixScorer rows equal unpadded forwards", "[ctc_lm]") {
  at::manual_seed(3);
  models::TransformerLM lm = random_lm(5);
  decode::TransformerLmPrefixScorer scorer(lm, kBos, kEos, kPad, 1.3);
  const std::vector<std::vector<int64_t>> prefixes = {{}, {3, 4, 1, 2}, {4}};
  const at::Tensor rows = scorer.next_log_probs(prefixes);
  REQUIRE(rows.sizes() == at::IntArrayRef({3, 5}));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    std::vector<int64_t> input = {kBos};
    input.insert(input.end(), prefixes[i].begin(), prefixes[i].end());
    const at::Tensor logits = lm->forward(torch::tensor(input).unsqueeze(0), kPad)[0];
    const at::Tensor expected = at::log_softmax(logits[-1] / 1.3, -1);
    CHECK(at::allclose(rows[i], expected, 1e-5, 1e-5));
  }
  CHECK_THROWS_WITH(decode::TransformerLmPrefixScorer(lm, kBos, kEos, kPad, 0.0),
                    Catch::Contains("LM temperature must be > 0, got 0"));
}

TEST_CASE("CTC beam search neural LM errors", "[ctc_lm]") {
  const at::Tensor logp = at::log_softmax(at::randn({3, 4}), -1);
  CtcBeamSearchOptions o;
  FixedLm narrow(3, 2);
  o.neural_lm = &narrow;
  CHECK_THROWS_WITH(
      CtcPrefixBeamSearch(o).search_one(logp.data_ptr<float>(), 3, 4),
      Catch::Contains("the neural LM returned 3 scores per prefix for a 4-token vocabulary"));
  FixedLm bad_eos(4, 7);
  o.neural_lm = &bad_eos;
  CHECK_THROWS_WITH(CtcPrefixBeamSearch(o).search_one(logp.data_ptr<float>(), 3, 4),
                    Catch::Contains("the neural LM's eos 7 is outside the 4-token vocabulary"));
}

TEST_CASE("An LM must have the ASR model's pieces", "[ctc_lm]") {
  const std::vector<std::string> asr = {"<blank>", "<s>", "</s>", "A", "B"};
  CHECK_NOTHROW(decode::check_same_pieces(asr, asr, "LM 'x'"));
  CHECK_THROWS_WITH(decode::check_same_pieces({"<blank>", "<s>", "</s>", "B", "A"}, asr, "LM 'x'"),
                    Catch::Contains("LM 'x' does not share the ASR model's tokenizer: token 3 is "
                                    "'B' for the LM and 'A' for the ASR model"));
  CHECK_THROWS_WITH(decode::check_same_pieces({"<blank>"}, asr, "LM 'x'"),
                    Catch::Contains("LM 'x' has 1 tokens but the ASR model has 5"));
}

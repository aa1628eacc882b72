// tests/decode/test_attention_rescoring.cpp
// Attention rescoring on a fake teacher-forced decoder whose probabilities are a fixed table.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "decode/attention_rescoring.h"

using namespace masr::decode;

TEST_CASE("Attention rescoring re-ranks a CTC n-best (hand-computed)", "[decode]") {
  // Tokens: 0 pad, 1 bos, 2 eos, 3 a, 4 b. The fake decoder's next-token probabilities depend
  // only on the input token: after bos {a .8, b .2}, after a {eos .9, b .1}, after b {eos .5, a
  // .5}.
  //   hyp   ctc    att = ln P(tokens, eos)              total (ctc_weight 0.5)
  //   [b]   -1.0   ln .2 + ln .5  = -2.303              -2.803
  //   [a]   -1.5   ln .8 + ln .9  = -0.329              -1.079   <- best
  const double table[5][5] = {{0, 0, 1, 0, 0},
                              {0, 0, 0, 0.8, 0.2},
                              {0, 0, 1, 0, 0},
                              {0, 0, 0.9, 0, 0.1},
                              {0, 0, 0.5, 0.5, 0}};
  int calls = 0;
  const TeacherForcedScorer scorer = [&](const at::Tensor& tokens) {
    ++calls;
    at::Tensor out = at::empty({tokens.size(0), tokens.size(1), 5});
    for (int64_t i = 0; i < tokens.size(0); ++i)
      for (int64_t u = 0; u < tokens.size(1); ++u)
        for (int64_t v = 0; v < 5; ++v)
          out[i][u][v] = std::log(std::max(table[tokens[i][u].item<int64_t>()][v], 1e-30));
    return out;
  };
  CtcHypothesis b, a;
  b.tokens = {4};
  b.score = -1.0;
  a.tokens = {3};
  a.score = -1.5;
  const auto out = attention_rescore({b, a}, scorer, AttentionRescoringOptions());
  CHECK(calls == 1);  // one batch for the whole n-best
  REQUIRE(out.size() == 2);
  CHECK(out[0].hyp.tokens == std::vector<int64_t>{3});
  CHECK(out[0].attention_score == Approx(std::log(0.8) + std::log(0.9)));
  CHECK(out[0].hyp.score == Approx(std::log(0.8) + std::log(0.9) - 0.75));
  CHECK(out[1].attention_score == Approx(std::log(0.2) + std::log(0.5)));
  CHECK(attention_rescore({}, scorer, AttentionRescoringOptions()).empty());
  const TeacherForcedScorer broken = [](const at::Tensor&) { return at::zeros({1, 1}); };
  CHECK_THROWS_WITH(
      attention_rescore({a}, broken, AttentionRescoringOptions()),
      Catch::Contains("the decoder returned 2-d log-probabilities; expected (1, 2, V)"));
}

// tests/decode/test_incremental_decoding.cpp
// Incremental decoding (KV caches, recurrent Mamba states) against full-prefix recomputation, with
// beam reordering; S2S search with and without caches; partial CTC scoring against full scoring.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "decode/ctc_prefix_scorer.h"
#include "decode/model_scorers.h"
#include "decode/s2s_beam_search.h"
#include "models/mamba_step.h"
#include "models/transformer_asr.h"
#include "models/transformer_lm.h"

using namespace masr;
using namespace masr::decode;

namespace {

constexpr int64_t kVocab = 11, kDim = 16;

models::TransformerASR tiny_asr(const std::string& decoder, bool normalize_before) {
  models::TransformerASRConfig c;
  c.tgt_vocab = kVocab;
  c.input_size = 8;
  c.d_model = kDim;
  c.nhead = 2;
  c.num_encoder_layers = 1;
  c.num_decoder_layers = 2;
  c.d_ffn = 32;
  c.decoder_module = decoder;
  c.normalize_before = normalize_before;
  c.mamba.d_state = 4;
  models::TransformerASR model(c);
  model->eval();
  return model;
}

models::TransformerLM tiny_lm(bool normalize_before) {
  models::TransformerLMConfig c;
  c.vocab = kVocab;
  c.d_model = kDim;
  c.nhead = 2;
  c.num_encoder_layers = 2;
  c.d_ffn = 32;
  c.normalize_before = normalize_before;
  models::TransformerLM lm(c);
  lm->eval();
  return lm;
}

// Random parents that keep every row inside its utterance, as beam searches do.
at::Tensor random_parents(int64_t batch, int64_t beam) {
  return (at::randint(beam, {batch, beam}, at::kLong) +
          (at::arange(batch, at::kLong) * beam).unsqueeze(1))
      .view({-1});
}

// Steps `scorer` for 6 tokens with random reordering; each step's log-probs must equal
// `full(tokens)` (the whole prefix recomputed) within 1e-4.
void check_against_full(SequenceScorer& scorer, int64_t batch, int64_t beam,
                        const std::function<at::Tensor(const at::Tensor&)>& full) {
  const int64_t n = batch * beam;
  scorer.start(batch, beam);
  at::Tensor tokens = at::ones({n, 1}, at::kLong);  // bos
  for (int step = 0; step < 6; ++step) {
    const at::Tensor got = scorer.next_log_probs(tokens);
    const at::Tensor want = full(tokens);
    INFO("step " << step);
    CHECK(got.sizes() == want.sizes());
    CHECK((got - want).abs().max().item<double>() < 1e-4);
    const at::Tensor parents = random_parents(batch, beam);
    scorer.reorder(parents);
    // Token 0 (the pad index) now and then, to exercise the cached key padding.
    const at::Tensor next = at::randint(step == 2 ? 0 : 2, kVocab, {n, 1}, at::kLong);
    tokens = at::cat({tokens.index_select(0, parents), next}, 1);
  }
}

void check_decoder(const std::string& decoder, bool normalize_before) {
  torch::manual_seed(3);
  torch::NoGradGuard no_grad;
  auto model = tiny_asr(decoder, normalize_before);
  torch::nn::Linear head(kDim, kVocab);
  const OutputHead out = [head](const at::Tensor& x) mutable { return head->forward(x); };
  const int64_t batch = 2, beam = 3;
  const at::Tensor memory = at::randn({batch, 7, kDim});
  const at::Tensor lengths = at::tensor({7, 4}, at::kLong);
  auto scorer = incremental_asr_decoder(model, out, memory, lengths, 1.3);
  const at::Tensor beam_memory = memory.repeat_interleave(beam, 0);
  const at::Tensor beam_lengths = lengths.repeat_interleave(beam, 0);
  check_against_full(*scorer, batch, beam, [&](const at::Tensor& tokens) {
    const at::Tensor logits = out(model->decode(tokens, beam_memory, beam_lengths));
    return at::log_softmax(logits.select(1, tokens.size(1) - 1) / 1.3, -1);
  });
}

}  // namespace

TEST_CASE("Transformer decoder with a KV cache equals full-prefix recomputation", "[decode]") {
  check_decoder("transformer", true);
  check_decoder("transformer", false);
}

TEST_CASE("Mamba decoder stepped recurrently equals full-prefix recomputation", "[decode]") {
  check_decoder("mamba", true);
}

TEST_CASE("TransformerLM with a KV cache equals full-prefix recomputation", "[decode]") {
  for (bool pre : {false, true}) {
    torch::manual_seed(5);
    torch::NoGradGuard no_grad;
    auto lm = tiny_lm(pre);
    TransformerLmScorer cached(lm, 1.15, true), full(lm, 1.15, false);
    check_against_full(cached, 2, 3, [&](const at::Tensor& tokens) {
      full.start(2, 3);
      return full.next_log_probs(tokens);
    });
  }
}

TEST_CASE("Mamba prefill state equals stepping through the sequence", "[decode]") {
  torch::manual_seed(9);
  torch::NoGradGuard no_grad;
  nn::MambaConfig config;
  config.d_state = 4;
  nn::Mamba mamba(kDim, config, false);
  const at::Tensor x = at::randn({2, 9, kDim});
  const at::Tensor lengths = at::tensor({9, 5}, at::kLong);
  // After the prefill, one more step on y must equal forward over [x[:len]; y] at the last frame.
  const models::MambaStepState prefilled = models::mamba_prefill(*mamba, x, lengths);
  models::MambaStepState state = prefilled;
  const at::Tensor y = at::randn({2, 1, kDim});
  const at::Tensor stepped = models::mamba_step(*mamba, y, state);
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t len = lengths[b].item<int64_t>();
    const at::Tensor seq = at::cat({x[b].narrow(0, 0, len), y[b]}).unsqueeze(0);
    const at::Tensor want = mamba->forward(seq).select(1, len);
    CHECK((stepped[b] - want).abs().max().item<double>() < 1e-4);
  }
  CHECK_THROWS_WITH(models::mamba_prefill(*nn::Mamba(kDim, config, true), x, lengths),
                    Catch::Contains("bidirectional block depends on future frames"));
}

TEST_CASE("S2S beam search with caches equals full recomputation", "[decode]") {
  for (const std::string decoder : {"transformer", "mamba"}) {
    torch::manual_seed(11);
    torch::NoGradGuard no_grad;
    auto model = tiny_asr(decoder, true);
    auto lm = tiny_lm(false);
    torch::nn::Linear head(kDim, kVocab);
    const OutputHead out = [head](const at::Tensor& x) mutable { return head->forward(x); };
    const at::Tensor memory = at::randn({2, 6, kDim});
    const at::Tensor lengths = at::tensor({6, 4}, at::kLong);
    const at::Tensor ctc = at::log_softmax(at::randn({2, 6, kVocab}) * 2, -1);
    S2SBeamSearchOptions o;
    o.beam_size = 3;
    o.nbest = 3;
    o.lm_weight = 0.5;
    o.ctc_pre_beam = 0;
    AsrDecoderScorer full_decoder(transformer_asr_decoder(model, out), memory, lengths);
    TransformerLmScorer full_lm(lm, 1.0, false), cached_lm(lm, 1.0, true);
    auto cached_decoder = incremental_asr_decoder(model, out, memory, lengths);
    const auto want = S2SBeamSearch(o).search(6, lengths, &full_decoder, ctc, &full_lm);
    const auto got = S2SBeamSearch(o).search(6, lengths, cached_decoder.get(), ctc, &cached_lm);
    // Partial CTC scoring over a pre-beam as wide as the vocabulary changes nothing either.
    o.ctc_pre_beam = 10;  // 30 >= 11 tokens
    const auto wide = S2SBeamSearch(o).search(6, lengths, cached_decoder.get(), ctc, &cached_lm);
    for (size_t b = 0; b < 2; ++b) {
      REQUIRE(got[b].size() == want[b].size());
      REQUIRE(wide[b].size() == want[b].size());
      for (size_t i = 0; i < want[b].size(); ++i) {
        INFO(decoder << " utterance " << b << " hypothesis " << i);
        CHECK(got[b][i].tokens == want[b][i].tokens);
        CHECK(got[b][i].score == Approx(want[b][i].score).margin(1e-4));
        CHECK(wide[b][i].tokens == want[b][i].tokens);
        CHECK(wide[b][i].score == Approx(want[b][i].score).margin(1e-4));
      }
    }
  }
}

TEST_CASE("Partial CTC prefix scoring equals full scoring on the scored tokens", "[decode]") {
  torch::manual_seed(13);
  const int64_t batch = 2, beam = 3, vocab = 7, n = batch * beam;
  const at::Tensor logp = at::log_softmax(at::randn({batch, 8, vocab}) * 2, -1);
  const at::Tensor lengths = at::tensor({8, 5}, at::kLong);
  CtcPrefixScorer full(logp, lengths, beam), all(logp, lengths, beam), some(logp, lengths, beam);
  at::Tensor last = at::ones({n}, at::kLong);
  for (int step = 0; step < 4; ++step) {
    INFO("step " << step);
    // K = V in a shuffled order, and K = 3 random distinct tokens.
    const at::Tensor shuffled =
        at::argsort(at::rand({n, vocab}), /*dim=*/static_cast<int64_t>(1), /*descending=*/false);
    const at::Tensor three = shuffled.narrow(1, 0, 3).contiguous();
    const at::Tensor want = full.score(last);
    const at::Tensor got_all = all.score(last, shuffled);
    const at::Tensor got_some = some.score(last, three);
    CHECK((got_all - want).abs().max().item<double>() < 1e-4);
    const at::Tensor mask = at::zeros({n, vocab}, at::kBool).scatter_(1, three, true);
    CHECK((got_some - want).masked_fill(mask.logical_not(), 0).abs().max().item<double>() < 1e-4);
    CHECK(got_some.masked_select(mask.logical_not())
              .eq(CtcPrefixScorer::kMinusInf)
              .all()
              .item<bool>());
    // Keep, per utterance, `beam` hypotheses continued with one of the three scored tokens.
    const at::Tensor hyp = at::randint(beam, {batch, beam}, at::kLong);
    const at::Tensor rows = (hyp + (at::arange(batch, at::kLong) * beam).unsqueeze(1)).view({-1});
    const at::Tensor token =
        three.index_select(0, rows).gather(1, at::randint(3, {n, 1}, at::kLong));
    const at::Tensor candidates = hyp * vocab + token.view({batch, beam});
    full.permute(candidates);
    all.permute(candidates);
    some.permute(candidates);
    last = token.view({-1});
  }
  CHECK_THROWS_WITH(full.score(last, at::zeros({n, vocab + 1}, at::kLong)),
                    Catch::Contains("candidates must be (6, K) with 1 <= K <= 7"));
}

TEST_CASE("Incremental scorers reject misuse with clear messages", "[decode]") {
  torch::NoGradGuard no_grad;
  auto lm = tiny_lm(false);
  TransformerLmScorer scorer(lm, 1.0, true);
  scorer.start(1, 2);
  CHECK_THROWS_WITH(scorer.next_log_probs(at::ones({2, 3}, at::kLong)),
                    Catch::Contains("expected (rows, 1) tokens, one more than the last step"));
  models::TransformerLMConfig c;
  c.vocab = kVocab;
  c.d_model = kDim;
  c.nhead = 2;
  c.num_encoder_layers = 1;
  c.d_ffn = 32;
  c.relative_attention = true;
  models::TransformerLM relative(c);
  auto state = relative->start_state();
  CHECK_THROWS_WITH(relative->step(at::ones({2}, at::kLong), *state),
                    Catch::Contains("only a causal LM with regularMHA attention can be stepped"));
  S2SBeamSearchOptions o;
  o.ctc_pre_beam = -1;
  CHECK_THROWS_WITH(S2SBeamSearch(o), Catch::Contains("ctc_pre_beam must be >= 0, got -1"));
  CHECK_THROWS_WITH(IncrementalScorer("x", nullptr, nullptr, 0.0),
                    Catch::Contains("x temperature must be > 0"));
}

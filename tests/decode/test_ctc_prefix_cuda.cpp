// tests/decode/test_ctc_prefix_cuda.cpp
// The CTC prefix scorer on CUDA (one fused kernel per step) against the CPU scorer, whose loop
// the [decode] tests pin to brute-force enumeration. Hidden tag: run on a GPU machine with
// test_masr "[.cuda]".
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "decode/ctc_prefix_scorer.h"

using masr::decode::CtcPrefixScorer;

TEST_CASE("CUDA CTC prefix scores equal the CPU scores over a whole search", "[.cuda]") {
#ifdef MASR_WITH_CUDA
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device: skipped");
    return;
  }
  torch::manual_seed(29);
  const at::Device gpu(at::kCUDA);
  // Shapes: a tiny vocabulary with every token scored, and a larger one with partial scoring;
  // padded batches (one utterance of a single frame), prefixes longer than short utterances.
  struct Shape {
    int64_t batch, frames, vocab, beam, scored;
  };
  for (const Shape& shape :
       {Shape{2, 9, 5, 3, 0}, Shape{3, 40, 31, 4, 6}, Shape{4, 57, 64, 10, 15}}) {
    const int64_t n = shape.batch * shape.beam;
    INFO("batch " << shape.batch << " frames " << shape.frames << " vocab " << shape.vocab);
    const at::Tensor logp =
        at::log_softmax(at::randn({shape.batch, shape.frames, shape.vocab}) * 3, -1);
    at::Tensor lengths = at::randint(1, shape.frames + 1, {shape.batch}, at::kLong);
    lengths[0] = shape.frames;
    lengths[shape.batch - 1] = 1;
    CtcPrefixScorer cpu(logp, lengths, shape.beam), cuda(logp.to(gpu), lengths.to(gpu), shape.beam);
    at::Tensor last = at::ones({n}, at::kLong);
    for (int step = 0; step < 12; ++step) {
      INFO("step " << step);
      at::Tensor candidates;
      if (shape.scored > 0) {
        candidates = at::argsort(at::rand({n, shape.vocab}), /*dim=*/static_cast<int64_t>(1),
                                 /*descending=*/false)
                         .narrow(1, 0, shape.scored)
                         .contiguous();
      }
      const at::Tensor want = cpu.score(last, candidates);
      const at::Tensor got =
          cuda.score(last.to(gpu), candidates.defined() ? candidates.to(gpu) : candidates).cpu();
      // Scores of impossible continuations sit near -1e20; compare the possible ones in float
      // precision (both run the same float32 recursion, in a different order of threads).
      const at::Tensor possible = want.gt(-1e10);
      CHECK(possible.eq(got.gt(-1e10)).all().item<bool>());
      const double diff =
          (got - want).masked_fill(possible.logical_not(), 0).abs().max().item<double>();
      CHECK(diff < 1e-3);
      // Continue each utterance's beam with random scored tokens.
      const at::Tensor hyp = at::randint(shape.beam, {shape.batch, shape.beam}, at::kLong);
      const at::Tensor rows =
          (hyp + (at::arange(shape.batch, at::kLong) * shape.beam).unsqueeze(1)).view({-1});
      const at::Tensor token = candidates.defined()
                                   ? candidates.index_select(0, rows).gather(
                                         1, at::randint(shape.scored, {n, 1}, at::kLong))
                                   : at::randint(3, shape.vocab, {n, 1}, at::kLong);
      const at::Tensor kept = hyp * shape.vocab + token.view({shape.batch, shape.beam});
      cpu.permute(kept);
      cuda.permute(kept.to(gpu));
      last = token.view({-1});
    }
  }
#else
  WARN("built without CUDA: skipped");
#endif
}

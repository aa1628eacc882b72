// lib/decode/decode_benchmark.cpp
// "s2s-step": joint CTC/attention beam search (beam 10, ctc_weight 0.4) over a random encoder
// output (T 250, V 5000) with small random Transformer and Mamba decoders, before/after caching.
#include "decode/decode_benchmark.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>

#include "decode/model_scorers.h"
#include "decode/s2s_beam_search.h"
#include "models/transformer_asr.h"
#include "runtime/benchmark.h"

namespace masr::decode {
namespace {

constexpr int64_t kFrames = 250, kVocab = 5000, kBeam = 10, kSteps = 10, kDim = 256;

models::TransformerASR random_model(const std::string& decoder) {
  models::TransformerASRConfig c;
  c.tgt_vocab = kVocab;
  c.input_size = 80;
  c.d_model = kDim;
  c.nhead = 4;
  c.num_encoder_layers = 1;
  c.num_decoder_layers = 6;
  c.d_ffn = 1024;
  c.normalize_before = true;
  c.decoder_module = decoder;
  models::TransformerASR model(c);
  model->eval();
  return model;
}

std::vector<runtime::BenchResult> run_s2s_step(const runtime::BenchSettings& settings) {
  std::vector<runtime::BenchResult> results;
  for (const std::string decoder : {"transformer", "mamba"}) {
    torch::manual_seed(0);
    auto model = random_model(decoder);
    torch::nn::Linear head(kDim, kVocab);
    const OutputHead out = [head](const at::Tensor& x) mutable { return head->forward(x); };
    const at::Tensor memory = torch::randn({1, kFrames, kDim});
    const at::Tensor lengths = torch::full({1}, kFrames, torch::kLong);
    const at::Tensor ctc = torch::log_softmax(torch::randn({1, kFrames, kVocab}) * 3, -1);
    for (bool cached : {false, true}) {
      for (bool partial : {false, true}) {
        S2SBeamSearchOptions o;
        o.beam_size = kBeam;
        o.ctc_pre_beam = partial ? 1.5 : 0.0;
        // eos blocked until the last step: exactly kSteps steps per search.
        o.min_decode_ratio = o.max_decode_ratio = static_cast<double>(kSteps) / kFrames;
        runtime::BenchSettings s = settings;
        if (!partial) {  // full-vocabulary CTC costs about a second per step
          s.warmup = std::min(s.warmup, 1);
          s.repeat = std::min(s.repeat, 3);
        }
        const std::string name = decoder + (cached ? "/cached" : "/recompute") +
                                 (partial ? "/ctc-pre-beam" : "/ctc-full");
        auto r = runtime::measure(name, s, [&] {
          c10::InferenceMode inference;
          std::unique_ptr<SequenceScorer> scorer;
          if (cached) {
            scorer = incremental_asr_decoder(model, out, memory, lengths);
          } else {
            scorer = std::make_unique<AsrDecoderScorer>(transformer_asr_decoder(model, out), memory,
                                                        lengths);
          }
          (void)S2SBeamSearch(o).search(kFrames, lengths, scorer.get(), ctc, nullptr);
        });
        r.work = kSteps;
        r.work_unit = "steps";
        r.note = "6-layer d" + std::to_string(kDim) + " random decoder, T " +
                 std::to_string(kFrames) + ", V " + std::to_string(kVocab) + ", beam " +
                 std::to_string(kBeam) + ", " + std::to_string(at::get_num_threads()) +
                 " threads; ms per step = 1000 / rate";
        results.push_back(std::move(r));
      }
    }
  }
  return results;
}

}  // namespace

void register_decode_benchmarks() {
  runtime::register_benchmark(
      {"s2s-step",
       "S2S beam search (beam 10, ctc_weight 0.4, 10 steps) over a random T 250 x V 5000 "
       "encoder output, 6-layer d256 random Transformer and Mamba decoders: decoder recomputed "
       "over the prefix or stepped with caches, CTC scored on the full vocabulary or a 1.5 x "
       "beam pre-beam",
       run_s2s_step});
}

}  // namespace masr::decode

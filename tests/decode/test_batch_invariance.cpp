// tests/decode/test_batch_invariance.cpp
// An utterance decodes the same whatever shares its batch: the encoder lengths, CTC
// log-probabilities and decoder log-probabilities of a mixed-length set at batch sizes 3 and 8
// equal those of each utterance decoded alone (CPU, float32, random-weight models of each encoder
// type: ConMamba CTC, ConMamba S2S, Conformer S2S, and the causal ConMamba: unidirectional Mamba
// and causal depthwise convolutions, the Transformer's `causal: True`).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "../models/repo_hparams.h"
#include "decode/asr_model_recognizer.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "models/transformer_asr.h"
#include "toolkit/registration.h"

namespace {

using masr::decode::AsrModelRecognizer;
using masr::models::AsrModel;

struct Decoded {
  at::Tensor ctc;  // (T', V) valid frames
  at::Tensor seq;  // (U, V) for a fixed prefix (S2S)
};

// wavs decoded in batches of `batch` (zero padding and float32 relative lengths, as
// decode::decode_batch makes them).
std::vector<Decoded> decode_in_batches(AsrModel& model, const std::vector<at::Tensor>& wavs,
                                       size_t batch) {
  std::vector<std::string> pieces(static_cast<size_t>(model.vocab_size()), "x");
  AsrModelRecognizer recognizer(std::shared_ptr<AsrModel>(&model, [](AsrModel*) {}), pieces);
  torch::NoGradGuard no_grad;
  std::vector<Decoded> out;
  for (size_t start = 0; start < wavs.size(); start += batch) {
    const size_t n = std::min(batch, wavs.size() - start);
    int64_t longest = 0;
    for (size_t i = 0; i < n; ++i) longest = std::max(longest, wavs[start + i].size(0));
    at::Tensor padded = torch::zeros({static_cast<int64_t>(n), longest});
    at::Tensor rel = torch::empty({static_cast<int64_t>(n)});
    for (size_t i = 0; i < n; ++i) {
      const at::Tensor& w = wavs[start + i];
      padded[static_cast<int64_t>(i)].narrow(0, 0, w.size(0)).copy_(w);
      rel[static_cast<int64_t>(i)] =
          static_cast<float>(static_cast<double>(w.size(0)) / static_cast<double>(longest));
    }
    const auto [enc, lens] = recognizer.encode(padded, rel);
    const at::Tensor ctc = recognizer.ctc_log_probs(enc);
    at::Tensor seq;
    if (recognizer.has_decoder()) {
      const at::Tensor prefix = torch::tensor({1, 5, 9, 3}, torch::kLong)
                                    .unsqueeze(0)
                                    .expand({static_cast<int64_t>(n), 4});
      seq = recognizer.decoder_log_probs(enc, lens, prefix.contiguous());
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t b = static_cast<int64_t>(i);
      Decoded d;
      d.ctc = ctc[b].narrow(0, 0, lens[b].item<int64_t>()).clone();
      if (seq.defined()) d.seq = seq[b].clone();
      out.push_back(d);
    }
  }
  return out;
}

masr::hparams::Hparams load_hparams(const std::string& file,
                                    const masr::hparams::LoadOptions& options, bool causal) {
  return masr::test::load_repo_hparams(file, options, causal);
}

}  // namespace

TEST_CASE("decoding is batch-invariant for every encoder type", "[decode]") {
  masr::toolkit::register_all();
  struct Case {
    const char* file;
    std::vector<std::pair<std::string, std::string>> overrides;
    bool causal = false;
  };
  const std::vector<Case> cases = {
      {"hparams/CTC/conmamba_tiny.yaml", {}},
      {"hparams/S2S/conmamba_tiny.yaml", {}},
      {"hparams/S2S/conformer_small.yaml",
       {{"d_model", "48"},
        {"num_encoder_layers", "2"},
        {"num_decoder_layers", "1"},
        {"d_ffn", "96"},
        {"output_neurons", "40"}}},
      {"hparams/CTC/conmamba_tiny.yaml", {}, true},
      {"hparams/S2S/conmamba_tiny.yaml", {}, true},
  };
  // Eight utterances of different lengths, none a multiple of the 160-sample hop.
  torch::manual_seed(5);
  std::vector<at::Tensor> wavs;
  for (int64_t n : {11213, 27001, 16555, 40007, 8123, 33333, 21011, 12345}) {
    wavs.push_back(torch::randn({n}) * 0.1);
  }
  for (const Case& c : cases) {
    masr::hparams::LoadOptions options;
    options.overrides = c.overrides;
    options.placeholder_value = "unused";
    const auto hp = load_hparams(c.file, options, c.causal);
    auto model = AsrModel::from_hparams(hp);
    INFO(c.file << (c.causal ? " (causal)" : ""));
    REQUIRE(model->transformer().config().causal == c.causal);
    {
      torch::NoGradGuard no_grad;  // global statistics from one batch, then evaluation
      (void)model->features(torch::randn({2, 16000}) * 0.1, {}, 1, /*update_norm=*/true);
    }
    model->eval();
    const auto alone = decode_in_batches(*model, wavs, 1);
    for (size_t batch : {3, 8}) {
      const auto together = decode_in_batches(*model, wavs, batch);
      double worst = 0.0;
      for (size_t i = 0; i < wavs.size(); ++i) {
        INFO("batch " << batch << ", utterance " << i);
        REQUIRE(together[i].ctc.sizes() == alone[i].ctc.sizes());
        worst = std::max(worst, (together[i].ctc - alone[i].ctc).abs().max().item<double>());
        if (alone[i].seq.defined()) {
          worst = std::max(worst, (together[i].seq - alone[i].seq).abs().max().item<double>());
        }
      }
      INFO("batch " << batch << ": largest difference " << worst);
      CHECK(worst < 1e-4);
    }
  }
}

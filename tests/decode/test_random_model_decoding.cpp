// tests/decode/test_random_model_decoding.cpp
// A model built from hparams with random weights and no tokenizer decodes through the S2S path
// (what `bench s2s-decode-rtf` times): the recognizer takes explicit pieces, checks their count
// against the vocabulary and detokenizes by joining them.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "core/error.h"
#include "decode/asr_model_recognizer.h"
#include "decode/batch_decoder.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "toolkit/registration.h"
#include "toolkit/step_bench.h"

TEST_CASE("a random S2S model without a tokenizer decodes with explicit pieces", "[decode]") {
  masr::toolkit::register_all();
  masr::hparams::LoadOptions options;
  options.placeholder_value = "unused";
  const auto model = masr::models::AsrModel::from_hparams(masr::hparams::load_file(
      std::string(MASR_SOURCE_DIR) + "/hparams/S2S/conmamba_tiny.yaml", options));
  REQUIRE(model->is_s2s());
  REQUIRE_FALSE(model->tokenizer());
  masr::toolkit::prime_for_evaluation(*model, model->fbank().config().sample_rate);

  CHECK_THROWS_WITH(masr::decode::AsrModelRecognizer(model), Catch::Contains("has no tokenizer"));
  CHECK_THROWS_WITH(masr::decode::AsrModelRecognizer(model, {"a", "b"}),
                    Catch::Contains("2 token pieces for a model with " +
                                    std::to_string(model->vocab_size()) + " outputs"));
  std::vector<std::string> pieces;
  for (int64_t id = 0; id < model->vocab_size(); ++id)
    pieces.push_back("<" + std::to_string(id) + ">");
  masr::decode::AsrModelRecognizer recognizer(model, pieces);
  CHECK(recognizer.detokenize({3, 17, 3}) == "<3><17><3>");

  masr::decode::DecodeConfig config;
  config.search = masr::decode::Search::kS2S;
  config.s2s.beam_size = 3;
  masr::decode::use_model_token_ids(config, *model);
  // Held to 4 steps per audio second, as the benchmark does.
  config.s2s.min_decode_ratio = config.s2s.max_decode_ratio = 4.0 * recognizer.frame_seconds();
  torch::manual_seed(1);
  std::vector<std::vector<float>> audio;
  for (const int64_t samples : {16000, 9000}) {
    const at::Tensor wav = (torch::randn({samples}) * 0.1).contiguous();
    audio.emplace_back(wav.data_ptr<float>(), wav.data_ptr<float>() + samples);
  }
  const auto transcripts = masr::decode::decode_batch(recognizer, {&audio[0], &audio[1]}, config);
  REQUIRE(transcripts.size() == 2);
  for (const auto& t : transcripts) {
    REQUIRE_FALSE(t.tokens.empty());
    CHECK(t.tokens.size() <= 4);  // at most 4 steps for one second of audio
    std::string joined;
    for (const int64_t id : t.tokens) joined += pieces.at(static_cast<size_t>(id));
    CHECK(t.text == joined);
  }
}

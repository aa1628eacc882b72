// tests/models/test_param_counts.cpp
// Parameter counts of the shipped architectures, built as hparams files build them: the
// `model` ModuleList [CNN, Transformer, seq_lin, ctc_lin] (no seq_lin for CTC), and the LM.
// Expected values: the analytic counts of the Mamba-ASR reference (§2.7), which match the paper.
#include <catch2/catch.hpp>

#include "models/transformer_asr.h"
#include "models/transformer_lm.h"
#include "nn/conv_frontend.h"
#include "nn/wrappers.h"

namespace {

using masr::models::TransformerASRConfig;

TransformerASRConfig recipe(const std::string& encoder, const std::string& decoder, int64_t d,
                            int64_t nhead, int64_t enc_layers, int64_t dec_layers, int64_t d_ffn,
                            int64_t vocab) {
  TransformerASRConfig c;
  c.tgt_vocab = vocab;
  c.input_size = 640;
  c.d_model = d;
  c.nhead = nhead;
  c.num_encoder_layers = enc_layers;
  c.num_decoder_layers = dec_layers;
  c.d_ffn = d_ffn;
  c.activation = masr::nn::Activation::kGelu;
  c.encoder_module = encoder;
  c.decoder_module = decoder;
  c.attention_type = "RelPosMHAXL";
  c.normalize_before = true;
  c.causal = false;
  return c;
}

// CNN (ConvolutionFrontEnd of every recipe) + TransformerASR + ctc_lin (+ seq_lin).
int64_t model_count(const TransformerASRConfig& c) {
  masr::nn::ConvolutionFrontEnd cnn{masr::nn::ConvFrontEndConfig{}};
  masr::models::TransformerASR asr(c);
  const int64_t head = c.d_model * c.tgt_vocab + c.tgt_vocab;
  return masr::nn::count_parameters(*cnn) + masr::nn::count_parameters(*asr) + head +
         (c.num_decoder_layers > 0 ? head : 0);
}

}  // namespace

TEST_CASE("the CNN front end has 25,504 parameters", "[models]") {
  masr::nn::ConvolutionFrontEnd cnn{masr::nn::ConvFrontEndConfig{}};
  // conv 1->64 (3x3) 640, LN (40, 64) 5,120, conv 64->32 18,464, LN (20, 32) 1,280.
  CHECK(masr::nn::count_parameters(*cnn) == 25504);
  CHECK(cnn->output_size() == 640);
}

TEST_CASE("one BiMamba v2 block at d 512 has 1,816,576 parameters", "[models]") {
  masr::nn::Mamba bi(512, masr::nn::MambaConfig{}, true);
  CHECK(masr::nn::count_parameters(*bi) == 1816576);
  masr::nn::Mamba uni(512, masr::nn::MambaConfig{}, false);
  CHECK(masr::nn::count_parameters(*uni) == 1816576 - 121856);  // one direction's own weights
}

TEST_CASE("ConMamba small models have the reference parameter counts", "[models]") {
  auto s2s = recipe("conmamba", "transformer", 144, 4, 12, 4, 1024, 5000);
  CHECK(model_count(s2s) == 14075520);
  auto mamba_dec = recipe("conmamba", "mamba", 144, 4, 12, 4, 1024, 5000);
  CHECK(model_count(mamba_dec) == 14570880);
}

TEST_CASE("ConMamba CTC has 31,555,519 parameters", "[models]") {
  CHECK(model_count(recipe("conmamba", "transformer", 256, 4, 18, 0, 1024, 31)) == 31555519);
}

TEST_CASE("ConMamba large models have the reference parameter counts", "[models]") {
  CHECK(model_count(recipe("conmamba", "transformer", 512, 8, 12, 6, 2048, 5000)) == 115187888);
  CHECK(model_count(recipe("conmamba", "mamba", 512, 8, 12, 6, 2048, 5000)) == 122917040);
}

TEST_CASE("Conformer models have the reference parameter counts", "[models]") {
  // Reference: 109.14 M / 13.33 M / 28.79 M (RelPosMHAXL: in_proj without bias, no value bias,
  // linear_pos without bias, pos_bias_u/v).
  const int64_t large = model_count(recipe("conformer", "transformer", 512, 8, 12, 6, 2048, 5000));
  const int64_t small = model_count(recipe("conformer", "transformer", 144, 4, 12, 4, 1024, 5000));
  const int64_t ctc = model_count(recipe("conformer", "transformer", 256, 4, 18, 0, 1024, 31));
  CHECK(large == 109136048);
  CHECK(small == 13327296);
  CHECK(ctc == 28786111);
  CHECK(std::llround(large / 1e4) == 10914);
  CHECK(std::llround(small / 1e4) == 1333);
  CHECK(std::llround(ctc / 1e4) == 2879);
}

TEST_CASE("the LibriSpeech TransformerLM has 93,333,128 parameters", "[models]") {
  masr::models::TransformerLMConfig c;
  c.vocab = 5000;
  c.d_model = 768;
  c.nhead = 12;
  c.num_encoder_layers = 12;
  c.d_ffn = 3072;
  c.dropout = 0.0;
  c.activation = masr::nn::Activation::kGelu;
  masr::models::TransformerLM lm(c);
  CHECK(masr::nn::count_parameters(*lm) == 93333128);
}

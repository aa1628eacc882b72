// tests/models/test_asr_forward.cpp
// Forward passes of the ASR models at tiny sizes: output shapes, independence from batch padding,
// causality, and error messages for bad configurations.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "models/conmamba_encoder.h"
#include "models/transformer_asr.h"
#include "models/transformer_lm.h"
#include "nn/attention.h"
#include "nn/conv_frontend.h"

namespace {

using masr::models::TransformerASR;
using masr::models::TransformerASRConfig;

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

TransformerASRConfig tiny(const std::string& encoder, const std::string& decoder) {
  TransformerASRConfig c;
  c.tgt_vocab = 11;
  c.input_size = 640;
  c.d_model = 32;
  c.nhead = 4;
  c.num_encoder_layers = 2;
  c.num_decoder_layers = 2;
  c.d_ffn = 64;
  c.kernel_size = 7;
  c.activation = masr::nn::Activation::kGelu;
  c.encoder_module = encoder;
  c.decoder_module = decoder;
  c.attention_type = "RelPosMHAXL";
  c.normalize_before = true;
  c.causal = false;
  return c;
}

// The encoder (and decoder) output of utterance b in a padded batch vs. the utterance alone.
void check_padding_independence(TransformerASR& asr, bool with_decoder) {
  asr->eval();
  torch::manual_seed(11);
  const at::Tensor src = torch::randn({3, 12, 640});
  const at::Tensor lengths = torch::tensor({12, 8, 5}, torch::kLong);
  const at::Tensor tokens = torch::randint(1, 11, {3, 4}, torch::kLong);
  const auto [enc, dec] = asr->forward(src, with_decoder ? tokens : at::Tensor(), lengths);
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t len = lengths[b].item<int64_t>();
    const auto [enc1, dec1] = asr->forward(src.slice(0, b, b + 1).slice(1, 0, len),
                                           with_decoder ? tokens.slice(0, b, b + 1) : at::Tensor());
    INFO("utterance " << b);
    CHECK(rel_diff(enc.slice(0, b, b + 1).slice(1, 0, len), enc1) <= 1e-5);
    if (with_decoder) CHECK(rel_diff(dec.slice(0, b, b + 1), dec1) <= 1e-5);
  }
}

}  // namespace

TEST_CASE("the CNN front end maps (B, T, 80) to (B, T'', 20, 32) at 4x fewer frames", "[models]") {
  masr::nn::ConvolutionFrontEnd cnn{masr::nn::ConvFrontEndConfig{}};
  const at::Tensor out = cnn->forward(torch::randn({2, 50, 80}));
  CHECK(out.sizes() == torch::IntArrayRef({2, 13, 20, 32}));
  const at::Tensor lens = cnn->output_lengths(torch::tensor({50, 49, 1}, torch::kLong));
  CHECK(lens[0].item<int64_t>() == 13);  // 50 -> 25 -> 13
  CHECK(lens[1].item<int64_t>() == 13);  // 49 -> 25 -> 13
  CHECK(lens[2].item<int64_t>() == 1);
  CHECK_THROWS_WITH(cnn->forward(torch::randn({2, 50, 40})),
                    Catch::Contains("expected features (batch, time, 80)"));
}

TEST_CASE("every encoder/decoder combination gives (B, T, d) and (B, U, d)", "[models]") {
  torch::manual_seed(5);
  for (const auto& [encoder, decoder] :
       std::vector<std::pair<std::string, std::string>>{{"conmamba", "transformer"},
                                                        {"conmamba", "mamba"},
                                                        {"conformer", "transformer"},
                                                        {"transformer", "transformer"}}) {
    INFO(encoder << " + " << decoder);
    TransformerASR asr(tiny(encoder, decoder));
    const auto [enc, dec] =
        asr->forward(torch::randn({2, 13, 20, 32}), torch::randint(1, 11, {2, 5}, torch::kLong));
    CHECK(enc.sizes() == torch::IntArrayRef({2, 13, 32}));
    CHECK(dec.sizes() == torch::IntArrayRef({2, 5, 32}));
    CHECK(torch::isfinite(dec).all().item<bool>());
  }
}

TEST_CASE("a CTC model has no decoder and rejects decode()", "[models]") {
  auto c = tiny("conmamba", "transformer");
  c.num_decoder_layers = 0;
  TransformerASR asr(c);
  CHECK_FALSE(asr->has_decoder());
  const auto [enc, dec] = asr->forward(torch::randn({1, 7, 640}), at::Tensor());
  CHECK(enc.sizes() == torch::IntArrayRef({1, 7, 32}));
  CHECK_FALSE(dec.defined());
  CHECK_THROWS_WITH(asr->decode(torch::ones({1, 2}, torch::kLong), enc),
                    Catch::Contains("has no decoder"));
}

TEST_CASE("ConMamba encoder: a padded batch equals each utterance alone", "[models]") {
  TransformerASR bidirectional(tiny("conmamba", "transformer"));
  check_padding_independence(bidirectional, true);
  auto causal = tiny("conmamba", "mamba");
  causal.causal = true;
  TransformerASR unidirectional(causal);
  check_padding_independence(unidirectional, true);
}

TEST_CASE("Conformer encoder: a padded batch equals each utterance alone", "[models]") {
  TransformerASR conformer(tiny("conformer", "transformer"));
  check_padding_independence(conformer, true);
}

TEST_CASE("the causal ConMamba encoder never looks ahead", "[models]") {
  auto c = tiny("conmamba", "transformer");
  c.causal = true;
  TransformerASR asr(c);
  asr->eval();
  const at::Tensor src = torch::randn({1, 10, 640});
  at::Tensor changed = src.clone();
  changed.slice(1, 6).normal_();
  const at::Tensor a = asr->encode(src), b = asr->encode(changed);
  CHECK(rel_diff(a.slice(1, 0, 6), b.slice(1, 0, 6)) <= 1e-6);
  CHECK(rel_diff(a.slice(1, 6), b.slice(1, 6)) > 1e-3);
}

TEST_CASE("TransformerASR applies xavier_normal_ to every matrix, Mamba's A_log included",
          "[models]") {
  TransformerASR asr(tiny("conmamba", "mamba"));
  auto layer = asr->named_parameters()["encoder.layers.0.mamba.A_log"];
  REQUIRE(layer.defined());
  // S4D-real would give log(1..16) in every row; xavier_normal gives small values of both signs.
  CHECK(layer.min().item<double>() < 0.0);
  CHECK(layer.abs().max().item<double>() < 1.5);
  for (const char* key :
       {"custom_src_module.layers.0.w.weight", "custom_tgt_module.layers.0.emb.Embedding.weight",
        "encoder.layers.1.mamba.conv1d_b.weight", "encoder.norm.norm.weight",
        "decoder.layers.0.cross_mamba.dt_proj.bias", "decoder.norm.norm.bias",
        "encoder.layers.0.ffn_module1.1.ffn.3.weight",
        "encoder.layers.0.convolution_module.after_conv.2.weight"}) {
    INFO(key);
    CHECK(asr->named_parameters().contains(key));
  }
  CHECK(asr->named_buffers().contains("positional_encoding_decoder.pe"));
}

TEST_CASE("TransformerLM gives causal logits over the vocabulary", "[models]") {
  masr::models::TransformerLMConfig c;
  c.vocab = 13;
  c.d_model = 32;
  c.nhead = 4;
  c.num_encoder_layers = 2;
  c.d_ffn = 64;
  c.dropout = 0.0;
  masr::models::TransformerLM lm(c);
  lm->eval();
  at::Tensor tokens = torch::tensor({{1, 5, 7, 3, 9}}, torch::kLong);
  const at::Tensor a = lm->forward(tokens);
  CHECK(a.sizes() == torch::IntArrayRef({1, 5, 13}));
  tokens[0][4] = 4;
  const at::Tensor b = lm->forward(tokens);
  CHECK(rel_diff(a.slice(1, 0, 4), b.slice(1, 0, 4)) <= 1e-6);
  CHECK(rel_diff(a.slice(1, 4), b.slice(1, 4)) > 1e-4);
  CHECK(lm->named_parameters().contains("output_proj.layers.1.norm.weight"));
}

TEST_CASE("RelPosEncXL: relative positions T-1 .. -(T-1), sines shared by past and future",
          "[models]") {
  const at::Tensor pe = masr::nn::relative_positional_encoding(3, 4, torch::kFloat);
  REQUIRE(pe.sizes() == torch::IntArrayRef({1, 5, 4}));
  // Row 2 is position 0: sin 0 = 0, cos 0 = 1. Rows 0 and 4 are positions +2 and -2.
  CHECK(pe[0][2][0].item<double>() == Approx(0.0).margin(1e-7));
  CHECK(pe[0][2][1].item<double>() == Approx(1.0));
  CHECK(pe[0][0][0].item<double>() == Approx(std::sin(2.0)));
  CHECK(pe[0][4][0].item<double>() == Approx(std::sin(2.0)));
  CHECK(pe[0][4][1].item<double>() == Approx(std::cos(2.0)));
  CHECK(pe[0][0][2].item<double>() == Approx(std::sin(2.0 / 100.0)));
}

TEST_CASE("bad model configurations name the setting at fault", "[models]") {
  auto c = tiny("hyperconformer", "transformer");  // no such encoder (the Branchformer is one now)
  CHECK_THROWS_WITH(TransformerASR(c), Catch::Contains("encoder_module 'hyperconformer'"));
  c = tiny("conmamba", "rnn");
  CHECK_THROWS_WITH(TransformerASR(c), Catch::Contains("decoder_module 'rnn'"));
  c = tiny("conformer", "transformer");
  c.nhead = 5;
  CHECK_THROWS_WITH(TransformerASR(c), Catch::Contains("divisible by nhead 5"));
  c = tiny("conformer", "transformer");
  c.normalize_before = false;
  CHECK_THROWS_WITH(TransformerASR(c), Catch::Contains("normalize_before must be True"));
  c = tiny("conmamba", "transformer");
  c.attention_type = "hypermix";
  CHECK_THROWS_WITH(TransformerASR(c), Catch::Contains("attention_type 'hypermix'"));
  CHECK_THROWS_WITH(masr::nn::activation_from_name("torch.nn.Tanh", "Transformer"),
                    Catch::Contains("activation 'torch.nn.Tanh' is not supported"));
  masr::nn::PositionalEncoding pe(8, 4);
  CHECK_THROWS_WITH(pe->forward(torch::zeros({1, 5, 8})),
                    Catch::Contains("longer than max_length 4"));
}

TEST_CASE("both decoders are causal over the target tokens", "[models]") {
  for (const char* decoder : {"transformer", "mamba"}) {
    INFO(decoder);
    TransformerASR asr(tiny("conmamba", decoder));
    asr->eval();
    const at::Tensor enc = asr->encode(torch::randn({1, 9, 640}));
    at::Tensor tokens = torch::tensor({{1, 4, 6, 8, 3}}, torch::kLong);
    const at::Tensor a = asr->decode(tokens, enc);
    tokens[0][3] = 9;
    const at::Tensor b = asr->decode(tokens, enc);
    CHECK(rel_diff(a.slice(1, 0, 3), b.slice(1, 0, 3)) <= 1e-6);
    CHECK(rel_diff(a.slice(1, 3), b.slice(1, 3)) > 1e-4);
  }
}

// tests/models/test_model_builders.cpp
// The hparams builders of the model classes: objects, summaries and error messages.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "hparams/hparams.h"
#include "models/module_object.h"
#include "models/transformer_asr.h"
#include "toolkit/registration.h"

namespace {

masr::hparams::Hparams load(const std::string& text) {
  masr::toolkit::register_all();
  return masr::hparams::load_text(text, {}, "test.yaml");
}

const char* kTinyAsr = R"(
mamba_config: {d_state: 8, expand: 2, d_conv: 4, bidirectional: True}
CNN: !new:speechbrain.lobes.models.convolution.ConvolutionFrontEnd
    input_shape: (8, 10, 80)
    num_blocks: 2
    num_layers_per_block: 1
    out_channels: (64, 32)
    kernel_sizes: (3, 3)
    strides: (2, 2)
    residuals: (False, False)
Transformer: !new:modules.TransformerASR.TransformerASR
    input_size: 640
    tgt_vocab: 10
    d_model: 32
    nhead: 4
    num_encoder_layers: 1
    num_decoder_layers: 1
    d_ffn: 64
    activation: !name:torch.nn.GELU
    encoder_module: conmamba
    decoder_module: mamba
    attention_type: RelPosMHAXL
    normalize_before: True
    causal: False
    mamba_config: !ref <mamba_config>
ctc_lin: !new:speechbrain.nnet.linear.Linear
    input_size: 32
    n_neurons: 10
model: !new:torch.nn.ModuleList
    - [!ref <CNN>, !ref <Transformer>, !ref <ctc_lin>]
)";

std::string summary(const masr::hparams::Hparams& hp, const std::string& key) {
  return hp[key].instance()->object->summary();
}

}  // namespace

TEST_CASE("hparams build a TransformerASR whose ModuleList counts every member", "[models]") {
  const auto hp = load(kTinyAsr);
  CHECK(summary(hp, "ctc_lin") == "330 parameters");
  CHECK(summary(hp, "CNN") == "25,504 parameters");
  auto asr = std::dynamic_pointer_cast<masr::models::TransformerASRImpl>(
      masr::models::module_of(hp["Transformer"]));
  REQUIRE(asr != nullptr);
  CHECK(asr->config().mamba.d_state == 8);
  CHECK(asr->config().decoder_module == "mamba");
  CHECK(asr->config().activation == masr::nn::Activation::kGelu);
  const int64_t total = masr::nn::count_parameters(*masr::models::module_of(hp["CNN"])) +
                        masr::nn::count_parameters(*asr) + 330;
  CHECK(summary(hp, "model") == masr::models::with_thousands(total) + " parameters");
}

TEST_CASE("a residual front-end block adds SpeechBrain's reduce_conv", "[models]") {
  std::string text = kTinyAsr;
  const std::string plain = "residuals: (False, False)";
  const auto at = text.find(plain);
  REQUIRE(at != std::string::npos);
  const auto cnn_of = [](const masr::hparams::Hparams& hp) {
    return masr::models::module_of(hp["CNN"]);
  };
  const auto plain_cnn = cnn_of(load(text));
  const auto residual_cnn = cnn_of(load(text.replace(at, plain.size(), "residuals: (True, False)")));
  // Block 0 only: a 1x1 Conv2d 1 -> 64 with bias (128) and a LayerNorm over (40 bins, 64
  // channels) after the stride-2 block (2 x 2560).
  CHECK(masr::nn::count_parameters(*residual_cnn) ==
        masr::nn::count_parameters(*plain_cnn) + 128 + 5120);
  const auto params = residual_cnn->named_parameters();
  CHECK(params.contains("convblock_0.reduce_conv.conv.conv.weight"));
  CHECK(params.contains("convblock_0.reduce_conv.norm.norm.bias"));
  CHECK_FALSE(params.contains("convblock_1.reduce_conv.conv.conv.weight"));
}

TEST_CASE("model builders reject unsupported arguments with the file and key", "[models]") {
  std::string text = kTinyAsr;
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  CHECK_THROWS_WITH(load(replaced("d_conv: 4,", "d_conv: 4, foo: 1,")),
                    Catch::Contains("mamba_config has the unknown key 'foo'"));
  CHECK_THROWS_WITH(load(replaced("    mamba_config: !ref <mamba_config>\n", "")),
                    Catch::Contains("needs mamba_config for the conmamba encoder"));
  CHECK_THROWS_WITH(load(replaced("activation: !name:torch.nn.GELU", "activation: gelu")),
                    Catch::Contains("must be an activation class"));
  CHECK_THROWS_WITH(load(replaced("!ref <ctc_lin>]", "3]")),
                    Catch::Contains("must be a module built with !new:"));
  CHECK_THROWS_WITH(load(replaced("encoder_module: conmamba", "encoder_module: lstm")),
                    Catch::Contains("key 'Transformer'") &&
                        Catch::Contains("encoder_module 'lstm' is not supported"));
}

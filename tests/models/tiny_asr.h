// tests/models/tiny_asr.h
// hparams text of a tiny ConMamba ASR model (CTC or S2S) for the AsrModel and checkpoint tests.
#pragma once

#include <memory>
#include <string>

#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "toolkit/registration.h"

namespace masr::testing {

// A tiny S2S ConMamba (1 encoder and 1 decoder layer, d 32) with a 31-piece vocabulary.
inline std::string tiny_yaml(int decoder_layers, int d_model = 32) {
  const std::string d = std::to_string(d_model);
  std::string yaml = R"(
seed: 7
__set_seed: !apply:torch.manual_seed [!ref <seed>]
bos_index: 1
eos_index: 2
mamba_config: {d_state: 8, expand: 2, d_conv: 4, bidirectional: True}
compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: 80
normalize: !new:speechbrain.processing.features.InputNormalization
    norm_type: global
    update_until_epoch: 4
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
    tgt_vocab: 31
    d_model: D
    nhead: 4
    num_encoder_layers: 1
    num_decoder_layers: DEC
    d_ffn: 64
    activation: !name:torch.nn.GELU
    encoder_module: conmamba
    decoder_module: transformer
    attention_type: RelPosMHAXL
    normalize_before: True
    causal: False
    mamba_config: !ref <mamba_config>
ctc_lin: !new:speechbrain.nnet.linear.Linear
    input_size: D
    n_neurons: 31
seq_lin: !new:speechbrain.nnet.linear.Linear
    input_size: D
    n_neurons: 31
)";
  for (size_t at; (at = yaml.find("DEC")) != std::string::npos;)
    yaml.replace(at, 3, std::to_string(decoder_layers));
  for (size_t at; (at = yaml.find(": D\n")) != std::string::npos;) yaml.replace(at + 2, 1, d);
  return yaml;
}

inline std::shared_ptr<models::AsrModel> build(const std::string& yaml, uint64_t seed = 7) {
  masr::toolkit::register_all();
  std::string text = yaml;
  text.replace(text.find("seed: 7"), 7, "seed: " + std::to_string(seed));
  return models::AsrModel::from_hparams(masr::hparams::load_text(text, {}, "tiny.yaml"));
}

}  // namespace masr::testing

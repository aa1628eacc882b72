// lib/models/int8_encoder.h
// int8 matrix products for decoding a ConMamba encoder on CPUs: swaps dynamic int8 layers
// (nn/quantized_linear.h) into the encoder's existing modules, so TransformerASR.encode and the
// layers' own forward passes run them. Quantized: both macaron feed-forwards (2 Linear each),
// Mamba's in_proj and out_proj, and the convolution module's pointwise Conv1d and Linear.
// Float32: the input projection (about 3 % of the products), LayerNorms, depthwise convs, the
// selective scan with its x_proj and dt_proj (small, and their input would need a transposed
// copy), the front end, the CTC head and any decoder.
#pragma once

#include <cstdint>
#include <string>

namespace masr::models {

struct TransformerASRImpl;

struct Int8Summary {
  int64_t layers = 0;   // Linear layers now int8
  int64_t weights = 0;  // their weights
  std::string engine;   // nn::Int8Engine::name
  // e.g. "40 Linear layers (4.43 M weights) int8 per output channel, onednn"
  std::string str() const;
};

// Quantizes `transformer`'s encoder in place: the modules keep their float parameters (same
// names and counts) and gain the packed int8 copies, which their forward passes then use.
// Evaluation mode, CPU, once per model, before it is shared across threads. Config errors: an
// encoder other than ConMamba (naming it), parameters not on the CPU, a model in training mode,
// no quantized engine in this LibTorch.
Int8Summary quantize_encoder_int8(TransformerASRImpl& transformer);

}  // namespace masr::models

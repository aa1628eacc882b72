// lib/nn/macaron_layer.cpp
// The macaron frame's modules.
#include "nn/macaron_layer.h"

#include "nn/feed_forward.h"

namespace masr::nn {

void MacaronLayerBase::register_macaron(int64_t d_model, int64_t d_ffn, int64_t kernel_size,
                                        bool bias, Activation activation, double dropout,
                                        bool causal) {
  convolution_module =
      register_module("convolution_module",
                      ConvolutionModule(d_model, kernel_size, bias, activation, dropout, causal));
  ffn_module1 =
      register_module("ffn_module1", make_macaron_ffn(d_model, d_ffn, dropout, activation));
  ffn_module2 =
      register_module("ffn_module2", make_macaron_ffn(d_model, d_ffn, dropout, activation));
  norm1 = register_module("norm1", SbLayerNorm(d_model, 1e-5));
  norm2 = register_module("norm2", SbLayerNorm(d_model, 1e-5));
}

}  // namespace masr::nn

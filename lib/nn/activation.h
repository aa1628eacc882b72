// lib/nn/activation.h
// The activations hparams files name (`!name:torch.nn.GELU`, Swish, ReLU, LeakyReLU), as an enum
// that layers turn into a module, so a Sequential keeps SpeechBrain's child indices.
#pragma once

#include <string>

#include <torch/torch.h>

namespace masr::nn {

enum class Activation { kGelu, kSwish, kRelu, kLeakyRelu };

// Maps a registry name ("torch.nn.GELU", "speechbrain.nnet.activations.Swish", ...) to the enum;
// throws a config error naming `context` for anything else.
Activation activation_from_name(const std::string& name, const std::string& context);
const char* activation_name(Activation activation);

// A parameter-free module computing the activation (LeakyReLU with slope 0.01, torch's default).
torch::nn::AnyModule make_activation(Activation activation);
at::Tensor apply_activation(Activation activation, const at::Tensor& x);

}  // namespace masr::nn

// lib/nn/activation.cpp
// Activation names from hparams files and their modules.
#include "nn/activation.h"

#include "core/error.h"

namespace masr::nn {

Activation activation_from_name(const std::string& name, const std::string& context) {
  if (name == "torch.nn.GELU") return Activation::kGelu;
  if (name == "speechbrain.nnet.activations.Swish" || name == "torch.nn.SiLU") {
    return Activation::kSwish;
  }
  if (name == "torch.nn.ReLU") return Activation::kRelu;
  if (name == "torch.nn.LeakyReLU") return Activation::kLeakyRelu;
  throw_config_error(context + ": activation '" + name +
                     "' is not supported; expected torch.nn.GELU, torch.nn.ReLU, "
                     "torch.nn.LeakyReLU or speechbrain.nnet.activations.Swish");
}

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::kGelu:
      return "GELU";
    case Activation::kSwish:
      return "Swish";
    case Activation::kRelu:
      return "ReLU";
    case Activation::kLeakyRelu:
      return "LeakyReLU";
  }
  return "?";
}

torch::nn::AnyModule make_activation(Activation activation) {
  switch (activation) {
    case Activation::kGelu:
      return torch::nn::AnyModule(torch::nn::GELU());
    case Activation::kSwish:
      return torch::nn::AnyModule(torch::nn::SiLU());
    case Activation::kRelu:
      return torch::nn::AnyModule(torch::nn::ReLU());
    case Activation::kLeakyRelu:
      return torch::nn::AnyModule(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions()));
  }
  return torch::nn::AnyModule(torch::nn::Identity());
}

at::Tensor apply_activation(Activation activation, const at::Tensor& x) {
  switch (activation) {
    case Activation::kGelu:
      return torch::gelu(x);
    case Activation::kSwish:
      return torch::silu(x);
    case Activation::kRelu:
      return torch::relu(x);
    case Activation::kLeakyRelu:
      return torch::leaky_relu(x, 0.01);
  }
  return x;
}

}  // namespace masr::nn

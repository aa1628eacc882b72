// lib/models/registration.cpp
// Builders for the model classes of hparams files: ConvolutionFrontEnd, TransformerASR (ConMamba,
// Conformer, Transformer), TransformerLM, SpeechBrain's Linear and torch's ModuleList; and
// register_all_classes, every class an hparams file can name (all of them live at or below models).
#include "models/registration.h"

#include <ATen/Context.h>

#include "core/error.h"
#include "features/augment/registration.h"
#include "features/registration.h"
#include "models/module_object.h"
#include "models/transformer_asr.h"
#include "models/transformer_lm.h"
#include "nn/conv_frontend.h"
#include "nn/wrappers.h"
#include "text/tokenizer.h"

namespace masr::models {
namespace {

using hparams::Args;
using hparams::Value;

std::vector<int64_t> int_list(const Args& args, const std::string& name,
                              std::vector<int64_t> fallback) {
  const Value* v = args.find(name);
  if (v == nullptr) return fallback;
  std::vector<int64_t> out;
  for (const auto& item : v->items()) out.push_back(item.as_int());
  return out;
}

// `!name:torch.nn.GELU` arrives as a factory; its class name picks the activation.
nn::Activation activation_arg(const Args& args, const std::string& name, nn::Activation fallback) {
  const Value* v = args.find(name);
  if (v == nullptr || v->is_null()) return fallback;
  if (v->type() != Value::Type::kFactory) {
    throw_config_error("hparams: " + args.origin() + " argument '" + name +
                       "' must be an activation class (e.g. !name:torch.nn.GELU), got " +
                       v->describe());
  }
  return nn::activation_from_name(v->partial()->info->name,
                                  args.origin() + " argument '" + name + "'");
}

std::shared_ptr<hparams::Object> build_frontend(const Args& args) {
  nn::ConvFrontEndConfig c;
  const auto shape = int_list(args, "input_shape", {});
  if (shape.size() < 3) {
    throw_config_error("hparams: " + args.origin() +
                       " input_shape must be (batch, time, features)");
  }
  c.in_features = shape.back();
  const int64_t blocks = args.get_int("num_blocks", 3);
  c.num_layers_per_block = args.get_int("num_layers_per_block", 5);
  c.out_channels = int_list(args, "out_channels", {128, 256, 512});
  c.kernel_sizes = int_list(args, "kernel_sizes", {3, 3, 3});
  c.strides = int_list(args, "strides", {1, 2, 2});
  c.dilations = int_list(args, "dilations", std::vector<int64_t>(blocks, 1));
  for (auto* list : {&c.out_channels, &c.kernel_sizes, &c.strides, &c.dilations})
    list->resize(blocks, list->empty() ? 1 : list->back());
  // SpeechBrain's default is a residual connection in every block.
  const Value* residuals = args.find("residuals");
  if (residuals == nullptr || residuals->is_null()) {
    c.residuals.assign(blocks, true);
  } else {
    c.residuals.clear();  // ConvFrontEndConfig's default holds two entries
    for (const auto& r : residuals->items()) c.residuals.push_back(r.as_bool());
  }
  c.residuals.resize(blocks, c.residuals.empty() ? true : c.residuals.back());
  if (activation_arg(args, "activation", nn::Activation::kLeakyRelu) !=
      nn::Activation::kLeakyRelu) {
    throw_config_error("hparams: " + args.origin() +
                       " only torch.nn.LeakyReLU is supported as activation");
  }
  if (args.get_string("padding", "same") != "same") {
    throw_config_error("hparams: " + args.origin() + " only padding 'same' is supported");
  }
  c.dropout = args.get_double("dropout", 0.1);
  c.conv_bias = args.get_bool("conv_bias", true);
  return std::make_shared<ModuleObject>(std::make_shared<nn::ConvolutionFrontEndImpl>(c));
}

// mamba_config: {d_state, expand, d_conv, bidirectional} (a map value; copied, never mutated).
void read_mamba_config(const Args& args, TransformerASRConfig& c) {
  const Value* v = args.find("mamba_config");
  if (v == nullptr || v->is_null()) return;
  if (!v->is_map()) {
    throw_config_error("hparams: " + args.origin() + " mamba_config must be a mapping, got " +
                       v->describe());
  }
  for (const auto& [key, value] : v->entries()) {
    if (key == "d_state")
      c.mamba.d_state = value.as_int();
    else if (key == "expand")
      c.mamba.expand = value.as_int();
    else if (key == "d_conv")
      c.mamba.d_conv = value.as_int();
    else if (key == "dt_rank")
      c.mamba.dt_rank = value.is_number() ? value.as_int() : 0;
    else if (key == "conv_bias")
      c.mamba.conv_bias = value.as_bool();
    else if (key == "bias")
      c.mamba.bias = value.as_bool();
    else if (key == "bidirectional")
      c.bidirectional = value.as_bool();
    else {
      throw_config_error(
          "hparams: " + args.origin() + " mamba_config has the unknown key '" + key +
          "'; expected d_state, expand, d_conv, dt_rank, conv_bias, bias, bidirectional");
    }
  }
}

std::shared_ptr<hparams::Object> build_transformer_asr(const Args& args) {
  TransformerASRConfig c;
  c.tgt_vocab = args.get("tgt_vocab").as_int();
  c.input_size = args.get("input_size").as_int();
  c.d_model = args.get_int("d_model", 512);
  c.nhead = args.get_int("nhead", 8);
  c.num_encoder_layers = args.get_int("num_encoder_layers", 6);
  c.num_decoder_layers = args.get_int("num_decoder_layers", 6);
  c.d_ffn = args.get_int("d_ffn", 2048);
  c.dropout = args.get_double("dropout", 0.1);
  c.activation = activation_arg(args, "activation", nn::Activation::kRelu);
  c.conformer_activation = activation_arg(args, "conformer_activation", nn::Activation::kSwish);
  c.branchformer_activation =
      activation_arg(args, "branchformer_activation", nn::Activation::kGelu);
  const Value* pe = args.find("positional_encoding");
  c.positional_encoding = pe == nullptr ? "fixed_abs_sine" : (pe->is_null() ? "" : pe->as_string());
  c.normalize_before = args.get_bool("normalize_before", false);
  c.kernel_size = args.get_int("kernel_size", 31);
  c.bias = args.get_bool("bias", true);
  c.encoder_module = args.get_string("encoder_module", "transformer");
  c.decoder_module = args.get_string("decoder_module", "transformer");
  c.attention_type = args.get_string("attention_type", "regularMHA");
  c.max_length = args.get_int("max_length", 2500);
  c.causal = args.get_bool("causal", true);
  c.csgu_linear_units = args.get_int("csgu_linear_units", 3072);
  c.use_linear_after_conv = args.get_bool("use_linear_after_conv", false);
  if (const Value* gate = args.find("gate_activation");
      gate != nullptr && !gate->is_null() &&
      !(gate->type() == Value::Type::kFactory &&
        gate->partial()->info->name == "torch.nn.Identity")) {
    throw_config_error("hparams: " + args.origin() +
                       " gate_activation: only torch.nn.Identity (the default) is supported");
  }
  read_mamba_config(args, c);
  if (c.encoder_module == "conmamba" || c.decoder_module == "mamba") {
    if (args.find("mamba_config") == nullptr) {
      throw_config_error("hparams: " + args.origin() + " needs mamba_config for the " +
                         (c.encoder_module == "conmamba" ? "conmamba encoder" : "mamba decoder"));
    }
  }
  try {
    return std::make_shared<ModuleObject>(std::make_shared<TransformerASRImpl>(c));
  } catch (const Error& e) {
    throw_config_error("hparams: " + args.origin() + ": " + e.what());
  }
}

std::shared_ptr<hparams::Object> build_transformer_lm(const Args& args) {
  TransformerLMConfig c;
  c.vocab = args.get("vocab").as_int();
  c.d_model = args.get_int("d_model", 512);
  c.nhead = args.get_int("nhead", 8);
  c.num_encoder_layers = args.get_int("num_encoder_layers", 12);
  if (args.get_int("num_decoder_layers", 0) != 0) {
    throw_config_error("hparams: " + args.origin() +
                       " num_decoder_layers must be 0 (decoder LMs "
                       "are not supported)");
  }
  c.d_ffn = args.get_int("d_ffn", 2048);
  c.dropout = args.get_double("dropout", 0.1);
  c.activation = activation_arg(args, "activation", nn::Activation::kRelu);
  c.normalize_before = args.get_bool("normalize_before", false);
  const Value* d_embedding = args.find("d_embedding");
  c.d_embedding = d_embedding == nullptr || d_embedding->is_null() ? 0 : d_embedding->as_int();
  c.max_len = args.get_int("max_len", 2500);
  c.causal = args.get_bool("causal", true);
  const std::string attention = args.get_string("attention_type", "regularMHA");
  if (attention != "regularMHA" && attention != "RelPosMHAXL") {
    throw_config_error("hparams: " + args.origin() + " attention_type '" + attention +
                       "' is not supported; expected regularMHA or RelPosMHAXL");
  }
  c.relative_attention = attention == "RelPosMHAXL";
  try {
    return std::make_shared<ModuleObject>(std::make_shared<TransformerLMImpl>(c));
  } catch (const Error& e) {
    throw_config_error("hparams: " + args.origin() + ": " + e.what());
  }
}

std::shared_ptr<hparams::Object> build_linear(const Args& args) {
  const int64_t out = args.get("n_neurons").as_int();
  int64_t in = args.get_int("input_size", 0);
  if (in <= 0) {
    const auto shape = int_list(args, "input_shape", {});
    if (shape.empty()) {
      throw_config_error("hparams: " + args.origin() + " needs input_size or input_shape");
    }
    in = shape.back();
  }
  return std::make_shared<ModuleObject>(
      std::make_shared<nn::SbLinearImpl>(in, out, args.get_bool("bias", true)));
}

std::shared_ptr<hparams::Object> build_module_list(const Args& args) {
  auto list = std::make_shared<torch::nn::ModuleListImpl>();
  const Value* modules = args.find("modules");
  if (modules != nullptr && !modules->is_null()) {
    for (const auto& item : modules->items()) list->push_back(module_of(item));
  }
  return std::make_shared<ModuleObject>(list);
}

// `!apply:torch.manual_seed [N]` and `!apply:speechbrain.utils.seed_everything [N]`: seed
// LibTorch's generators (CPU and CUDA) at load time, as SpeechBrain does before any object with
// parameters is built, and record the seed for the runtime.
void register_seed(hparams::Registry& registry) {
  auto seeding = [&registry](const std::string& name, int64_t (*value_of)(int64_t)) {
    hparams::ClassInfo info = *registry.find(name);
    info.apply = [value_of](const hparams::Args& args) {
      const int64_t value = value_of(args.get_int("seed", 0));
      hparams::record_manual_seed(value);
      at::manual_seed(static_cast<uint64_t>(value));
      return hparams::Value();
    };
    registry.add(std::move(info));
  };
  seeding("torch.manual_seed", [](int64_t seed) { return seed; });
  seeding("speechbrain.utils.seed_everything", hparams::seed_everything_value);
}

}  // namespace

void register_model_classes(hparams::Registry& registry) {
  registry.implement("speechbrain.lobes.models.convolution.ConvolutionFrontEnd", build_frontend);
  registry.implement("modules.TransformerASR.TransformerASR", build_transformer_asr);
  registry.implement("speechbrain.lobes.models.transformer.TransformerLM.TransformerLM",
                     build_transformer_lm);
  registry.implement("speechbrain.nnet.linear.Linear", build_linear);
  registry.implement("torch.nn.ModuleList", build_module_list);
}

void register_all_classes(hparams::Registry& registry) {
  register_seed(registry);
  features::register_augment_classes(registry);
  features::register_features_classes(registry);
  register_model_classes(registry);
  text::register_text_classes(registry);
}

}  // namespace masr::models

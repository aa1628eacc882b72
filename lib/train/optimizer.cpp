// lib/train/optimizer.cpp
// Adam/AdamW from hparams factories (torch.optim signatures and defaults).
#include "train/optimizer.h"

#include <cmath>
#include <sstream>

#include <torch/version.h>

#include "core/error.h"
#include "hparams/registry.h"

namespace masr::train {

void OptimizerConfig::validate() const {
  const std::string where = "optimizer " + type + ": ";
  if (type != "Adam" && type != "AdamW")
    throw_config_error(where + "only Adam and AdamW are supported");
  if (!(lr >= 0)) throw_config_error(where + "lr " + std::to_string(lr) + " must be >= 0");
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) {
    throw_config_error(where + "betas must be in [0, 1)");
  }
  if (!(eps >= 0)) throw_config_error(where + "eps must be >= 0");
  if (!(weight_decay >= 0)) throw_config_error(where + "weight_decay must be >= 0");
}

std::string OptimizerConfig::to_string() const {
  std::ostringstream s;
  s << type << "(lr=" << lr << ", betas=(" << beta1 << ", " << beta2 << "), eps=" << eps
    << ", weight_decay=" << weight_decay << (amsgrad ? ", amsgrad" : "") << ")";
  return s.str();
}

OptimizerConfig optimizer_config_from(const hparams::Value& factory) {
  if (factory.type() != hparams::Value::Type::kFactory) {
    throw_config_error("hparams: " + factory.origin() +
                       " must be an optimizer factory such as !name:torch.optim.AdamW, got " +
                       factory.describe());
  }
  const hparams::Partial& partial = *factory.partial();
  const std::string& name = partial.info->name;
  OptimizerConfig c;
  if (name == "torch.optim.Adam") {
    c.type = "Adam";
  } else if (name == "torch.optim.AdamW") {
    c.type = "AdamW";
    c.weight_decay = 0.01;
  } else {
    throw_config_error("hparams: " + factory.origin() + ": optimizer '" + name +
                       "' is not supported; use torch.optim.Adam or torch.optim.AdamW");
  }
  const hparams::Args& a = partial.bound;
  c.lr = a.get_double("lr", c.lr);
  if (const hparams::Value* betas = a.find("betas"); betas != nullptr) {
    if (!betas->is_sequence() || betas->items().size() != 2) {
      throw_config_error("hparams: " + a.origin() + " betas must be a pair, got " +
                         betas->describe());
    }
    c.beta1 = betas->items()[0].as_double();
    c.beta2 = betas->items()[1].as_double();
  }
  c.eps = a.get_double("eps", c.eps);
  c.weight_decay = a.get_double("weight_decay", c.weight_decay);
  c.amsgrad = a.get_bool("amsgrad", false);
  for (const char* unsupported : {"maximize", "capturable", "differentiable"}) {
    if (a.get_bool(unsupported, false)) {
      throw_config_error("hparams: " + a.origin() + " " + unsupported + "=True is not supported");
    }
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw_config_error("hparams: " + a.origin() + ": " + e.what());
  }
  return c;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config,
                                                        std::vector<at::Tensor> parameters) {
  config.validate();
  if (config.type == "Adam") {
    torch::optim::AdamOptions o(config.lr);
    o.betas({config.beta1, config.beta2}).eps(config.eps).weight_decay(config.weight_decay);
    o.amsgrad(config.amsgrad);
    return std::make_unique<torch::optim::Adam>(std::move(parameters), o);
  }
  torch::optim::AdamWOptions o(config.lr);
  o.betas({config.beta1, config.beta2}).eps(config.eps).weight_decay(config.weight_decay);
  o.amsgrad(config.amsgrad);
  return std::make_unique<torch::optim::AdamW>(std::move(parameters), o);
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

double learning_rate(const torch::optim::Optimizer& optimizer) {
  return optimizer.param_groups().empty() ? 0.0 : optimizer.param_groups()[0].options().get_lr();
}

at::Tensor clip_gradients(const std::vector<at::Tensor>& parameters, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const auto& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return torch::zeros({}, torch::kFloat32);
  std::vector<at::Tensor> norms;
#if TORCH_VERSION_MAJOR >= 2
  bool all_float = true;
  for (const auto& g : grads) all_float = all_float && g.scalar_type() == at::kFloat;
  if (all_float) norms = at::_foreach_norm(grads, 2);
#endif
  if (norms.empty()) {
    for (const auto& g : grads) norms.push_back(g.detach().to(torch::kFloat32).norm(2));
  }
  const at::Tensor total = torch::stack(norms).to(torch::kFloat32).norm(2);
  if (max_norm > 0) {
    // min(1, max_norm / (total + 1e-6)), or 1 when the norm is not finite.
    const at::Tensor coef = torch::where(
        torch::isfinite(total), torch::clamp_max(max_norm / (total + 1e-6), 1.0),
        torch::ones_like(total));
#if TORCH_VERSION_MAJOR >= 2
    if (all_float) {
      at::_foreach_mul_(grads, coef);
      return total;
    }
#endif
    for (auto& g : grads) g.mul_(coef.to(g.scalar_type()));
  }
  return total;
}

}  // namespace masr::train

namespace masr::train {

std::string optimizer_bytes(torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes,
                    const std::string& origin) {
  torch::serialize::InputArchive archive;
  try {
    std::istringstream in(bytes);
    archive.load_from(in);
    optimizer.load(archive);
  } catch (const c10::Error& e) {
    throw_input_error(origin + ": cannot load the optimizer state (" + e.what_without_backtrace() +
                      ")");
  }
}

}  // namespace masr::train

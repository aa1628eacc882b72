// lib/features/registration.cpp
// Replaces the declared SpeechBrain front-end classes (hparams/known_classes.cpp) with builders.
#include "features/registration.h"

#include <ATen/ATen.h>

#include <sstream>
#include <vector>

#include <torch/torch.h>

#include "core/error.h"

namespace masr::features {
namespace {

[[noreturn]] void unsupported(const hparams::Args& args, const std::string& what) {
  throw_config_error(args.origin() + ": " + what + " is not supported");
}

}  // namespace

FbankConfig fbank_config_from(const hparams::Args& args) {
  if (args.get_bool("deltas", false)) unsupported(args, "deltas=True");
  if (args.get_bool("context", false)) unsupported(args, "context=True");
  if (args.get_bool("requires_grad", false))
    unsupported(args, "requires_grad=True (learnable filters)");
  if (args.get_string("filter_shape", "triangular") != "triangular") {
    unsupported(args, "filter_shape '" + args.get_string("filter_shape", "") + "'");
  }
  if (args.get_double("param_rand_factor", 0.0) != 0.0) unsupported(args, "param_rand_factor != 0");
  FbankConfig config;
  config.sample_rate = static_cast<int>(args.get_int("sample_rate", 16000));
  config.n_fft = static_cast<int>(args.get_int("n_fft", 400));
  config.n_mels = static_cast<int>(args.get_int("n_mels", 40));
  config.f_min = args.get_double("f_min", 0.0);
  const hparams::Value* f_max = args.find("f_max");
  config.f_max = (f_max == nullptr || f_max->is_null()) ? 0.0 : f_max->as_double();
  config.win_length_ms = args.get_double("win_length", 25.0);
  config.hop_length_ms = args.get_double("hop_length", 10.0);
  try {
    config.validate();
  } catch (const Error& e) {
    throw_config_error(args.origin() + ": " + e.what());
  }
  return config;
}

InputNormalizationConfig input_normalization_config_from(const hparams::Args& args) {
  if (args.get_bool("requires_grad", false)) unsupported(args, "requires_grad=True");
  InputNormalizationConfig config;
  config.mean_norm = args.get_bool("mean_norm", true);
  config.std_norm = args.get_bool("std_norm", true);
  config.norm_type = args.get_string("norm_type", "global");
  const hparams::Value* avg = args.find("avg_factor");
  if (avg != nullptr && !avg->is_null()) config.avg_factor = avg->as_double();
  config.update_until_epoch = args.get_int("update_until_epoch", 3);
  try {
    config.validate();
  } catch (const Error& e) {
    throw_config_error(args.origin() + ": " + e.what());
  }
  return config;
}

audio::SpeedPerturbConfig speed_perturb_config_from(const hparams::Args& args) {
  audio::SpeedPerturbConfig config;
  config.orig_freq = static_cast<int>(args.get("orig_freq").as_int());
  if (const hparams::Value* speeds = args.find("speeds")) {
    config.speeds.clear();
    for (const auto& s : speeds->items()) config.speeds.push_back(static_cast<int>(s.as_int()));
  }
  try {
    config.validate();
  } catch (const Error& e) {
    throw_config_error(args.origin() + ": " + e.what());
  }
  return config;
}

audio::PadSilenceConfig pad_silence_config_from(const hparams::Args& args) {
  audio::PadSilenceConfig config;
  config.max_lead = args.get_double("max_lead", config.max_lead);
  config.max_tail = args.get_double("max_tail", config.max_tail);
  config.prob = args.get_double("prob", config.prob);
  config.sample_rate = static_cast<int>(args.get_int("sample_rate", config.sample_rate));
  try {
    config.validate();
  } catch (const Error& e) {
    throw_config_error(args.origin() + ": " + e.what());
  }
  return config;
}

std::string PadSilenceObject::summary() const {
  std::ostringstream out;
  out << "PadSilence max_lead=" << pad.config().max_lead << " max_tail=" << pad.config().max_tail
      << " prob=" << pad.config().prob;
  return out.str();
}

std::string SpeedPerturbObject::summary() const {
  std::ostringstream out;
  out << "SpeedPerturb orig_freq=" << perturb.config().orig_freq << " speeds=";
  for (size_t i = 0; i < perturb.config().speeds.size(); ++i) {
    out << (i ? "/" : "") << perturb.config().speeds[i];
  }
  return out.str();
}

AugmentBatch SpeedPerturbObject::apply(const at::Tensor& x, const at::Tensor& lengths,
                                       at::Generator& generator) const {
  if (x.dim() != 2) throw_input_error("SpeedPerturb: expected waveforms (batch, samples)");
  const auto& speeds = perturb.config().speeds;
  const int speed =
      speeds[static_cast<size_t>(draw_int(generator, 0, static_cast<int64_t>(speeds.size())))];
  const at::Tensor host = x.to(at::kCPU, at::kFloat).contiguous();
  std::vector<at::Tensor> rows;
  for (int64_t b = 0; b < host.size(0); ++b) {
    const float* p = host[b].data_ptr<float>();
    std::vector<float> out = perturb.apply(std::vector<float>(p, p + host.size(1)), speed);
    rows.push_back(torch::tensor(out, torch::kFloat));
  }
  return {torch::stack(rows).to(x.device(), x.scalar_type()), lengths, {}};
}

void register_features_classes(hparams::Registry& registry) {
  registry.implement("speechbrain.lobes.features.Fbank", [](const hparams::Args& a) {
    return std::make_shared<FbankObject>(fbank_config_from(a));
  });
  registry.implement(
      "speechbrain.processing.features.InputNormalization", [](const hparams::Args& a) {
        return std::make_shared<InputNormalizationObject>(input_normalization_config_from(a));
      });
  registry.implement("speechbrain.augment.time_domain.SpeedPerturb", [](const hparams::Args& a) {
    return std::make_shared<SpeedPerturbObject>(speed_perturb_config_from(a));
  });
  registry.implement("mamba_asr.PadSilence", [](const hparams::Args& a) {
    return std::make_shared<PadSilenceObject>(pad_silence_config_from(a));
  });
}

}  // namespace masr::features

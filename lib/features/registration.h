// lib/features/registration.h
// hparams builders for the front end (Fbank, InputNormalization, SpeedPerturb, PadSilence) and
// the "features" benchmark. The objects expose the configured C++ object to whoever uses them.
#pragma once

#include <memory>

#include "audio/pad_silence.h"
#include "audio/speed_perturb.h"
#include "features/augment/interface.h"
#include "features/fbank.h"
#include "features/input_normalization.h"
#include "hparams/registry.h"

namespace masr::features {

struct FbankObject : hparams::Object {
  explicit FbankObject(FbankConfig config) : fbank(std::move(config)) {}
  std::string summary() const override { return "Fbank " + fbank.config().to_string(); }
  Fbank fbank;
};

struct InputNormalizationObject : hparams::Object {
  explicit InputNormalizationObject(InputNormalizationConfig config) : module(std::move(config)) {}
  std::string summary() const override {
    return "InputNormalization " + module->config().to_string();
  }
  InputNormalization module;
};

// Also a batch augmentation, as in a `wav_augment` Augmenter: one speed drawn for the whole batch
// (SpeechBrain's torch.randint(0, len(speeds), (1,))), every padded row resampled; relative
// lengths are unchanged.
struct SpeedPerturbObject : Augmentation {
  explicit SpeedPerturbObject(audio::SpeedPerturbConfig config) : perturb(std::move(config)) {}
  std::string summary() const override;
  std::string name() const override { return "SpeedPerturb"; }
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  audio::SpeedPerturb perturb;
};

struct PadSilenceObject : hparams::Object {
  explicit PadSilenceObject(audio::PadSilenceConfig config) : pad(std::move(config)) {}
  std::string summary() const override;
  audio::PadSilence pad;
};

// Config structs from validated `!new:` arguments (throw config errors naming the file and key).
FbankConfig fbank_config_from(const hparams::Args& args);
InputNormalizationConfig input_normalization_config_from(const hparams::Args& args);
audio::SpeedPerturbConfig speed_perturb_config_from(const hparams::Args& args);
audio::PadSilenceConfig pad_silence_config_from(const hparams::Args& args);

void register_features_classes(hparams::Registry& registry);

}  // namespace masr::features

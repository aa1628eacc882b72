// lib/features/augment/registration.cpp
// Builders from hparams arguments (SpeechBrain v1.0 signatures and defaults) to the augmentation
// objects. The Augmenter takes its `augmentations` as objects built by earlier `!new:` nodes.
#include "features/augment/registration.h"

#include <memory>

#include "core/error.h"
#include "features/augment/amplitude.h"
#include "features/augment/augmenter.h"
#include "features/augment/noise.h"
#include "features/augment/reverb.h"
#include "features/augment/spectral_smoothing.h"
#include "features/augment/spectrogram_drop.h"
#include "features/augment/vocoder.h"
#include "features/augment/vtlp.h"
#include "features/augment/warping.h"
#include "features/augment/waveform_drop.h"

namespace masr::features {
namespace {

using hparams::Args;
using hparams::ClassInfo;
using hparams::Registry;
using hparams::Value;

std::optional<int64_t> optional_int(const Args& args, const std::string& name) {
  const Value* v = args.find(name);
  if (v == nullptr || v->is_null()) return std::nullopt;
  return v->as_int();
}

// Rethrows a validation error with the hparams location of the object in front.
template <typename Make>
std::shared_ptr<hparams::Object> with_origin(const Args& args, Make make) {
  try {
    return make();
  } catch (const Error& e) {
    throw Error(e.kind(), "hparams: " + args.origin() + ": " + e.what());
  }
}

std::shared_ptr<const Augmentation> augmentation_at(const Value& item, size_t index,
                                                    const Args& args) {
  const std::string where =
      "hparams: " + args.origin() + ": augmentations[" + std::to_string(index) + "]";
  if (item.type() != Value::Type::kObject) {
    throw_config_error(where + " is " + item.describe() + "; expected an object made by !new:");
  }
  const auto& instance = item.instance();
  auto aug = std::dynamic_pointer_cast<const Augmentation>(instance->object);
  if (!aug) {
    const std::string cls = instance->info ? instance->info->name : "an object";
    throw_config_error(where + " is '" + cls +
                       "', which mamba-asr does not implement as a batch augmentation");
  }
  return aug;
}

std::shared_ptr<hparams::Object> build_augmenter(const Args& args) {
  AugmenterConfig c;
  c.parallel_augment = args.get_bool("parallel_augment", false);
  c.parallel_augment_fixed_bs = args.get_bool("parallel_augment_fixed_bs", false);
  c.concat_original = args.get_bool("concat_original", false);
  c.min_augmentations = optional_int(args, "min_augmentations");
  c.max_augmentations = optional_int(args, "max_augmentations");
  c.shuffle_augmentations = args.get_bool("shuffle_augmentations", false);
  c.repeat_augment = args.get_int("repeat_augment", 1);
  c.augment_start_index = args.get_int("augment_start_index", 0);
  c.augment_end_index = optional_int(args, "augment_end_index");
  c.concat_start_index = args.get_int("concat_start_index", 0);
  c.concat_end_index = optional_int(args, "concat_end_index");
  c.augment_prob = args.get_double("augment_prob", 1.0);
  if (const Value* enable = args.find("enable_augmentations"); enable && !enable->is_null()) {
    for (const auto& flag : enable->items()) c.enable_augmentations.push_back(flag.as_bool());
  }
  std::vector<std::shared_ptr<const Augmentation>> augs;
  if (const Value* list = args.find("augmentations"); list && !list->is_null()) {
    const auto& items = list->items();
    for (size_t i = 0; i < items.size(); ++i) augs.push_back(augmentation_at(items[i], i, args));
  }
  return with_origin(args, [&] { return std::make_shared<Augmenter>(c, std::move(augs)); });
}

std::shared_ptr<hparams::Object> build_spectrogram_drop(const Args& args) {
  SpectrogramDropConfig c;
  c.drop_length_low = args.get_int("drop_length_low", c.drop_length_low);
  c.drop_length_high = args.get_int("drop_length_high", c.drop_length_high);
  c.drop_count_low = args.get_int("drop_count_low", c.drop_count_low);
  c.drop_count_high = args.get_int("drop_count_high", c.drop_count_high);
  c.replace = args.get_string("replace", c.replace);
  c.dim = args.get_int("dim", c.dim);
  return with_origin(args, [&] { return std::make_shared<SpectrogramDrop>(c); });
}

std::shared_ptr<hparams::Object> build_warping(const Args& args) {
  WarpingConfig c;
  c.warp_window = args.get_int("warp_window", c.warp_window);
  c.warp_mode = args.get_string("warp_mode", c.warp_mode);
  c.dim = args.get_int("dim", c.dim);
  return with_origin(args, [&] { return std::make_shared<Warping>(c); });
}

std::shared_ptr<hparams::Object> build_add_noise(const Args& args) {
  if (const Value* csv = args.find("csv_file"); csv && !csv->is_null()) {
    throw_config_error("hparams: " + args.origin() +
                       ": noise from a CSV file is not supported; only white noise (no csv_file)");
  }
  AddNoiseConfig c;
  c.snr_low = args.get_double("snr_low", 0.0);
  c.snr_high = args.get_double("snr_high", 0.0);
  if (const Value* f = args.find("noise_funct"); f && !f->is_null()) {
    const std::string name =
        f->type() == Value::Type::kFactory && f->partial()->info ? f->partial()->info->name : "";
    if (name == "speechbrain.augment.time_domain.pink_noise_like") {
      const Args& bound = f->partial()->bound;
      c.colored = true;
      c.alpha_low = bound.get_double("alpha_low", c.alpha_low);
      c.alpha_high = bound.get_double("alpha_high", c.alpha_high);
      c.sample_rate = bound.get_double("sample_rate", c.sample_rate);
    } else if (name != "torch.randn_like") {
      throw_config_error("hparams: " + args.origin() + ": noise_funct is " + f->describe() +
                         "; mamba-asr's AddNoise draws white noise (torch.randn_like) or "
                         "!name:speechbrain.augment.time_domain.pink_noise_like");
    }
  }
  return with_origin(args, [&] { return std::make_shared<AddNoise>(c); });
}

std::shared_ptr<hparams::Object> build_drop_freq(const Args& args) {
  DropFreqConfig c;
  c.drop_freq_low = args.get_double("drop_freq_low", c.drop_freq_low);
  c.drop_freq_high = args.get_double("drop_freq_high", c.drop_freq_high);
  c.drop_freq_count_low = args.get_int("drop_freq_count_low", c.drop_freq_count_low);
  c.drop_freq_count_high = args.get_int("drop_freq_count_high", c.drop_freq_count_high);
  c.drop_freq_width = args.get_double("drop_freq_width", c.drop_freq_width);
  c.epsilon = args.get_double("epsilon", c.epsilon);
  return with_origin(args, [&] { return std::make_shared<DropFreq>(c); });
}

std::shared_ptr<hparams::Object> build_drop_chunk(const Args& args) {
  DropChunkConfig c;
  c.drop_length_low = args.get_int("drop_length_low", c.drop_length_low);
  c.drop_length_high = args.get_int("drop_length_high", c.drop_length_high);
  c.drop_count_low = args.get_int("drop_count_low", c.drop_count_low);
  c.drop_count_high = args.get_int("drop_count_high", c.drop_count_high);
  c.drop_start = args.get_int("drop_start", c.drop_start);
  c.drop_end = optional_int(args, "drop_end");
  c.noise_factor = args.get_double("noise_factor", c.noise_factor);
  return with_origin(args, [&] { return std::make_shared<DropChunk>(c); });
}

std::shared_ptr<hparams::Object> build_rand_amp(const Args& args) {
  RandAmpConfig c;
  c.amp_low = args.get_double("amp_low", c.amp_low);
  c.amp_high = args.get_double("amp_high", c.amp_high);
  return with_origin(args, [&] { return std::make_shared<RandAmp>(c); });
}

std::shared_ptr<hparams::Object> build_do_clip(const Args& args) {
  DoClipConfig c;
  c.clip_low = args.get_double("clip_low", c.clip_low);
  c.clip_high = args.get_double("clip_high", c.clip_high);
  return with_origin(args, [&] { return std::make_shared<DoClip>(c); });
}

std::shared_ptr<hparams::Object> build_drop_bit_resolution(const Args& args) {
  DropBitResolutionConfig c;
  c.target_dtype = args.get_string("target_dtype", c.target_dtype);
  return with_origin(args, [&] { return std::make_shared<DropBitResolution>(c); });
}

std::shared_ptr<hparams::Object> build_vtlp(const Args& args) {
  VtlpConfig c;
  c.warp_low = args.get_double("warp_low", c.warp_low);
  c.warp_high = args.get_double("warp_high", c.warp_high);
  c.f_hi = args.get_double("f_hi", c.f_hi);
  c.sample_rate = args.get_double("sample_rate", c.sample_rate);
  c.f_min = args.get_double("f_min", c.f_min);
  c.f_max = args.get_double("f_max", c.f_max);
  return with_origin(args, [&] { return std::make_shared<Vtlp>(c); });
}

std::shared_ptr<hparams::Object> build_spectral_smoothing(const Args& args) {
  SpectralSmoothingConfig c;
  c.time_width_low = args.get_int("time_width_low", c.time_width_low);
  c.time_width_high = args.get_int("time_width_high", c.time_width_high);
  c.keep_low = args.get_int("keep_low", c.keep_low);
  c.keep_high = args.get_int("keep_high", c.keep_high);
  return with_origin(args, [&] { return std::make_shared<SpectralSmoothing>(c); });
}

std::shared_ptr<hparams::Object> build_reverb(const Args& args) {
  ReverbConfig c;
  c.rt60_low = args.get_double("rt60_low", c.rt60_low);
  c.rt60_high = args.get_double("rt60_high", c.rt60_high);
  c.drr_low = args.get_double("drr_low", c.drr_low);
  c.drr_high = args.get_double("drr_high", c.drr_high);
  c.sample_rate = args.get_double("sample_rate", c.sample_rate);
  return with_origin(args, [&] { return std::make_shared<Reverb>(c); });
}

std::shared_ptr<hparams::Object> build_vocoder(const Args& args) {
  VocoderConfig c;
  c.sample_rate = args.get_double("sample_rate", c.sample_rate);
  c.order_low = args.get_int("order_low", c.order_low);
  c.order_high = args.get_int("order_high", c.order_high);
  c.pitch_low = args.get_double("pitch_low", c.pitch_low);
  c.pitch_high = args.get_double("pitch_high", c.pitch_high);
  c.noise_low = args.get_double("noise_low", c.noise_low);
  c.noise_high = args.get_double("noise_high", c.noise_high);
  c.f0_min = args.get_double("f0_min", c.f0_min);
  c.f0_max = args.get_double("f0_max", c.f0_max);
  c.voicing_threshold = args.get_double("voicing_threshold", c.voicing_threshold);
  return with_origin(args, [&] { return std::make_shared<Vocoder>(c); });
}

}  // namespace

void register_augment_classes(Registry& registry) {
  registry.implement("mamba_asr.Reverb", build_reverb);
  registry.implement("mamba_asr.Vocoder", build_vocoder);
  registry.implement("mamba_asr.VTLP", build_vtlp);
  registry.implement("mamba_asr.SpectralSmoothing", build_spectral_smoothing);
  registry.implement("speechbrain.augment.time_domain.RandAmp", build_rand_amp);
  registry.implement("speechbrain.augment.time_domain.DoClip", build_do_clip);
  registry.implement("speechbrain.augment.time_domain.DropBitResolution",
                     build_drop_bit_resolution);
  registry.implement("speechbrain.augment.time_domain.DropFreq", build_drop_freq);
  registry.implement("speechbrain.augment.time_domain.DropChunk", build_drop_chunk);
  registry.implement("speechbrain.augment.freq_domain.SpectrogramDrop", build_spectrogram_drop);
  registry.implement("speechbrain.augment.freq_domain.Warping", build_warping);
  registry.implement("speechbrain.augment.augmenter.Augmenter", build_augmenter);

  ClassInfo noise;
  noise.name = "speechbrain.augment.time_domain.AddNoise";
  noise.aliases = {"mamba_asr.AddNoise"};
  noise.summary = "adds white or 1/f^alpha noise at a random SNR";
  noise.params = {"csv_file",         "csv_keys",    "sorting",      "num_workers",
                  "snr_low",          "snr_high",    "pad_noise",    "start_index",
                  "normalize",        "noise_funct", "replacements", "noise_sample_rate",
                  "clean_sample_rate"};
  noise.build = build_add_noise;
  registry.add(std::move(noise));
}

}  // namespace masr::features

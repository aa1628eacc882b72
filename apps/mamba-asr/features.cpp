// apps/mamba-asr/features.cpp
// `mamba-asr features INPUTS... -o PATH`: computes the features a model would see.
#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "audio/audio_reader.h"
#include "commands.h"
#include "core/error.h"
#include "core/log.h"
#include "features/npy.h"
#include "features/registration.h"
#include "hparams/hparams.h"

namespace masr::cli {
namespace {

struct FeaturesOptions {
  std::vector<std::string> inputs;
  std::string out;
  std::string format = "npy";
  std::string hparams;
};

// The front end: an Fbank and, when it holds statistics, a global normalizer.
struct FrontEnd {
  std::shared_ptr<features::FbankObject> fbank;
  std::shared_ptr<features::InputNormalizationObject> normalize;
};

template <typename T>
std::shared_ptr<T> object_at(const hparams::Hparams& hp, const std::string& key) {
  const hparams::Value* value = hp.find(key);
  if (value == nullptr) return nullptr;
  if (value->type() != hparams::Value::Type::kObject || !value->instance()->object) {
    throw_config_error(hp.source() + ": '" + key + "' is " + value->describe() +
                       ", not the expected front-end object");
  }
  auto object = std::dynamic_pointer_cast<T>(value->instance()->object);
  if (!object) {
    throw_config_error(hp.source() + ": '" + key + "' is a " + value->instance()->args.callee +
                       ", not the expected front-end class");
  }
  return object;
}

FrontEnd load_front_end(const std::string& path) {
  FrontEnd front;
  if (path.empty()) {
    features::FbankConfig config;
    config.n_mels = 80;
    front.fbank = std::make_shared<features::FbankObject>(config);
    return front;
  }
  // Recipes leave `data_folder: !PLACEHOLDER`; the front end does not need it.
  hparams::LoadOptions load;
  load.placeholder_value = "unused";
  const hparams::Hparams hp = hparams::load_file(path, load);
  front.fbank = object_at<features::FbankObject>(hp, "compute_features");
  if (!front.fbank) throw_config_error(path + ": no 'compute_features' key (an Fbank) to use");
  for (const char* key : {"normalize", "normalizer"}) {
    if (auto norm = object_at<features::InputNormalizationObject>(hp, key)) {
      if (norm->module->has_statistics()) {
        front.normalize = norm;
      } else {
        MASR_LOG_WARN(
            "%s: '%s' has no statistics yet (they come from training or a checkpoint's "
            "normalizer.ckpt); writing unnormalized features",
            path.c_str(), key);
      }
    }
  }
  return front;
}

void write_text(const std::string& path, const at::Tensor& feats) {
  std::ofstream out(path);
  if (!out) throw Error(ErrorKind::kIo, "cannot write '" + path + "'");
  const at::Tensor f = feats.contiguous();
  const float* p = f.data_ptr<float>();
  for (int64_t t = 0; t < f.size(0); ++t) {
    for (int64_t m = 0; m < f.size(1); ++m) out << (m ? " " : "") << p[t * f.size(1) + m];
    out << "\n";
  }
  if (!out) throw Error(ErrorKind::kIo, "write failed: '" + path + "'");
}

int run_features(const FeaturesOptions& options) {
  const FrontEnd front = load_front_end(options.hparams);
  const auto& config = front.fbank->fbank.config();
  namespace fs = std::filesystem;
  const bool to_file =
      options.inputs.size() == 1 && !fs::is_directory(options.out) && options.out.back() != '/';
  if (!to_file) fs::create_directories(options.out);
  const std::string extension = options.format == "npy" ? ".npy" : ".txt";
  for (const auto& input : options.inputs) {
    const audio::Audio audio = audio::read_audio(input, config.sample_rate);
    at::Tensor feats;
    try {
      feats = front.fbank->fbank(at::from_blob(const_cast<float*>(audio.samples.data()),
                                               {static_cast<int64_t>(audio.samples.size())},
                                               at::kFloat));
    } catch (const Error& e) {
      throw_input_error("audio file '" + input + "': " + e.what());
    }
    if (front.normalize) {
      front.normalize->module->eval();
      feats = front.normalize->module->forward(feats);
    }
    feats = feats[0];
    const std::string path =
        to_file ? options.out
                : (fs::path(options.out) / (fs::path(input).stem().string() + extension)).string();
    if (options.format == "npy") {
      features::write_npy(path, feats);
    } else {
      write_text(path, feats);
    }
    MASR_LOG_INFO("%s: %.2f s -> %lld x %lld features in %s", input.c_str(), audio.duration(),
                  static_cast<long long>(feats.size(0)), static_cast<long long>(feats.size(1)),
                  path.c_str());
  }
  return 0;
}

}  // namespace

Runner add_features_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto options = std::make_shared<FeaturesOptions>();
  CLI::App* cmd = app.add_subcommand(
      "features",
      "Compute features exactly as a model's front end would, for inspection.\n\n"
      "Without --hparams: SpeechBrain Fbank, 80 mels, no normalization. With --hparams: the\n"
      "file's compute_features, then its normalize when that holds statistics (a fresh file\n"
      "does not). One input and a file PATH writes that file; otherwise PATH is a folder with\n"
      "one <name>.npy (or .txt) per input. Audio is resampled to the front end's rate.\n\n"
      "Examples:\n"
      "  mamba-asr features speech.wav -o speech.npy\n"
      "  mamba-asr features data/*.flac -o feats/ --hparams hparams/CTC/conmamba_large.yaml");
  cmd->add_option("inputs", options->inputs, "Audio files")->required();
  cmd->add_option("-o,--output,--out", options->out, "Output file or folder")->required();
  cmd->add_option("--format", options->format, "npy or text")
      ->capture_default_str()
      ->check(CLI::IsMember({"npy", "text"}));
  cmd->add_option("--hparams", options->hparams, "Use this model's front end");
  return [options]() -> int { return run_features(*options); };
}

}  // namespace masr::cli

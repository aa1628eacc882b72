// apps/mamba-asr/features.cpp
// `mamba-asr features INPUTS... --out PATH`: computes the features a model would see.
#include "commands.h"

namespace masr::cli {
namespace {

struct FeaturesOptions {
  std::vector<std::string> inputs;
  std::string out;
  std::string format = "npy";
  std::string hparams;
};

}  // namespace

Runner add_features_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto options = std::make_shared<FeaturesOptions>();
  CLI::App* cmd = app.add_subcommand(
      "features",
      "Compute features exactly as a model's front end would, for inspection.\n\n"
      "Without --hparams: SpeechBrain Fbank, 80 mels, no normalization. One input and a file\n"
      "PATH writes that file; otherwise PATH is a folder with one <name>.npy per input.\n\n"
      "Examples:\n"
      "  mamba-asr features speech.wav --out speech.npy\n"
      "  mamba-asr features data/*.flac --out feats/ --hparams hparams/CTC/conmamba_large.yaml");
  cmd->add_option("inputs", options->inputs, "Audio files")->required();
  cmd->add_option("-o,--out", options->out, "Output file or folder")->required();
  cmd->add_option("--format", options->format, "npy or text")
      ->capture_default_str()
      ->check(CLI::IsMember({"npy", "text"}));
  cmd->add_option("--hparams", options->hparams, "Use this model's front end");
  return []() -> int { not_available("features", "feature extraction"); };
}

}  // namespace masr::cli

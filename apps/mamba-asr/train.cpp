// apps/mamba-asr/train.cpp
// `mamba-asr train HPARAMS [--key value ...]`: trains what an hparams file describes.
#include <iostream>

#include "commands.h"
#include "core/error.h"
#include "core/log.h"
#include "hparams/hparams.h"

namespace masr::cli {
namespace {

struct TrainOptions {
  std::string hparams_file;
  std::string overrides_yaml;
  bool dry_run = false;
  bool list_classes = false;
};

void print_summary(const hparams::Hparams& hp) {
  size_t built = 0;
  for (const auto& object : hp.objects()) built += object.instance->object ? 1 : 0;
  std::cerr << "Resolved " << hp.source() << ": " << hp.root().entries().size() << " keys, "
            << hp.objects().size() << " objects (" << built << " built, "
            << hp.objects().size() - built << " declared).\n";
  for (const auto& object : hp.objects()) {
    const auto& built_object = object.instance->object;
    const std::string detail = built_object ? built_object->summary() : "";
    std::cerr << "  " << object.key << ": " << object.instance->info->name << " ["
              << (built_object ? "built" : "declared") << "]"
              << (detail.empty() ? "" : "  " + detail) << "\n";
  }
  std::cerr << "(declared: arguments checked against the class's signature; the object is "
               "constructed by the subsystem that uses it)\n";
}

void list_classes() {
  for (const auto* info : hparams::Registry::global().all()) {
    std::cout << info->name << (info->kind == hparams::CallableKind::kFunction ? " (function)" : "")
              << (info->implemented() ? "" : " [declared]") << "\n    " << info->summary << "\n";
    if (!info->aliases.empty()) {
      std::cout << "    also:";
      for (const auto& alias : info->aliases) std::cout << " " << alias;
      std::cout << "\n";
    }
  }
}

int run_train(const TrainOptions& options, const std::vector<std::string>& extras) {
  if (options.list_classes) {
    list_classes();
    return 0;
  }
  if (options.hparams_file.empty()) {
    throw Error(ErrorKind::kUsage,
                "train: give an hparams file, e.g. mamba-asr train "
                "hparams/CTC/conmamba_tiny.yaml --dry-run");
  }
  hparams::LoadOptions load;
  load.overrides = hparams::parse_override_args(extras);
  load.overrides_yaml = options.overrides_yaml;
  const hparams::Hparams hp = hparams::load_file(options.hparams_file, load);
  if (options.dry_run) {
    std::cout << hp.to_yaml();
    print_summary(hp);
    return 0;
  }
  not_available("train", "training");
}

}  // namespace

Runner add_train_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train the model an hparams file describes.\n\n"
      "Hparams files are SpeechBrain-style YAML (HyperPyYAML: !new:, !name:, !ref, !apply:, ...);\n"
      "upstream Mamba-ASR and SpeechBrain files load unchanged. Any top-level key can be\n"
      "overridden on the command line with --key value or --key=value, before references\n"
      "resolve, exactly as in SpeechBrain.\n\n"
      "Examples:\n"
      "  mamba-asr train hparams/S2S/conmamba_large.yaml --data_folder /data/LibriSpeech "
      "--dry-run\n"
      "  mamba-asr train hparams/CTC/conmamba_tiny.yaml --seed 7 --number_of_epochs 5\n"
      "  mamba-asr train my.yaml --overrides \"{batch_size: 8, mamba_config: {d_state: 8}}\"");
  cmd->add_option("hparams", options->hparams_file, "The hparams YAML file");
  cmd->add_flag("--dry-run", options->dry_run,
                "Resolve the file and build its objects, print the resolved YAML (stdout) and a "
                "summary (stderr); touch no data");
  cmd->add_option("--overrides", options->overrides_yaml,
                  "Overrides as a YAML mapping, e.g. \"{seed: 1, lr_adam: 0.001}\"");
  cmd->add_flag("--list-classes", options->list_classes,
                "List the class and function names hparams files may use");
  add_global_options(*cmd, global);
  cmd->allow_extras();      // --key value overrides ...
  cmd->fallthrough(false);  // ... stay here instead of reaching the root's parser
  return [options, cmd] { return run_train(*options, cmd->remaining()); };
}

}  // namespace masr::cli

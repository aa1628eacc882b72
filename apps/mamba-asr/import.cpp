// apps/mamba-asr/import.cpp
// `mamba-asr import`: SpeechBrain / Mamba-ASR checkpoints into model files `decode` takes.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "core/error.h"
#include "core/log.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "models/lm_model.h"
#include "text/tokenizer.h"

namespace masr::cli {
namespace {

namespace fs = std::filesystem;

struct ImportOptions {
  std::string ckpt_folder, hparams, tokenizer, out;
  std::string lm_ckpt, lm_hparams, lm_out;
};

std::string describe_tokenizer(const std::shared_ptr<const text::Tokenizer>& tokenizer) {
  if (!tokenizer || !tokenizer->loaded()) return "none (give --tokenizer to decode to text)";
  return tokenizer->origin() + ", " + std::to_string(tokenizer->vocab_size()) + " pieces";
}

int run_import(const ImportOptions& o, const std::vector<std::string>& extras) {
  const bool asr = !o.ckpt_folder.empty();
  const bool lm = !o.lm_ckpt.empty() || !o.lm_hparams.empty();
  if (!asr && !lm) {
    throw Error(ErrorKind::kUsage,
                "import: give a checkpoint folder (CKPT+...) with --hparams, or --lm-ckpt with "
                "--lm-hparams; see mamba-asr import --help");
  }
  const auto overrides = hparams::parse_override_args(extras);
  if (asr) {
    if (o.hparams.empty()) {
      throw Error(ErrorKind::kUsage, "import: " + o.ckpt_folder +
                                         " needs the hparams file it was trained with (--hparams)");
    }
    if (o.out.empty()) {
      throw Error(ErrorKind::kUsage, "import: give the model file to write (-o/--output)");
    }
    const auto model =
        models::AsrModel::import_speechbrain(o.ckpt_folder, o.hparams, overrides, o.tokenizer);
    model->save(o.out);
    MASR_LOG_INFO("import: %s model, %lld parameters, tokenizer %s", model->model_type().c_str(),
                  static_cast<long long>(model->num_parameters()),
                  describe_tokenizer(model->tokenizer()).c_str());
    std::cout << o.out << "\n";
  }
  if (lm) {
    if (o.lm_ckpt.empty() || o.lm_hparams.empty()) {
      throw Error(ErrorKind::kUsage,
                  "import: a language model needs both --lm-ckpt (its model.ckpt or lm.ckpt) and "
                  "--lm-hparams (the LM recipe's hparams, or an ASR recipe with lm_model)");
    }
    std::string out = o.lm_out;
    if (out.empty() && !o.out.empty()) {
      out = (fs::path(o.out).parent_path() / (fs::path(o.out).stem().string() + ".lm.masr")).string();
    }
    if (out.empty()) {
      throw Error(ErrorKind::kUsage, "import: give the LM file to write (--lm-output)");
    }
    // The ASR model's tokenizer is the LM's too (fusion adds their log-probabilities per token).
    const auto model =
        models::LmModel::import_speechbrain(o.lm_ckpt, o.lm_hparams, overrides, o.tokenizer);
    model->save(out);
    MASR_LOG_INFO("import: TransformerLM, %lld tokens, tokenizer %s",
                  static_cast<long long>(model->vocab_size()),
                  describe_tokenizer(model->tokenizer()).c_str());
    std::cout << out << "\n";
  }
  return 0;
}

}  // namespace

Runner add_import_command(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Turn a SpeechBrain / Mamba-ASR checkpoint into a model file for `mamba-asr decode`.\n\n"
      "CKPT_FOLDER is a checkpoint folder written by the Python recipes (save/CKPT+...: model.ckpt,\n"
      "normalizer.ckpt, optionally tokenizer.ckpt); --hparams is the YAML it was trained with (the\n"
      "upstream file loads unchanged). The tokenizer comes from --tokenizer, else the folder's\n"
      "tokenizer.ckpt, else the hparams. A language model (SpeechBrain's TransformerLM: the LM\n"
      "recipe's model.ckpt, or the pretrained LibriSpeech lm.ckpt) becomes a file for decode --lm.\n"
      "Overrides (--key value, or --key=value before the folder) apply to both hparams files.\n\n"
      "Examples:\n"
      "  mamba-asr import results/conmamba_large/save/CKPT+2024-06-01 \\\n"
      "      --hparams hparams/S2S/conmamba_large.yaml --tokenizer tokenizer.ckpt -o large.masr\n"
      "  mamba-asr import --lm-ckpt lm.ckpt --lm-hparams hparams/LM/transformer.yaml \\\n"
      "      --tokenizer tokenizer.ckpt --lm-output lm.masr\n"
      "  mamba-asr decode --model large.masr --search s2s --lm lm.masr audio.wav");
  cmd->add_option("ckpt_folder", o->ckpt_folder, "The ASR checkpoint folder (CKPT+...)");
  cmd->add_option("--hparams", o->hparams, "The ASR model's hparams file");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "SentencePiece model (.model or SpeechBrain's tokenizer.ckpt)");
  cmd->add_option("-o,--output,--out", o->out, "The ASR model file to write");
  cmd->add_option("--lm-ckpt", o->lm_ckpt, "A SpeechBrain TransformerLM checkpoint");
  cmd->add_option("--lm-hparams", o->lm_hparams,
                  "The LM's hparams file (an LM recipe's, or an ASR recipe with lm_model)");
  cmd->add_option("--lm-output,--lm-out", o->lm_out,
                  "The LM file to write (default: next to --output, named <output>.lm.masr)");
  add_global_options(*cmd, global);
  cmd->allow_extras();  // --key value hparams overrides
  cmd->fallthrough(false);
  return [o, cmd] { return run_import(*o, cmd->remaining()); };
}

}  // namespace masr::cli

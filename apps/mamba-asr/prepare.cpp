// apps/mamba-asr/prepare.cpp
// `mamba-asr prepare librispeech DATA_FOLDER OUTPUT_FOLDER`: SpeechBrain CSVs from a corpus in its
// standard layout, so recipes start from the files users already have.
#include <iostream>

#include "commands.h"
#include "core/log.h"
#include "data/librispeech.h"

namespace masr::cli {

Runner add_prepare_command(CLI::App& app, GlobalOptions& /*global*/) {
  CLI::App* cmd = app.add_subcommand(
      "prepare",
      "Write SpeechBrain CSVs (ID,duration,wav,spk_id,wrd) for a corpus.\n\n"
      "librispeech: DATA_FOLDER is the LibriSpeech/ folder (<split>/<speaker>/<chapter>/*.flac "
      "and\n"
      "<speaker>-<chapter>.trans.txt). The train splits found are merged into train.csv; each\n"
      "evaluation split found gets <split>.csv. Missing splits are skipped with a note.\n\n"
      "Example:\n"
      "  mamba-asr prepare librispeech /data/LibriSpeech results/librispeech");
  // One heap object owns every variable CLI11 writes into, kept alive by the returned runner.
  struct PrepareOptions {
    std::string corpus, data_folder, output_folder;
    data::LibriSpeechPrepareOptions librispeech;
  };
  auto o = std::make_shared<PrepareOptions>();
  cmd->add_option("corpus", o->corpus, "The corpus layout: librispeech")
      ->required()
      ->check(CLI::IsMember({"librispeech"}));
  cmd->add_option("data_folder", o->data_folder, "The corpus folder")->required();
  cmd->add_option("output_folder", o->output_folder, "Where the CSVs go")->required();
  cmd->add_option("--train-splits", o->librispeech.train_splits, "Splits merged into train.csv")
      ->delimiter(',');
  cmd->add_option("--eval-splits", o->librispeech.eval_splits, "Splits written one CSV each")
      ->delimiter(',');
  cmd->add_option("--jobs", o->librispeech.jobs, "Threads reading audio headers (0: all cores)")
      ->check(CLI::Range(0, 256));
  return [o] {
    const data::LibriSpeechPrepared result =
        data::prepare_librispeech(o->data_folder, o->output_folder, o->librispeech);
    for (const auto& split : result.missing) {
      MASR_LOG_INFO("prepare: %s is not in %s; skipped", split.c_str(), o->data_folder.c_str());
    }
    for (const auto& path : result.written) std::cout << path << "\n";
    return 0;
  };
}

}  // namespace masr::cli

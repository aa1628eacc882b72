// apps/mamba-asr/ngram.cpp
// `mamba-asr ngram -o OUT.arpa TEXT...`: a word n-gram LM (interpolated modified Kneser-Ney) in
// ARPA form, for `mamba-asr decode --search ctc-beam --arpa OUT.arpa`.
#include <filesystem>

#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "decode/ngram_builder.h"
#include "train/lm_data.h"

namespace masr::cli {

Runner add_ngram_command(CLI::App& app, GlobalOptions& /*global*/) {
  CLI::App* cmd = app.add_subcommand(
      "ngram",
      "Estimate a word n-gram LM from text and write it as an ARPA file.\n\n"
      "Interpolated modified Kneser-Ney smoothing (Chen & Goodman, as KenLM's lmplz).\n\n"
      "TEXT: plain text files (one sentence per line) or SpeechBrain CSVs (*.csv, their wrd\n"
      "column); words are separated by spaces. <s>, </s> and <unk> are added.\n\n"
      "Example:\n"
      "  mamba-asr ngram --order 3 -o lm.arpa results/synth/lm_train.txt");
  struct NgramCliOptions {
    std::vector<std::string> inputs;
    std::string output;
    decode::NgramBuildOptions build;
  };
  auto o = std::make_shared<NgramCliOptions>();
  cmd->add_option("inputs", o->inputs, "Text files or CSVs")->required();
  cmd->add_option("-o,--output", o->output, "The ARPA file to write")->required();
  cmd->add_option("--order", o->build.order, "The n-gram order")->capture_default_str();
  cmd->add_option("--discount", o->build.discounts,
                  "Fixed discounts D1,D2,D3+ for every order (default: estimated from the counts)")
      ->delimiter(',');
  return [o] {
    o->build.validate();
    // Fail before a long estimation rather than after it.
    const auto folder = std::filesystem::absolute(o->output).parent_path();
    if (!std::filesystem::is_directory(folder)) {
      throw_io_error("ngram: cannot write '" + o->output + "': folder '" + folder.string() +
                     "' does not exist");
    }
    std::vector<std::string> csvs, texts;
    for (const std::string& path : o->inputs) {
      (std::filesystem::path(path).extension() == ".csv" ? csvs : texts).push_back(path);
    }
    const data::Manifest manifest = train::read_lm_sentences(csvs, texts);
    std::vector<std::string> sentences;
    sentences.reserve(manifest.rows.size());
    for (const auto& row : manifest.rows) sentences.push_back(row.wrd);
    MASR_LOG_INFO("ngram: %zu sentences from %s", sentences.size(), manifest.origin.c_str());
    decode::NgramBuildSummary summary;
    const std::string arpa = decode::build_kneser_ney_arpa(sentences, o->build, &summary);
    write_file_atomically(o->output, arpa);
    for (size_t n = 0; n < summary.counts.size(); ++n) {
      const auto& d = summary.discounts[n];
      MASR_LOG_INFO("ngram: %zu %zu-grams, discounts %.3f %.3f %.3f", summary.counts[n], n + 1,
                    d[0], d[1], d[2]);
    }
    MASR_LOG_INFO("ngram: wrote %s", o->output.c_str());
    return 0;
  };
}

}  // namespace masr::cli

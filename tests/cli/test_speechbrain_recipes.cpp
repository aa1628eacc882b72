// tests/cli/test_speechbrain_recipes.cpp
// SpeechBrain's own LibriSpeech hparams files (tests/fixtures/speechbrain, v1.0.0 and main, copied
// unchanged; SOURCE.md names the commits) through `mamba-asr train FILE --dry-run`, as a user
// would run them: every file of a supported recipe family loads with --strict (no key left
// unread), and its `model` has the parameter count SpeechBrain's own classes give it (param_counts.tsv, written by
// make_param_counts.py from the upstream code). Files outside those families fail with an
// error that names the families mamba-asr loads.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "run_cli.h"

namespace {

namespace fs = std::filesystem;

const std::string kRoot = std::string(MASR_SOURCE_DIR) + "/tests/fixtures/speechbrain";

std::string with_thousands(const std::string& digits) {
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "version/file" -> SpeechBrain's parameter count of the file's `model`.
std::map<std::string, std::string> upstream_counts() {
  std::ifstream in(kRoot + "/param_counts.tsv");
  REQUIRE(in);
  std::map<std::string, std::string> counts;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string version, file, count;
    std::getline(fields, version, '\t');
    std::getline(fields, file, '\t');
    std::getline(fields, count, '\t');
    counts[version + "/" + file] = count;
  }
  return counts;
}

masr::testing::CliResult dry_run(const std::string& file) {
  // Every placeholder these files have, filled as a user would.
  return masr::testing::run_cli("train " + kRoot + "/" + file +
                                " --dry-run --strict --data_folder /tmp/LibriSpeech");
}

}  // namespace

TEST_CASE("SpeechBrain's LibriSpeech recipes load with SpeechBrain's parameter counts",
          "[cli][speechbrain]") {
  const auto counts = upstream_counts();
  REQUIRE(counts.size() >= 12);
  for (const auto& [file, count] : counts) {
    INFO(file);
    const auto r = dry_run(file);
    INFO(r.output);
    CHECK(r.code == 0);
    CHECK_THAT(r.output, Catch::Contains("  model: ") &&
                             Catch::Contains("[built]  " + with_thousands(count) + " parameters"));
  }
}

TEST_CASE("SpeechBrain recipes outside the supported families say which ones load",
          "[cli][speechbrain]") {
  for (const char* file : {"main/ASR/CTC/hparams/train_hf_wav2vec.yaml",
                           "main/ASR/CTC/hparams/train_sb_wav2vec.yaml",
                           "main/ASR/seq2seq/hparams/train_BPE_1000.yaml",
                           "main/LM/hparams/RNNLM.yaml"}) {
    INFO(file);
    const auto r = dry_run(file);
    CHECK(r.code != 0);
    CHECK_THAT(r.output, Catch::Contains("supported SpeechBrain recipe families"));
  }
  const auto hyper = dry_run("v1.0.0/ASR/transformer/hparams/hyperconformer_8M.yaml");
  CHECK(hyper.code != 0);
  CHECK_THAT(hyper.output, Catch::Contains("HyperConformer and HyperBranchformer recipes are not "
                                           "supported"));
}

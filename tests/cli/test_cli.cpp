// tests/cli/test_cli.cpp
// Runs the mamba-asr binary as a user would and checks exit codes and messages.
#include "run_cli.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using Result = masr::testing::CliResult;

Result run(const std::string& args) { return masr::testing::run_cli(args); }

const std::string kFixtures = MASR_TEST_FIXTURES;

}  // namespace

TEST_CASE("the --help flag lists the subcommands and exits 0", "[cli]") {
  const Result r = run("--help");
  CHECK(r.code == 0);
  for (const char* sub : {"train", "decode", "bench", "detect", "features"}) {
    CHECK_THAT(r.output, Catch::Contains(sub));
  }
}

TEST_CASE("every subcommand's --help teaches with an example", "[cli]") {
  for (const char* sub : {"train", "decode", "bench", "detect", "features"}) {
    const Result r = run(std::string(sub) + " --help");
    INFO(sub << ": " << r.output);
    CHECK(r.code == 0);
    CHECK_THAT(r.output, Catch::Contains("Examples:"));
    CHECK_THAT(r.output, Catch::Contains(std::string("mamba-asr ") + sub));
  }
}

TEST_CASE("the --version flag names the version, the commit and LibTorch", "[cli]") {
  const Result r = run("--version");
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("mamba-asr 0."));
  CHECK_THAT(r.output, Catch::Contains("commit"));
  CHECK_THAT(r.output, Catch::Contains("LibTorch"));
  CHECK_THAT(r.output, Catch::Contains("CUDA:"));
  CHECK_THAT(r.output, Catch::Contains("MPS:"));
}

TEST_CASE("an unknown option or a missing argument prints the usage and exits 2", "[cli]") {
  Result r = run("--no-such-option");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("no-such-option"));
  CHECK_THAT(r.output, Catch::Contains("Usage"));

  r = run("decode --model");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("Usage"));

  // --model may be left out (the bundled model); the inputs may not.
  r = run("decode");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("inputs is required") && Catch::Contains("INPUTS"));

  r = run("features --format wav a.wav --out x");
  CHECK(r.code == 2);

  r = run("no-such-command");
  CHECK(r.code == 2);

  r = run("");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("Usage"));
}

TEST_CASE("global options are validated", "[cli]") {
  Result r = run("--device tpu detect");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("--device 'tpu'"));

  r = run("--device cuda:3 detect");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("CUDA"));

  r = run("--threads -1 detect");
  CHECK(r.code == 2);

  r = run("--device cpu --threads 1 -q detect --json");
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("\"intra_op_threads\": 1"));
  CHECK_THAT(r.output, Catch::Contains("\"logical_cores\""));
  CHECK_THAT(r.output, Catch::Contains("\"device\": \"cpu\""));
}

TEST_CASE("train --dry-run resolves a file and prints YAML and a summary", "[cli]") {
  const Result r = run("train " + kFixtures + "/hparams/every_construct.yaml --dry-run --seed 11");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("seed: 11"));
  CHECK_THAT(r.output, Catch::Contains("output_folder: results/demo/11"));
  CHECK_THAT(r.output, Catch::Contains("n_warmup_steps: 3750"));
  CHECK_THAT(r.output, Catch::Contains("Resolved "));
}

TEST_CASE("train --dry-run with an unset !PLACEHOLDER names the key", "[cli]") {
  const Result r = run("train " + kFixtures + "/hparams/placeholder.yaml --dry-run");
  CHECK(r.code == 3);
  CHECK_THAT(r.output, Catch::Contains("'data_folder' is a !PLACEHOLDER"));
  CHECK_THAT(r.output, Catch::Contains("--data_folder"));

  const Result ok =
      run("train " + kFixtures + "/hparams/placeholder.yaml --dry-run --data_folder /d");
  CHECK(ok.code == 0);
  CHECK_THAT(ok.output, Catch::Contains("train_csv: /d/train.csv"));
}

TEST_CASE("train reports hparams errors with the file and exit code 3", "[cli]") {
  Result r = run("train /nonexistent/file.yaml --dry-run");
  CHECK(r.code == 3);
  CHECK_THAT(r.output, Catch::Contains("/nonexistent/file.yaml"));

  r = run("train " + kFixtures +
          "/hparams/placeholder.yaml --dry-run --data_folder /d --no_such_key 1");
  CHECK(r.code == 3);
  CHECK_THAT(r.output, Catch::Contains("'no_such_key' matches no top-level key"));

  r = run("train " + kFixtures + "/hparams/placeholder.yaml --dry-run --data_folder");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("needs a value"));
}

TEST_CASE("decode with a missing model names the file and exits 1", "[cli]") {
  const Result r = run("decode --model /nonexistent/m.masr a.wav");
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains("/nonexistent/m.masr"));
}

TEST_CASE("decode of inputs that name no audio is an error, not an empty run", "[cli]") {
  const std::string model = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";
  const std::string empty = std::string(MASR_BINARY_DIR) + "/empty_decode_inputs";
  std::filesystem::create_directories(empty);
  std::ofstream(empty + "/list.txt").close();
  std::ofstream(empty + "/rows.csv") << "ID,duration,wav,spk_id,wrd\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {empty, "name no audio"},  // a folder with no audio file in it
      {"@" + empty + "/list.txt", "empty file"},
      {empty + "/rows.csv", "a header but no rows"}};
  for (const auto& [arg, message] : cases) {
    const Result r = run("decode --model " + model + " " + arg);
    INFO(arg << ": " << r.output);
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Catch::Contains(message));
  }
}

TEST_CASE("train --nproc with a bad value is a usage error", "[cli]") {
  const std::string yaml = kFixtures + "/hparams/placeholder.yaml --data_folder /d";
  Result r = run("train --nproc 0 " + yaml);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("--nproc 0 must be at least 1"));

  r = run("train --nproc two " + yaml);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("--nproc"));

  setenv("WORLD_SIZE", "2", 1);  // as in a process torchrun started
  r = run("train --nproc 2 " + yaml);
  unsetenv("WORLD_SIZE");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("--nproc is given but WORLD_SIZE is set"));
}

TEST_CASE("train names the keys nothing reads, and --strict refuses them", "[cli]") {
  // A recipe of the repository with two keys of its own: one that nothing reads, and one that
  // only the first refers to.
  const masr::testing::CliScratch scratch("unread");
  const std::string dir = scratch.file("");
  std::ifstream in(std::string(MASR_SOURCE_DIR) + "/hparams/CTC/conmamba_tiny.yaml");
  std::stringstream text;
  text << in.rdbuf() << "\nbase_rate: 7\nforgotten_rate: !ref <base_rate> * 2\n";
  const std::string file = scratch.write("tiny.yaml", text.str());
  Result r = run("train " + file + " --dry-run --data_folder " + dir);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("read by no object and not by mamba-asr's trainer"));
  CHECK_THAT(r.output, Catch::Contains("base_rate, forgotten_rate"));
  r = run("train " + file + " --dry-run --strict --data_folder " + dir);
  CHECK(r.code == 3);
  CHECK_THAT(r.output, Catch::Contains("forgotten_rate"));
  CHECK_THAT(r.output, Catch::Contains("--strict"));
  // Every file of the repository: nothing unknown (the keys for data preparation, the test stage
  // and beam search are named on a line of their own).
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(MASR_SOURCE_DIR) + "/hparams")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    // The bundle's LM recipe names the bundle's tokenizer as a placeholder of its own.
    const std::string tokenizer = entry.path().filename() == "transformer_synth_bundle.yaml"
                                      ? " --tokenizer_file " + dir + "/tokenizer.model"
                                      : "";
    r = run("train " + entry.path().string() + " --dry-run --strict --data_folder " + dir +
            tokenizer);
    CHECK(r.code == 0);
    CHECK_THAT(r.output, !Catch::Contains("read by no object"));
  }
  r = run("train " + std::string(MASR_SOURCE_DIR) +
          "/hparams/S2S/conmamba_large.yaml --dry-run --data_folder " + dir);
  CHECK_THAT(r.output, Catch::Contains("for data preparation, the test stage, beam search") &&
                           Catch::Contains("test_csv"));
}

TEST_CASE("bench train-step --shapes-from times each batch shape of a run and sums them", "[cli]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("masr-shapes-from-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string tiny = std::string(MASR_SOURCE_DIR) + "/hparams/CTC/conmamba_tiny.yaml";
  const std::string good = (dir / "batch_shapes.tsv").string();
  // Two shape keys as train writes them (CTC inputs: features, lengths, targets): 3 batches of
  // 2 x 101 frames with 4 targets, 1 batch of 1 x 51 frames with 3.
  std::ofstream(good) << "# epoch 1, rank 0\n"
                      << "3\t/0x1p+0|Float,2,101,80|Long,2,2|Long,2,4\n"
                      << "1\t/0x1p+0|Float,1,51,80|Long,2,1|Long,1,3\n";
  const Result r = run("bench train-step --hparams " + tiny + " --shapes-from " + good +
                       " --warmup 0 --repeat 2 --json");
  INFO(r.output);
  REQUIRE(r.code == 0);
  // 101 frames are 1 s of audio (10 ms hop), 51 frames 0.5 s: the work of each step.
  CHECK_THAT(r.output, Catch::Contains("\"name\":\"train-step/fp32/b2/t101/u4\""));
  CHECK_THAT(r.output, Catch::Contains("\"work\":2.0"));
  CHECK_THAT(r.output, Catch::Contains("\"name\":\"train-step/fp32/b1/t51/u3\""));
  CHECK_THAT(r.output, Catch::Contains("\"work\":0.5"));
  CHECK_THAT(r.output, Catch::Contains("\"name\":\"train-step/shapes-from\""));
  CHECK_THAT(r.output, Catch::Contains("4 batches of 2 shapes"));
  const std::string bad = (dir / "bad.tsv").string();
  std::ofstream(bad) << "3\tnot a key\n";
  const Result b = run("bench train-step --hparams " + tiny + " --shapes-from " + bad +
                       " --warmup 0 --repeat 1");
  CHECK(b.code != 0);
  CHECK_THAT(b.output, Catch::Contains("bad.tsv:1: expected \"batches<TAB>shape key\""));
  std::filesystem::remove_all(dir);
}

// tests/cli/test_options_cli.cpp
// One option style across subcommands: help pages (usage first, global options everywhere, no
// library artefacts), `help SUBCOMMAND`, "did you mean", -m/--model and -o/--output with their
// older spellings, warnings for options a mode ignores, exit codes, passive OpenMP waiting.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_cli.h"

using masr::testing::run_cli;

namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";
const std::string kWav = kModel + "/examples/en_us_nyc_m4-000499.wav";
const std::vector<std::string> kSubcommands = {"train",  "decode",   "stream",  "bench",
                                               "detect", "features", "prepare", "ngram",
                                               "import", "convert"};

size_t lines_of(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

using Scratch = masr::testing::CliScratch;

}  // namespace

TEST_CASE("the top-level help is short: usage first, one line per subcommand", "[cli][help]") {
  const auto r = run_cli("--help");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.rfind("Usage: mamba-asr ", 0) == 0);
  CHECK(lines_of(r.output) <= 40);
  for (const std::string& sub : kSubcommands) {
    // "  decode    Transcribe audio ...": the name and the first line of its description.
    CHECK_THAT(r.output, Catch::Contains("\n  " + sub + " "));
  }
  // Each summary is a whole sentence: the block from "Subcommands:" to the next blank line
  // has no line that ends in a comma or an open parenthesis (a description cut mid-sentence).
  const size_t from = r.output.find("\nSubcommands:\n");
  REQUIRE(from != std::string::npos);
  const std::string block = r.output.substr(from, r.output.find("\n\n", from + 1) - from);
  CHECK(block.find(",\n") == std::string::npos);
  CHECK(block.find("(\n") == std::string::npos);
  CHECK_THAT(r.output, Catch::Contains("--threads"));
  CHECK_THAT(r.output, Catch::Contains("mamba-asr help SUBCOMMAND"));
  // `help` alone is the same page.
  CHECK(run_cli("help").output == r.output);
}

TEST_CASE("every subcommand's help: usage first, its options, the global ones, no artefacts",
          "[cli][help]") {
  for (const std::string& sub : kSubcommands) {
    const auto r = run_cli(sub + " --help");
    INFO(sub << ":\n" << r.output);
    CHECK(r.code == 0);
    CHECK(r.output.rfind("Usage: mamba-asr " + sub + " ", 0) == 0);
    CHECK_THAT(r.output, Catch::Contains("Global options:"));
    for (const char* global : {"--threads", "--device", "--verbose", "--quiet"}) {
      CHECK_THAT(r.output, Catch::Contains(global));
    }
    // CLI11's own marks: negated flags' "{false}", validators' "INT in [1 - 1000]" and
    // "TEXT:{a,b}" choice lists beside the description's own.
    CHECK(r.output.find("{false}") == std::string::npos);
    CHECK(r.output.find(" in [") == std::string::npos);
    CHECK(r.output.find(":{") == std::string::npos);
    CHECK(r.output.find("UINT") == std::string::npos);
    // `help SUBCOMMAND` is the same page.
    CHECK(run_cli("help " + sub).output == r.output);
  }
  const auto decode = run_cli("decode --help");
  CHECK_THAT(decode.output, Catch::Contains("--chunk-context"));
  CHECK_THAT(decode.output, Catch::Contains("--beam N [10]"));
}

TEST_CASE("did you mean: mistyped subcommands and options", "[cli][help]") {
  auto r = run_cli("decod x.wav");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown subcommand 'decod'. Did you mean 'decode'?"));
  r = run_cli("help strem");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("Did you mean 'stream'?"));
  r = run_cli("decode -m " + kModel + " --bem 4 " + kWav);
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown option '--bem' for 'decode'. Did you mean "
                                       "'--beam'?"));
  r = run_cli("detect --thread 2");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("Did you mean '--threads'?"));
  r = run_cli("--devise cpu detect");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("Did you mean '--device'?"));
}

TEST_CASE("model and output options: -m/--model takes a file or a folder, -o/--output "
          "writes, old spellings still work",
          "[cli][options]") {
  Scratch dir;
  // convert: -m FOLDER -o FILE, and the older positional IN OUT.
  auto r = run_cli("-q convert -m " + kModel + " -o " + dir.file("a.masr"));
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(fs::exists(dir.file("a.masr")));
  r = run_cli("-q convert " + kModel + "/model.masr " + dir.file("b.masr") + " --weights fp32");
  CHECK(r.code == 0);
  CHECK(fs::exists(dir.file("b.masr")));
  r = run_cli("convert -m " + kModel);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("-o/--output"));
  // detect: -m FOLDER sizes the profile like the model file does.
  const auto folder = run_cli("detect -m " + kModel + " --json");
  const auto file = run_cli("detect --model " + kModel + "/model.masr --json");
  CHECK(folder.code == 0);
  CHECK(file.code == 0);
  CHECK_THAT(folder.output, Catch::Contains("\"parameters\""));
  // features: -o/--output, and --out as before.
  r = run_cli("features " + kWav + " -o " + dir.file("f1.npy"));
  CHECK(r.code == 0);
  r = run_cli("features " + kWav + " --out " + dir.file("f2.npy"));
  CHECK(r.code == 0);
  CHECK(fs::exists(dir.file("f1.npy")));
  CHECK(fs::exists(dir.file("f2.npy")));
  // Older spellings work but are not advertised.
  CHECK(run_cli("features --help").output.find("--out ") == std::string::npos);
}

TEST_CASE("options with no effect warn; --lm with an ARPA file points at --arpa",
          "[cli][options]") {
  Scratch dir;
  { std::ofstream(dir.file("text.txt")) << "IT IS A PERIOD OF SYSTEM WAR\nIT IS\n"; }
  const std::string arpa = dir.file("lm.arpa");
  REQUIRE(run_cli("-q ngram --order 2 -o " + arpa + " " + dir.file("text.txt")).code == 0);
  const std::string decode = "decode -m " + kModel + " ";
  auto r = run_cli(decode + "--search greedy --arpa " + arpa + " --beam 50 " + kWav);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("--beam has no effect here (--search greedy"));
  CHECK_THAT(r.output, Catch::Contains("--arpa has no effect here (--search greedy"));
  CHECK(r.output.find("ARPA LM") == std::string::npos);  // the header names no unused LM
  r = run_cli(decode + "--format json --cue-chars 20 " + kWav);
  CHECK_THAT(r.output, Catch::Contains("--cue-chars has no effect here"));
  // Used, the LM is named in the header; nothing is warned about.
  r = run_cli(decode + "--search ctc-beam --arpa " + arpa + " --beam 4 " + kWav);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("decoding 1 utterance with ctc-beam search and the ARPA "
                                       "LM " +
                                       arpa));
  CHECK(r.output.find("no effect") == std::string::npos);
  // rescore ranks the n-best of that same CTC search, the n-gram steering it: used there too.
  const std::string s2s = std::string(MASR_SOURCE_DIR) + "/models/conmamba-s2s-synth-en";
  r = run_cli("decode -m " + s2s + " --search rescore --arpa " + arpa +
              " --arpa-weight 0.8 --word-bonus 1 --unk-offset -5 --beam 4 " + kWav);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("with rescore search and the ARPA LM " + arpa));
  CHECK(r.output.find("no effect") == std::string::npos);
  // --lm takes a neural LM: an ARPA file there is a usage error naming --arpa.
  r = run_cli(decode + "--search ctc-beam --lm " + arpa + " " + kWav);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("give it as --arpa " + arpa));
  // A search the model cannot run is a command-line error (exit 2), as docs/cli.md says.
  r = run_cli(decode + "--search s2s " + kWav);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Catch::Contains("needs an attention decoder"));
}

TEST_CASE("counts read as English: 1 utterance, 2 utterances", "[cli][options]") {
  auto r = run_cli("decode -m " + kModel + " " + kWav);
  CHECK_THAT(r.output, Catch::Contains("decoding 1 utterance with"));
  r = run_cli("decode -m " + kModel + " " + kWav + " " + kModel +
              "/examples/en_gb_x_gbcwmd_m5-002757.wav");
  CHECK_THAT(r.output, Catch::Contains("decoding 2 utterances with"));
}

TEST_CASE("OpenMP threads wait passively unless the environment says otherwise", "[cli][threads]") {
  // libgomp prints its settings with OMP_DISPLAY_ENV; the policy is read when it loads.
  auto r = run_cli("--version", "OMP_DISPLAY_ENV=true");
  INFO(r.output);
  CHECK_THAT(r.output, Catch::Contains("OMP_WAIT_POLICY = 'PASSIVE'"));
  r = run_cli("--version", "OMP_DISPLAY_ENV=true OMP_WAIT_POLICY=active");
  CHECK_THAT(r.output, Catch::Contains("OMP_WAIT_POLICY = 'ACTIVE'"));
}

TEST_CASE("detect, its profile and decode --threads auto agree on the thread counts",
          "[cli][threads]") {
  const auto r = run_cli("--device cpu detect --json");
  REQUIRE(r.code == 0);
  const size_t begin = r.output.find('{'), end = r.output.rfind('}');
  REQUIRE(end != std::string::npos);
  const auto j = nlohmann::json::parse(r.output.substr(begin, end - begin + 1));
  const int most = j.at("cpu").at("auto_threads_max").get<int>();
  CHECK(most == j.at("profile").at("intra_op_threads").get<int>());
  REQUIRE(most >= 1);
  // The table says both the count now and the profile's.
  const auto table = run_cli("--threads 1 --device cpu detect");
  CHECK_THAT(table.output, Catch::Contains("1 intra-op / ") &&
                               Catch::Contains("profile: " + std::to_string(most) +
                                               " (decode --threads auto measures 1 to " +
                                               std::to_string(most) + ")"));
  // decode --threads auto without a cached plan (an empty cache folder) measures 1 to `most`
  // threads and takes one of them, or, when other processes keep every other CPU busy (other
  // tests run beside this one), takes 1 without timing.
  const auto decode = run_cli("--threads auto --device cpu decode -m " + kModel + " " + kWav,
                              "XDG_CACHE_HOME=/nonexistent-masr-cache");
  INFO(decode.output);
  CHECK(decode.code == 0);
  const std::regex line(
      R"(auto: (\d+) threads? \((measured: 1 thread \d+ ms|every other CPU is busy))");
  std::smatch m;
  REQUIRE(std::regex_search(decode.output, m, line));
  CHECK(std::stoi(m[1]) >= 1);
  CHECK(std::stoi(m[1]) <= most);
  if (m[2] == "every other CPU is busy") CHECK(std::stoi(m[1]) == 1);
}

// tests/data/test_synth_corpus.cpp
// scripts/make_synth_corpus.sh end to end on ~20 utterances: CSV columns, durations against the
// WAV files, speaker-disjoint splits, determinism across runs, resumption, and option errors.
#include <sndfile.h>
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "core/remove_tree.h"

namespace fs = std::filesystem;

namespace {

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) result.output += buffer.data();
  const int raw = ::pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::vector<std::string>> read_csv(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    REQUIRE(line.find('"') == std::string::npos);  // nothing needs quoting in this corpus
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

std::string make_corpus(const fs::path& out, int seed) {
  const std::string cmd = std::string(MASR_SOURCE_DIR) + "/scripts/make_synth_corpus.sh --out " +
                          out.string() + " --utterances 20 --seed " + std::to_string(seed) +
                          " --jobs 2";
  auto result = run(cmd);
  INFO(result.output);
  REQUIRE(result.status == 0);
  return result.output;
}

const char* kSplits[] = {"train", "valid", "test"};

}  // namespace

TEST_CASE("make_synth_corpus.sh: CSVs, durations, speaker split, determinism, resume", "[synth]") {
  const fs::path root = fs::temp_directory_path() / ("masr_synth_" + std::to_string(::getpid()));
  masr::remove_tree(root);
  const fs::path a = root / "a", b = root / "b";
  make_corpus(a, 3);
  make_corpus(b, 3);

  std::map<std::string, std::set<std::string>> speakers;
  size_t total = 0;
  const std::regex words("^[A-Z']+( [A-Z']+)*$");
  for (const char* split : kSplits) {
    auto rows = read_csv(a / (std::string(split) + ".csv"));
    REQUIRE(!rows.empty());
    CHECK(rows[0] == std::vector<std::string>{"ID", "duration", "wav", "spk_id", "wrd"});
    CHECK(rows.size() >= 2);  // every split gets utterances, even in a tiny corpus
    for (size_t i = 1; i < rows.size(); ++i) {
      const auto& r = rows[i];
      REQUIRE(r.size() == 5);
      INFO(r[0]);
      SF_INFO info{};
      SNDFILE* f = sf_open(r[2].c_str(), SFM_READ, &info);
      REQUIRE(f != nullptr);
      sf_close(f);
      CHECK(info.samplerate == 16000);
      CHECK(info.channels == 1);
      CHECK((info.format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_16);
      CHECK(std::stod(r[1]) == Approx(info.frames / 16000.0).margin(1e-9));
      CHECK(std::stod(r[1]) > 0.3);
      CHECK(std::regex_match(r[4], words));
      CHECK(fs::path(r[2]).parent_path().filename() == split);
      speakers[split].insert(r[3]);
      ++total;
    }
    // Same seed, other folder: the same CSV up to the folder, and bit-identical audio.
    std::string csv_a = read_text(a / (std::string(split) + ".csv"));
    std::string csv_b = read_text(b / (std::string(split) + ".csv"));
    csv_b = std::regex_replace(csv_b, std::regex(b.string()), a.string());
    CHECK(csv_a == csv_b);
    for (size_t i = 1; i < rows.size(); ++i) {
      const std::string other = std::regex_replace(rows[i][2], std::regex(a.string()), b.string());
      CHECK(read_text(rows[i][2]) == read_text(other));
    }
  }
  CHECK(total == 20);
  for (const auto& s : speakers["test"]) {
    CHECK(speakers["train"].count(s) == 0);
    CHECK(speakers["valid"].count(s) == 0);
  }
  for (const auto& s : speakers["valid"]) CHECK(speakers["train"].count(s) == 0);

  // Resume: a second run into the same folder keeps every WAV and writes the same CSVs.
  const auto first_wav = read_csv(a / "train.csv")[1][2];
  const auto stamp = fs::last_write_time(first_wav);
  const std::string before = read_text(a / "train.csv");
  make_corpus(a, 3);
  CHECK(fs::last_write_time(first_wav) == stamp);
  CHECK(read_text(a / "train.csv") == before);

  // Another seed gives another corpus.
  make_corpus(b, 4);
  CHECK(read_text(b / "train.csv") != before);
  masr::remove_tree(root);
}

TEST_CASE("make_synth_corpus.sh: option errors name the option", "[synth]") {
  const std::string script = std::string(MASR_SOURCE_DIR) + "/scripts/make_synth_corpus.sh";
  auto unknown = run(script + " --out /tmp/x --bogus 1");
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.output, Catch::Contains("unknown option '--bogus'"));
  auto no_out = run(script + " --seed 1");
  CHECK(no_out.status == 2);
  CHECK_THAT(no_out.output, Catch::Contains("--out DIR is required"));
  auto bad_seed = run(script + " --out /tmp/x --seed abc");
  CHECK(bad_seed.status == 2);
  CHECK_THAT(bad_seed.output, Catch::Contains("--seed 'abc'"));
}

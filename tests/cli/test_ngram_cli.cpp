// tests/cli/test_ngram_cli.cpp
// `mamba-asr ngram`: an ARPA file from text and CSV input, and its errors.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_cli.h"

using masr::testing::run_cli;
namespace fs = std::filesystem;

TEST_CASE("ngram writes an ARPA file from text and CSV", "[cli][ngram]") {
  const fs::path dir = fs::temp_directory_path() / ("masr_ngram_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.txt") << "the cat sat\nthe dog\n\n";
  std::ofstream(dir / "b.csv") << "ID,duration,wav,spk_id,wrd\nu1,1.0,x.wav,s,THE CAT RAN\n";
  const auto out = run_cli("ngram --order 2 -o " + (dir / "lm.arpa").string() + " " +
                           (dir / "a.txt").string() + " " + (dir / "b.csv").string());
  INFO(out.output);
  CHECK(out.code == 0);
  std::ifstream in(dir / "lm.arpa");
  std::stringstream text;
  text << in.rdbuf();
  // the cat sat dog THE CAT RAN </s> <unk> <s>
  CHECK(text.str().find("ngram 1=10\n") != std::string::npos);
  CHECK(text.str().find("\tTHE CAT") != std::string::npos);

  const auto bad = run_cli("ngram -o /nonexistent/dir/lm.arpa " + (dir / "a.txt").string());
  CHECK(bad.code != 0);
  CHECK_THAT(
      bad.output,
      Catch::Contains(
          "cannot write '/nonexistent/dir/lm.arpa': folder '/nonexistent/dir' does not exist"));
  const auto empty = run_cli("ngram -o " + (dir / "x.arpa").string() + " /dev/null");
  CHECK(empty.code != 0);
  CHECK_THAT(empty.output, Catch::Contains("the text has no words"));
  const auto order =
      run_cli("ngram --order 0 -o " + (dir / "x.arpa").string() + " " + (dir / "a.txt").string());
  CHECK(order.code != 0);
  CHECK_THAT(order.output, Catch::Contains("order must be >= 1, got 0"));
  fs::remove_all(dir);
}

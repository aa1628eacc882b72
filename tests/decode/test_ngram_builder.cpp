// tests/decode/test_ngram_builder.cpp
// The Kneser-Ney ARPA builder read back with ArpaLm: normalization of every seen context and
// equality with an independent Python implementation (tests/decode/kneser_ney_reference.py).
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "core/error.h"
#include "decode/arpa_lm.h"
#include "decode/ngram_builder.h"
#include "core/remove_tree.h"

using masr::decode::ArpaLm;
using masr::decode::build_kneser_ney_arpa;
using masr::decode::NgramBuildOptions;
namespace fs = std::filesystem;

namespace {

// Sentences of 1-8 words over a 10-word vocabulary with skewed frequencies (fixed seed).
std::vector<std::string> random_text(int sentences, uint32_t seed) {
  const std::vector<std::string> words = {"the", "a",   "cat", "dog", "sat",
                                          "on",  "mat", "ran", "to",  "it"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int s = 0; s < sentences; ++s) {
    const int n = 1 + static_cast<int>(rng() % 8);
    std::string sentence;
    for (int i = 0; i < n; ++i) {
      const uint32_t r = rng() % 100;
      const size_t w = r < 30 ? r % 3 : r < 70 ? 3 + r % 4 : 7 + r % 3;
      sentence += (i ? " " : "") + words[w];
    }
    out.push_back(sentence);
  }
  return out;
}

struct Reference {
  std::map<std::string, std::vector<std::pair<std::string, double>>> by_context;
};

// Runs the Python reference on `sentences` and returns P(w | h) per context ("" for none).
Reference python_reference(const std::vector<std::string>& sentences, int order,
                           const std::string& discounts) {
  const fs::path dir = fs::temp_directory_path() / ("masr_kn_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream text(dir / "text.txt");
    for (const auto& s : sentences) text << s << "\n";
  }
  const std::string cmd = "/usr/bin/python3 " MASR_SOURCE_DIR
                          "/tests/decode/kneser_ney_reference.py " +
                          (dir / "text.txt").string() + " " + std::to_string(order) + " " +
                          discounts + " > " + (dir / "probs.tsv").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  Reference ref;
  std::ifstream in(dir / "probs.tsv");
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find('\t'), b = line.find('\t', a + 1);
    ref.by_context[line.substr(0, a)].emplace_back(line.substr(a + 1, b - a - 1),
                                                   std::stod(line.substr(b + 1)));
  }
  masr::remove_tree(dir);
  return ref;
}

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Every seen context's distribution sums to 1 and equals the reference, within 1e-6.
void check_against_reference(const std::vector<std::string>& sentences, int order,
                             const std::vector<double>& discounts) {
  NgramBuildOptions options;
  options.order = order;
  options.discounts = discounts;
  const ArpaLm lm = ArpaLm::from_string(build_kneser_ney_arpa(sentences, options), "built");
  REQUIRE(lm.order() == order);
  std::string args;
  for (double d : discounts) args += std::to_string(d) + " ";
  const Reference ref = python_reference(sentences, order, args);
  REQUIRE(ref.by_context.size() > (order == 1 ? 0u : 10u));
  for (const auto& [context, probs] : ref.by_context) {
    const std::vector<std::string> history = split(context);
    double sum = 0.0;
    for (const auto& [word, expected] : probs) {
      const double p = std::exp(lm.log_prob(history, word));
      sum += p;
      INFO("P(" << word << " | " << context << ")");
      CHECK(p == Approx(expected).margin(1e-6));
    }
    INFO("context '" << context << "'");
    CHECK(sum == Approx(1.0).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("Kneser-Ney ARPA equals the Python reference, estimated discounts", "[ngram]") {
  // Order 3 has counts of counts 1..4 (Chen & Goodman's estimates); the unigrams' continuation
  // counts are all large, so that order uses the fallback discounts.
  for (int order : {1, 2, 3, 4}) {
    INFO("order " << order);
    check_against_reference(random_text(300, 7), order, {});
  }
}

TEST_CASE("Kneser-Ney ARPA equals the Python reference, fixed discounts", "[ngram]") {
  check_against_reference({"a b c", "a b", "b c a b", "c", "a a a b"}, 3, {0.4, 0.9, 1.2});
}

TEST_CASE("Kneser-Ney ARPA layout", "[ngram]") {
  masr::decode::NgramBuildSummary summary;
  const std::string arpa = build_kneser_ney_arpa({"a b", "b a"}, NgramBuildOptions{}, &summary);
  // Unigrams: a b </s> <unk> <s>; bigrams: <s> a, <s> b, a b, b a, a </s>, b </s>; trigrams:
  // <s> a b, <s> b a, a b </s>, b a </s>.
  CHECK(summary.counts == std::vector<size_t>{5, 6, 4});
  CHECK(arpa.rfind("\\data\\\nngram 1=5\nngram 2=6\nngram 3=4\n", 0) == 0);
  CHECK(arpa.find("-99\t<s>\t") != std::string::npos);
  CHECK(arpa.size() > 20);
  CHECK(arpa.substr(arpa.size() - 6) == "\\end\\\n");
  const ArpaLm lm = ArpaLm::from_string(arpa, "layout");
  // <unk> only has the uniform share of the unigram mass, below every seen word.
  CHECK(lm.log_prob({}, "<unk>") < lm.log_prob({}, "a"));
  CHECK(lm.log_prob({}, "zebra") == Approx(lm.log_prob({}, "<unk>")));
}

TEST_CASE("Kneser-Ney builder errors", "[ngram]") {
  NgramBuildOptions options;
  CHECK_THROWS_WITH(build_kneser_ney_arpa({"", "  "}, options),
                    Catch::Contains("the text has no words (2 sentences, all empty)"));
  CHECK_THROWS_WITH(build_kneser_ney_arpa({}, options), Catch::Contains("the text has no words"));
  CHECK_THROWS_WITH(build_kneser_ney_arpa({"a", "x </s> y"}, options),
                    Catch::Contains("sentence 2 contains '</s>'"));
  options.order = 0;
  CHECK_THROWS_WITH(build_kneser_ney_arpa({"a"}, options),
                    Catch::Contains("order must be >= 1, got 0"));
  options.order = 3;
  options.discounts = {0.5, 1.0};
  CHECK_THROWS_WITH(build_kneser_ney_arpa({"a"}, options),
                    Catch::Contains("--discount takes 3 values (D1, D2, D3+), got 2"));
  options.discounts = {0.5, 2.5, 1.0};
  CHECK_THROWS_WITH(build_kneser_ney_arpa({"a"}, options),
                    Catch::Contains("discount D2 must be in (0, 2], got 2.5"));
}

// tests/decode/test_arpa_lm.cpp
// ARPA parsing and back-off scoring on a hand-made bigram file, and every parse error.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "decode/arpa_lm.h"

using masr::decode::ArpaLm;

namespace {
const char* kBigram =
    "some header text\n"
    "\\data\\\n"
    "ngram 1=4\n"
    "ngram 2=2\n"
    "\n"
    "\\1-grams:\n"
    "-1.0\t<s>\t-0.5\n"
    "-0.5 a -0.3\n"
    "-0.7 b\n"
    "-1.2 </s>\n"
    "\n"
    "\\2-grams:\n"
    "-0.2 <s> a\n"
    "-0.4 a b\n"
    "\n"
    "\\end\\\n";
}  // namespace

TEST_CASE("ARPA bigram scores with back-off", "[decode]") {
  const ArpaLm lm = ArpaLm::from_string(kBigram, "bigram.arpa");
  const double ln10 = std::log(10.0);
  CHECK(lm.order() == 2);
  CHECK(lm.counts() == std::vector<size_t>{4, 2});
  CHECK(lm.contains("a"));
  CHECK_FALSE(lm.contains("zzz"));
  // log10 table:  P(a|<s>) = -0.2 (bigram)         P(b|a) = -0.4 (bigram)
  //               P(a|b)   = 0 (b has no back-off) + -0.5 = -0.5
  //               P(b|<s>) = -0.5 (<s> back-off) + -0.7 = -1.2
  //               P(</s>|a) = -0.3 + -1.2 = -1.5;  P(a) with no context = -0.5
  //               P(zzz|a) = -0.3 + -100 (no <unk> in the file)
  CHECK(lm.log_prob({"<s>"}, "a") == Approx(-0.2 * ln10));
  CHECK(lm.log_prob({"<s>", "a"}, "b") == Approx(-0.4 * ln10));
  CHECK(lm.log_prob({"b"}, "a") == Approx(-0.5 * ln10));
  CHECK(lm.log_prob({"<s>"}, "b") == Approx(-1.2 * ln10));
  CHECK(lm.log_prob({"a"}, "</s>") == Approx(-1.5 * ln10));
  CHECK(lm.log_prob({}, "a") == Approx(-0.5 * ln10));
  CHECK(lm.log_prob({"a"}, "zzz") == Approx(-100.3 * ln10));
  const ArpaLm with_unk = ArpaLm::from_string(
      "\\data\\\nngram 1=2\n\\1-grams:\n-2.5 <unk>\n-1 a\n\\end\\\n", "unk.arpa");
  CHECK(with_unk.log_prob({"a"}, "zzz") == Approx(-2.5 * ln10));
  // The vocabulary and its prefixes, for a beam search's partial words: <s>, </s> and <unk> are
  // not words.
  CHECK(lm.in_vocabulary("a"));
  CHECK_FALSE(lm.in_vocabulary("<s>"));
  CHECK_FALSE(lm.in_vocabulary("zzz"));
  CHECK_FALSE(with_unk.in_vocabulary("<unk>"));
  CHECK(lm.is_word_prefix(""));
  CHECK(lm.is_word_prefix("a"));
  CHECK(lm.is_word_prefix("b"));
  CHECK_FALSE(lm.is_word_prefix("ab"));
  CHECK_FALSE(lm.is_word_prefix("<"));
  const ArpaLm words = ArpaLm::from_string(
      "\\data\\\nngram 1=2\n\\1-grams:\n-1 cat\n-1 cart\n\\end\\\n", "words.arpa");
  for (const char* prefix : {"c", "ca", "cat", "car", "cart"}) CHECK(words.is_word_prefix(prefix));
  CHECK_FALSE(words.is_word_prefix("cats"));
  CHECK_FALSE(words.is_word_prefix("at"));
}

TEST_CASE("ARPA files load from disk; errors name the file, line and reason", "[decode]") {
  const std::string path = "test_arpa_lm_tmp.arpa";
  {
    std::ofstream out(path);
    out << kBigram;
  }
  CHECK(ArpaLm::from_file(path).log_prob({"a"}, "b") == Approx(-0.4 * std::log(10.0)));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(ArpaLm::from_file("no/such.arpa"),
                    Catch::Contains("cannot open ARPA file 'no/such.arpa'"));
  auto error = [](const std::string& text) {
    try {
      ArpaLm::from_string(text, "bad.arpa");
    } catch (const masr::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("hello\n") == "ARPA file 'bad.arpa', line 1: no \\data\\ section");
  CHECK(error("\\data\\\n\\1-grams:\n") ==
        "ARPA file 'bad.arpa', line 2: the \\data\\ section declares no 'ngram N=count' lines");
  CHECK(
      error("\\data\\\nngram 2=3\n") ==
      "ARPA file 'bad.arpa', line 2: malformed count line 'ngram 2=3' (expected 'ngram 1=COUNT')");
  CHECK(error("\\data\\\nngram 1=1\n\\2-grams:\n") ==
        "ARPA file 'bad.arpa', line 3: expected '\\1-grams:', found '\\2-grams:'");
  CHECK(error("\\data\\\nngram 1=2\n\\1-grams:\n-1 a\n\\end\\\n") ==
        "ARPA file 'bad.arpa', line 5: the \\data\\ section declares 2 1-grams but 1 were read");
  CHECK(error("\\data\\\nngram 1=1\n\\1-grams:\n-x a\n\\end\\\n") ==
        "ARPA file 'bad.arpa', line 4: '-x' is not a number in '-x a'");
  CHECK(error("\\data\\\nngram 1=1\nngram 2=1\n\\1-grams:\n-1 a\n\\2-grams:\n-1 a\n\\end\\\n") ==
        "ARPA file 'bad.arpa', line 7: a 2-gram line needs a log10 probability, 2 word(s); got '-1 "
        "a'");
  CHECK(error("\\data\\\nngram 1=1\n\\1-grams:\n-1 a\n") ==
        "ARPA file 'bad.arpa', line 4: expected '\\end\\' after the 1-grams, found ''");
}

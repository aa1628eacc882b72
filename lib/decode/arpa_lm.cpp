// lib/decode/arpa_lm.cpp
// ARPA parsing (\data\ counts, \N-grams: sections, \end\) and back-off scoring.
#include "decode/arpa_lm.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace masr::decode {

class ArpaParser {
 public:
  ArpaParser(const std::string& text, const std::string& origin) : in_(text), origin_(origin) {}

  ArpaLm parse() {
    ArpaLm lm;
    std::string line;
    while (next(line) && line != "\\data\\") {
    }
    if (line != "\\data\\") fail("no \\data\\ section");
    while (next(line) && line.rfind("ngram ", 0) == 0) read_count(line, lm);
    if (lm.counts_.empty()) fail("the \\data\\ section declares no 'ngram N=count' lines");
    lm.order_ = static_cast<int>(lm.counts_.size());
    for (int n = 1; n <= lm.order_; ++n) {
      const std::string header = "\\" + std::to_string(n) + "-grams:";
      if (line != header) fail("expected '" + header + "', found '" + line + "'");
      size_t read = 0;
      while (next(line) && line[0] != '\\') {
        read_entry(line, n, lm);
        ++read;
      }
      if (read != lm.counts_[n - 1]) {
        fail("the \\data\\ section declares " + std::to_string(lm.counts_[n - 1]) + " " +
             std::to_string(n) + "-grams but " + std::to_string(read) + " were read");
      }
    }
    if (line != "\\end\\")
      fail("expected '\\end\\' after the " + std::to_string(lm.order_) + "-grams, found '" + line +
           "'");
    return lm;
  }

 private:
  // The next non-empty line, trimmed; false at the end of the text.
  bool next(std::string& line) {
    while (std::getline(in_, line)) {
      ++line_number_;
      const size_t begin = line.find_first_not_of(" \t\r");
      if (begin == std::string::npos) continue;
      line = line.substr(begin, line.find_last_not_of(" \t\r") - begin + 1);
      return true;
    }
    line.clear();
    return false;
  }

  [[noreturn]] void fail(const std::string& reason) const {
    throw_input_error("ARPA file '" + origin_ + "', line " + std::to_string(line_number_) + ": " +
                      reason);
  }

  void read_count(const std::string& line, ArpaLm& lm) {
    const size_t eq = line.find('=');
    try {
      if (eq == std::string::npos) throw std::invalid_argument("no '='");
      const int n = std::stoi(line.substr(6, eq - 6));
      const long long count = std::stoll(line.substr(eq + 1));
      if (n != static_cast<int>(lm.counts_.size()) + 1 || count < 0) {
        throw std::invalid_argument("order");
      }
      lm.counts_.push_back(static_cast<size_t>(count));
    } catch (const std::exception&) {
      fail("malformed count line '" + line + "' (expected 'ngram " +
           std::to_string(lm.counts_.size() + 1) + "=COUNT')");
    }
  }

  void read_entry(const std::string& line, int n, ArpaLm& lm) {
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string token; fields >> token;) tokens.push_back(token);
    const bool highest = n == lm.order_;
    if (tokens.size() != static_cast<size_t>(n) + 1 &&
        (highest || tokens.size() != static_cast<size_t>(n) + 2)) {
      fail("a " + std::to_string(n) + "-gram line needs a log10 probability, " + std::to_string(n) +
           " word(s)" + (highest ? "" : " and an optional back-off") + "; got '" + line + "'");
    }
    ArpaLm::Entry entry;
    entry.log10_prob = parse_number(tokens[0], line);
    if (tokens.size() == static_cast<size_t>(n) + 2) {
      entry.log10_backoff = parse_number(tokens.back(), line);
    }
    std::string key = tokens[1];
    for (int i = 2; i <= n; ++i) key += " " + tokens[i];
    lm.entries_[key] = entry;
    if (n == 1 && key != "<s>" && key != "</s>" && key != "<unk>") {
      for (size_t length = 0; length <= key.size(); ++length)
        lm.prefixes_.insert(key.substr(0, length));
    }
  }

  float parse_number(const std::string& text, const std::string& line) const {
    try {
      size_t used = 0;
      const float value = std::stof(text, &used);
      if (used == text.size()) return value;
    } catch (const std::exception&) {
    }
    fail("'" + text + "' is not a number in '" + line + "'");
  }

  std::istringstream in_;
  std::string origin_;
  size_t line_number_ = 0;
};

ArpaLm ArpaLm::from_string(const std::string& text, const std::string& origin) {
  return ArpaParser(text, origin).parse();
}

ArpaLm ArpaLm::from_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_io_error("cannot open ARPA file '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  return from_string(text.str(), path);
}

bool ArpaLm::contains(const std::string& word) const { return entries_.count(word) > 0; }

bool ArpaLm::in_vocabulary(const std::string& word) const {
  return word != "<s>" && word != "</s>" && word != "<unk>" && entries_.count(word) > 0;
}

const ArpaLm::Entry* ArpaLm::find(const std::vector<std::string>& words, size_t begin,
                                  size_t end) const {
  std::string key = words[begin];
  for (size_t i = begin + 1; i < end; ++i) key += " " + words[i];
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

// log10 P(words.back() | words[begin..end-1]), backing off to shorter histories.
double ArpaLm::log10_prob(const std::vector<std::string>& words, size_t begin) const {
  const size_t end = words.size();
  if (begin + 1 == end) {
    if (const Entry* unigram = find(words, begin, end)) return unigram->log10_prob;
    const auto unk = entries_.find("<unk>");
    return unk == entries_.end() ? -100.0 : unk->second.log10_prob;
  }
  if (const Entry* ngram = find(words, begin, end)) return ngram->log10_prob;
  const Entry* history = find(words, begin, end - 1);
  return (history ? history->log10_backoff : 0.0) + log10_prob(words, begin + 1);
}

double ArpaLm::log_prob(const std::vector<std::string>& context, const std::string& word) const {
  const size_t keep = std::min(context.size(), static_cast<size_t>(std::max(order_ - 1, 0)));
  std::vector<std::string> words(context.end() - keep, context.end());
  words.push_back(word);
  return log10_prob(words, 0) * std::log(10.0);
}

}  // namespace masr::decode

// lib/decode/arpa_lm.h
// A word-level back-off n-gram language model read from an ARPA file, for fusion with CTC prefix
// beam search (as pyctcdecode fuses KenLM). Scores are natural logs.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace masr::decode {

class ArpaLm {
 public:
  // Throws an input error naming the file, the line and the reason for a malformed file.
  static ArpaLm from_file(const std::string& path);
  // `origin` names the text in error messages.
  static ArpaLm from_string(const std::string& text, const std::string& origin);

  int order() const { return order_; }
  bool contains(const std::string& word) const;
  // Whether a word of the vocabulary (a unigram other than <s>, </s> and <unk>) begins with
  // `prefix` (every word begins with ""): for scoring a partial word in a beam search.
  bool is_word_prefix(const std::string& prefix) const { return prefixes_.count(prefix) > 0; }
  // Whether `word` is in the vocabulary (not <s>, </s> or <unk>).
  bool in_vocabulary(const std::string& word) const;
  // ln P(word | context) with Katz back-off; context holds the previous words, most recent last
  // (only the last order()-1 are used; "<s>" starts a sentence, "</s>" ends one). A word missing
  // from the unigrams gets <unk>'s probability, or 10^-100 when the file has no <unk> (KenLM's
  // convention).
  double log_prob(const std::vector<std::string>& context, const std::string& word) const;
  // Counts per order as read, order 1 first.
  const std::vector<size_t>& counts() const { return counts_; }

 private:
  struct Entry {
    float log10_prob = 0.0f;
    float log10_backoff = 0.0f;
  };
  double log10_prob(const std::vector<std::string>& words, size_t begin) const;
  const Entry* find(const std::vector<std::string>& words, size_t begin, size_t end) const;

  int order_ = 0;
  std::vector<size_t> counts_;
  std::unordered_map<std::string, Entry> entries_;  // words joined by ' '
  std::unordered_set<std::string> prefixes_;        // every prefix of every vocabulary word
  friend class ArpaParser;
};

}  // namespace masr::decode

// lib/decode/ngram_builder.h
// Estimates a word n-gram LM with interpolated modified Kneser-Ney smoothing (Chen & Goodman
// 1998, as KenLM's lmplz) and writes it in ARPA back-off form for ArpaLm / KenLM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace masr::decode {

struct NgramBuildOptions {
  int order = 3;
  // Fixed discounts D1, D2, D3+ used for every order. Empty: Chen & Goodman's estimates from each
  // order's counts of counts, with KenLM's fallback (0.5, 1, 1.5) where an estimate is undefined
  // or out of range (tiny texts), logged as a warning.
  std::vector<double> discounts;
  // Throws a config error naming the option at fault.
  void validate() const;
};

// What was estimated, for logs and tests.
struct NgramBuildSummary {
  std::vector<size_t> counts;                  // n-grams written per order, order 1 first
  std::vector<std::vector<double>> discounts;  // per order: D1, D2, D3+
};

// sentences: one per entry, words separated by spaces or tabs (empty sentences are skipped). Each
// is wrapped in <s> ... </s>; the vocabulary is every word seen plus </s> and <unk> (<unk> gets
// only the uniform share of the unigram interpolation, as in lmplz). Seen n-grams carry their
// interpolated probability and every context its back-off weight gamma(h), so that the back-off
// form reproduces the interpolated model exactly. Throws an input error for a text with no words
// or a sentence containing <s> or </s>. Returns the ARPA text.
std::string build_kneser_ney_arpa(const std::vector<std::string>& sentences,
                                  const NgramBuildOptions& options,
                                  NgramBuildSummary* summary = nullptr);

}  // namespace masr::decode

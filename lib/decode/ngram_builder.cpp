// lib/decode/ngram_builder.cpp
// Interpolated modified Kneser-Ney: adjusted (continuation) counts, Chen & Goodman discounts per
// order, interpolated probabilities from the unigrams up, then the ARPA text.
#include "decode/ngram_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "core/error.h"
#include "core/log.h"

namespace masr::decode {
namespace {

using Gram = std::vector<int32_t>;
struct GramHash {
  size_t operator()(const Gram& gram) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the word ids
    for (const int32_t w : gram) h = (h ^ static_cast<uint32_t>(w)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};
template <typename T>
using GramMap = std::unordered_map<Gram, T, GramHash>;

constexpr int32_t kUnk = 0, kBos = 1, kEos = 2;
const std::vector<double> kFallbackDiscounts = {0.5, 1.0, 1.5};  // KenLM's --discount_fallback

struct Vocabulary {
  std::vector<std::string> words = {"<unk>", "<s>", "</s>"};
  std::unordered_map<std::string, int32_t> ids = {{"<unk>", kUnk}, {"<s>", kBos}, {"</s>", kEos}};
  int32_t id(const std::string& word) {
    const auto [it, fresh] = ids.emplace(word, static_cast<int32_t>(words.size()));
    if (fresh) words.push_back(word);
    return it->second;
  }
};

// Ids of <s> w1 ... wn </s>; empty for a sentence with no words.
Gram sentence_ids(const std::string& sentence, size_t index, Vocabulary& vocab) {
  Gram ids = {kBos};
  size_t pos = 0;
  while ((pos = sentence.find_first_not_of(" \t\r\n", pos)) != std::string::npos) {
    const size_t end = std::min(sentence.find_first_of(" \t\r\n", pos), sentence.size());
    const std::string word = sentence.substr(pos, end - pos);
    if (word == "<s>" || word == "</s>") {
      throw_input_error("ngram: sentence " + std::to_string(index + 1) + " contains '" + word +
                        "', which is reserved for sentence boundaries: '" + sentence + "'");
    }
    ids.push_back(vocab.id(word));
    pos = end;
  }
  if (ids.size() == 1) return {};
  ids.push_back(kEos);
  return ids;
}

// Adjusted counts per order (index n - 1), as lmplz: the raw count for the highest order and for
// n-grams that start with <s> (they cannot be extended to the left), otherwise the number of
// distinct words seen before the n-gram, N1+(. g) (Kneser-Ney's continuation count).
std::vector<GramMap<int64_t>> adjusted_counts(const std::vector<std::string>& sentences, int order,
                                              Vocabulary& vocab) {
  std::vector<GramMap<int64_t>> counts(order);
  size_t used = 0;
  for (size_t s = 0; s < sentences.size(); ++s) {
    const Gram ids = sentence_ids(sentences[s], s, vocab);
    if (ids.empty()) continue;
    ++used;
    // The longest n-gram ending at each word: an order-N one, or one starting at <s>.
    for (size_t end = 1; end < ids.size(); ++end) {
      const size_t n = std::min(static_cast<size_t>(order), end + 1);
      ++counts[n - 1][Gram(ids.begin() + (end + 1 - n), ids.begin() + end + 1)];
    }
    if ((s + 1) % 1000000 == 0) MASR_LOG_INFO("ngram: counted %zu sentences", s + 1);
  }
  if (used == 0) {
    throw_input_error("ngram: the text has no words (" + std::to_string(sentences.size()) +
                      " sentences, all empty)");
  }
  for (int n = order - 1; n >= 1; --n) {
    for (const auto& entry : counts[n])
      ++counts[n - 1][Gram(entry.first.begin() + 1, entry.first.end())];
  }
  counts[0].emplace(Gram{kUnk}, 0);  // <unk> is in the vocabulary, unseen unless the text has it
  return counts;
}

// Chen & Goodman's D1, D2, D3+ from the counts of adjusted counts 1..4.
std::vector<double> estimate_discounts(const GramMap<int64_t>& counts, int n) {
  double t[5] = {0, 0, 0, 0, 0};
  for (const auto& [gram, count] : counts) {
    if (count >= 1 && count <= 4) t[count] += 1;
  }
  std::vector<double> d = kFallbackDiscounts;
  bool valid = t[1] > 0 && t[2] > 0 && t[3] > 0 && t[4] > 0;
  if (valid) {
    const double y = t[1] / (t[1] + 2 * t[2]);
    d = {1 - 2 * y * t[2] / t[1], 2 - 3 * y * t[3] / t[2], 3 - 4 * y * t[4] / t[3]};
    for (int k = 0; k < 3; ++k) valid = valid && d[k] > 0 && d[k] <= k + 1;
  }
  if (!valid) {
    MASR_LOG_WARN(
        "ngram: order %d: counts of counts (%g, %g, %g, %g) give no valid discounts; using "
        "0.5, 1, 1.5",
        n, t[1], t[2], t[3], t[4]);
    return kFallbackDiscounts;
  }
  return d;
}

double discount(const std::vector<double>& d, int64_t count) {
  return count <= 0 ? 0.0 : d[std::min<int64_t>(count, 3) - 1];
}

struct Model {
  std::vector<GramMap<double>> prob;     // interpolated P(w | h) of every seen (h, w)
  std::vector<GramMap<double>> backoff;  // gamma(h), per context order (index = |h| - 1)
};

// P(w | h) = (a(h w) - D(a)) / sum_v a(h v) + gamma(h) P(w | h minus its first word), with
// gamma(h) = (D1 N1(h .) + D2 N2(h .) + D3 N3+(h .)) / sum_v a(h v); below the unigrams the
// uniform distribution over the vocabulary without <s>.
Model interpolate(const std::vector<GramMap<int64_t>>& counts,
                  const std::vector<std::vector<double>>& discounts, size_t vocab_size) {
  const int order = static_cast<int>(counts.size());
  Model model;
  model.prob.resize(order);
  model.backoff.resize(order);
  for (int n = 1; n <= order; ++n) {
    const std::vector<double>& d = discounts[n - 1];
    GramMap<double> total, gamma;
    for (const auto& [gram, count] : counts[n - 1]) {
      const Gram context(gram.begin(), gram.end() - 1);
      total[context] += count;
      gamma[context] += discount(d, count);
    }
    for (auto& [context, g] : gamma) g /= total[context];
    for (const auto& [gram, count] : counts[n - 1]) {
      const Gram context(gram.begin(), gram.end() - 1);
      const double lower = n == 1 ? 1.0 / static_cast<double>(vocab_size)
                                  : model.prob[n - 2].at(Gram(gram.begin() + 1, gram.end()));
      model.prob[n - 1][gram] =
          (count - discount(d, count)) / total[context] + gamma[context] * lower;
    }
    if (n > 1) model.backoff[n - 2] = std::move(gamma);
  }
  return model;
}

std::string format_arpa(const Model& model, const Vocabulary& vocab) {
  const int order = static_cast<int>(model.prob.size());
  std::string out = "\\data\\\n";
  for (int n = 1; n <= order; ++n) {
    out += "ngram " + std::to_string(n) + "=" +
           std::to_string(model.prob[n - 1].size() + (n == 1 ? 1 : 0)) + "\n";
  }
  char number[64];
  for (int n = 1; n <= order; ++n) {
    out += "\n\\" + std::to_string(n) + "-grams:\n";
    std::vector<std::pair<Gram, double>> grams(model.prob[n - 1].begin(), model.prob[n - 1].end());
    if (n == 1) grams.emplace_back(Gram{kBos}, 0.0);  // <s> is a context only: log10 P = -99
    std::sort(grams.begin(), grams.end());
    for (const auto& [gram, p] : grams) {
      std::snprintf(number, sizeof(number), "%.9g", gram == Gram{kBos} ? -99.0 : std::log10(p));
      out += number;
      for (size_t i = 0; i < gram.size(); ++i) out += (i == 0 ? "\t" : " ") + vocab.words[gram[i]];
      if (n < order) {
        const auto it = model.backoff[n - 1].find(gram);
        if (it != model.backoff[n - 1].end()) {
          std::snprintf(number, sizeof(number), "\t%.9g", std::log10(it->second));
          out += number;
        }
      }
      out += "\n";
    }
  }
  out += "\n\\end\\\n";
  return out;
}

}  // namespace

void NgramBuildOptions::validate() const {
  if (order < 1) throw_config_error("ngram: order must be >= 1, got " + std::to_string(order));
  if (!discounts.empty()) {
    if (discounts.size() != 3) {
      throw_config_error("ngram: --discount takes 3 values (D1, D2, D3+), got " +
                         std::to_string(discounts.size()));
    }
    for (size_t k = 0; k < 3; ++k) {
      if (!(discounts[k] > 0 && discounts[k] <= static_cast<double>(k + 1))) {
        throw_config_error("ngram: discount D" + std::to_string(k + 1) + (k == 2 ? "+" : "") +
                           " must be in (0, " + std::to_string(k + 1) + "], got " +
                           std::to_string(discounts[k]));
      }
    }
  }
}

std::string build_kneser_ney_arpa(const std::vector<std::string>& sentences,
                                  const NgramBuildOptions& options, NgramBuildSummary* summary) {
  options.validate();
  Vocabulary vocab;
  const std::vector<GramMap<int64_t>> counts = adjusted_counts(sentences, options.order, vocab);
  std::vector<std::vector<double>> discounts;
  for (int n = 1; n <= options.order; ++n) {
    discounts.push_back(options.discounts.empty() ? estimate_discounts(counts[n - 1], n)
                                                  : options.discounts);
  }
  const Model model = interpolate(counts, discounts, vocab.words.size() - 1);
  if (summary != nullptr) {
    summary->counts.clear();
    for (int n = 1; n <= options.order; ++n)
      summary->counts.push_back(model.prob[n - 1].size() + (n == 1 ? 1 : 0));
    summary->discounts = discounts;
  }
  return format_arpa(model, vocab);
}

}  // namespace masr::decode

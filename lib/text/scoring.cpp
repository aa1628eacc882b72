// lib/text/scoring.cpp
// Levenshtein alignment (SB:utils/edit_distance.py op_table/alignment semantics), WER/CER totals
// and scoring normalization.
#include "text/scoring.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace masr::text {
namespace {

bool is_space(unsigned char c) { return std::isspace(c) != 0; }

// Bytes in one UTF-8 character starting with `lead` (1 for malformed bytes, so nothing is lost).
size_t utf8_length(unsigned char lead) {
  if (lead >= 0xF0 && lead < 0xF8) return 4;
  if (lead >= 0xE0) return lead < 0xF0 ? 3 : 1;
  if (lead >= 0xC0) return 2;
  return 1;
}

}  // namespace

std::string normalize_for_scoring(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  auto put = [&](char c) {
    if (pending_space && !out.empty()) out += ' ';
    pending_space = false;
    out += c;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
        static_cast<unsigned char>(text[i + 2]) == 0x99) {  // U+2019 right single quote
      put('\'');
      i += 2;
    } else if (is_space(c) || c == '-' || c == '/') {
      pending_space = true;
    } else if (c == '\'') {
      put('\'');
    } else if (c < 0x80 && std::ispunct(c)) {
      continue;  // dropped without splitting the word: "MR." -> "MR"
    } else {
      put(static_cast<char>(c < 0x80 ? std::toupper(c) : c));
    }
  }
  return out;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    while (i < text.size() && !is_space(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

std::vector<std::string> split_characters(const std::vector<std::string>& words) {
  std::string joined;
  for (size_t w = 0; w < words.size(); ++w) joined += (w ? "_" : "") + words[w];
  std::vector<std::string> chars;
  for (size_t i = 0; i < joined.size();) {
    const size_t n =
        std::min(utf8_length(static_cast<unsigned char>(joined[i])), joined.size() - i);
    chars.push_back(joined.substr(i, n));
    i += n;
  }
  return chars;
}

std::vector<AlignedPair> align(const std::vector<std::string>& ref,
                               const std::vector<std::string>& hyp) {
  const size_t n = ref.size(), m = hyp.size();
  // ops[i][j]: the last operation of the best path from ref[:i] to hyp[:j].
  std::vector<std::vector<EditOp>> ops(n + 1, std::vector<EditOp>(m + 1, EditOp::kEqual));
  std::vector<int64_t> prev(m + 1), curr(m + 1);
  for (size_t j = 0; j <= m; ++j) {
    prev[j] = static_cast<int64_t>(j);
    ops[0][j] = EditOp::kInsertion;
  }
  for (size_t i = 1; i <= n; ++i) {
    ops[i][0] = EditOp::kDeletion;
    curr[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= m; ++j) {
      const int64_t insertion = curr[j - 1] + 1;
      const int64_t deletion = prev[j] + 1;
      const bool differ = ref[i - 1] != hyp[j - 1];
      const int64_t substitution = prev[j - 1] + (differ ? 1 : 0);
      // Strict comparisons give Kaldi's tie order: insertion > deletion > substitution.
      if (substitution < insertion && substitution < deletion) {
        curr[j] = substitution;
        ops[i][j] = differ ? EditOp::kSubstitution : EditOp::kEqual;
      } else if (deletion < insertion) {
        curr[j] = deletion;
        ops[i][j] = EditOp::kDeletion;
      } else {
        curr[j] = insertion;
        ops[i][j] = EditOp::kInsertion;
      }
    }
    std::swap(prev, curr);
  }
  ops[0][0] = EditOp::kEqual;

  std::vector<AlignedPair> path;
  int64_t i = static_cast<int64_t>(n), j = static_cast<int64_t>(m);
  while (i > 0 || j > 0) {
    const EditOp op = i == 0 ? EditOp::kInsertion : j == 0 ? EditOp::kDeletion : ops[i][j];
    if (op == EditOp::kInsertion) {
      --j;
      path.push_back({op, -1, j});
    } else if (op == EditOp::kDeletion) {
      --i;
      path.push_back({op, i, -1});
    } else {
      --i;
      --j;
      path.push_back({op, i, j});
    }
  }
  std::reverse(path.begin(), path.end());
  return path;
}

EditCounts count_edits(const std::vector<AlignedPair>& alignment) {
  EditCounts counts;
  for (const auto& pair : alignment) {
    if (pair.op == EditOp::kSubstitution) ++counts.substitutions;
    if (pair.op == EditOp::kDeletion) ++counts.deletions;
    if (pair.op == EditOp::kInsertion) ++counts.insertions;
  }
  return counts;
}

const UtteranceErrors& ErrorRateStats::append(const std::string& id,
                                              const std::vector<std::string>& ref,
                                              const std::vector<std::string>& hyp) {
  UtteranceErrors u;
  u.id = id;
  u.ref = split_tokens_ ? split_characters(ref) : ref;
  u.hyp = split_tokens_ ? split_characters(hyp) : hyp;
  u.alignment = align(u.ref, u.hyp);
  u.counts = count_edits(u.alignment);
  u.ref_tokens = static_cast<int64_t>(u.ref.size());
  // SpeechBrain divides by zero here; an empty reference counts every insertion as 100%.
  u.error_rate = 100.0 * static_cast<double>(u.counts.edits()) /
                 static_cast<double>(std::max<int64_t>(u.ref_tokens, 1));
  utterances_.push_back(std::move(u));
  return utterances_.back();
}

const UtteranceErrors& ErrorRateStats::append_text(const std::string& id, const std::string& ref,
                                                   const std::string& hyp) {
  return append(id, split_words(normalize_for_scoring(ref)),
                split_words(normalize_for_scoring(hyp)));
}

ErrorRateSummary ErrorRateStats::summarize() const {
  ErrorRateSummary s;
  for (const auto& u : utterances_) {
    ++s.scored_sentences;
    s.scored_tokens += u.ref_tokens;
    s.counts.substitutions += u.counts.substitutions;
    s.counts.deletions += u.counts.deletions;
    s.counts.insertions += u.counts.insertions;
    if (u.counts.edits() > 0) ++s.erroneous_sentences;
  }
  if (s.scored_tokens > 0) {
    s.error_rate =
        100.0 * static_cast<double>(s.counts.edits()) / static_cast<double>(s.scored_tokens);
  }
  if (s.scored_sentences > 0) {
    s.sentence_error_rate = 100.0 * static_cast<double>(s.erroneous_sentences) /
                            static_cast<double>(s.scored_sentences);
  }
  return s;
}

std::string ErrorRateSummary::to_string(const std::string& label) const {
  char line[256];
  std::snprintf(line, sizeof(line), "%%%s %.2f [ %lld / %lld, %lld ins, %lld del, %lld sub ]",
                label.c_str(), error_rate, static_cast<long long>(counts.edits()),
                static_cast<long long>(scored_tokens), static_cast<long long>(counts.insertions),
                static_cast<long long>(counts.deletions),
                static_cast<long long>(counts.substitutions));
  return line;
}

std::string format_alignment(const UtteranceErrors& u) {
  std::string ref_line, op_line, hyp_line;
  for (const auto& pair : u.alignment) {
    const std::string r = pair.ref_index >= 0 ? u.ref[pair.ref_index] : "<eps>";
    const std::string h = pair.hyp_index >= 0 ? u.hyp[pair.hyp_index] : "<eps>";
    const size_t width = std::max<size_t>({r.size(), h.size(), 1});
    const std::string sep = ref_line.empty() ? "" : " ; ";
    ref_line += sep + r + std::string(width - r.size(), ' ');
    op_line += sep + static_cast<char>(pair.op) + std::string(width - 1, ' ');
    hyp_line += sep + h + std::string(width - h.size(), ' ');
  }
  return ref_line + "\n" + op_line + "\n" + hyp_line + "\n";
}

}  // namespace masr::text

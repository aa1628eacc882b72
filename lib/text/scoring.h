// lib/text/scoring.h
// Word and character error rates as SpeechBrain's ErrorRateStats reports them (Levenshtein
// alignment with Kaldi's tie-breaking), and LibriSpeech-style text normalization for scoring.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace masr::text {

// Upper case (ASCII), apostrophes kept (U+2019 becomes '), hyphens and slashes become spaces,
// other ASCII punctuation is dropped, whitespace collapsed to single spaces and trimmed. Non-ASCII
// letters pass through unchanged. LibriSpeech references are already in this form.
std::string normalize_for_scoring(const std::string& text);

// Splits on runs of whitespace (no empty words).
std::vector<std::string> split_words(const std::string& text);
// SpeechBrain's split_word for CER: the words joined by "_" and cut into UTF-8 characters, so the
// word boundary is a scored token too (SB:utils/metric_stats.py ErrorRateStats, split_tokens).
std::vector<std::string> split_characters(const std::vector<std::string>& words);

enum class EditOp : char { kEqual = '=', kSubstitution = 'S', kDeletion = 'D', kInsertion = 'I' };

// One step of an alignment: ref_index / hyp_index are -1 when aligned to nothing.
struct AlignedPair {
  EditOp op;
  int64_t ref_index;
  int64_t hyp_index;
};

struct EditCounts {
  int64_t substitutions = 0;
  int64_t deletions = 0;
  int64_t insertions = 0;
  int64_t edits() const { return substitutions + deletions + insertions; }
};

// The minimum edit alignment of ref to hyp. In ties the table prefers insertion over deletion over
// substitution, as SpeechBrain's op_table copies from Kaldi's compute-wer, which fixes how the
// edits split into S/D/I when several alignments are optimal.
std::vector<AlignedPair> align(const std::vector<std::string>& ref,
                               const std::vector<std::string>& hyp);
EditCounts count_edits(const std::vector<AlignedPair>& alignment);

struct UtteranceErrors {
  std::string id;
  int64_t ref_tokens = 0;
  EditCounts counts;
  double error_rate = 0.0;  // 100 * edits / ref_tokens; with an empty reference, 100 * edits
  std::vector<AlignedPair> alignment;
  std::vector<std::string> ref;
  std::vector<std::string> hyp;
};

struct ErrorRateSummary {
  double error_rate = 0.0;           // %WER (or %CER): 100 * edits / scored tokens
  double sentence_error_rate = 0.0;  // %SER: utterances with at least one edit
  int64_t scored_tokens = 0;
  int64_t scored_sentences = 0;
  int64_t erroneous_sentences = 0;
  EditCounts counts;
  // "%WER 12.50 [ 1 / 8, 0 ins, 1 del, 0 sub ]", SpeechBrain's wording.
  std::string to_string(const std::string& label = "WER") const;
};

// Accumulates utterances and reports per-utterance details and totals (ErrorRateStats).
class ErrorRateStats {
 public:
  // `split_tokens`: score characters (CER) rather than words.
  explicit ErrorRateStats(bool split_tokens = false) : split_tokens_(split_tokens) {}

  // ref/hyp are word lists (already normalized as the caller wishes).
  const UtteranceErrors& append(const std::string& id, const std::vector<std::string>& ref,
                                const std::vector<std::string>& hyp);
  // Normalizes both texts with normalize_for_scoring and splits them into words.
  const UtteranceErrors& append_text(const std::string& id, const std::string& ref,
                                     const std::string& hyp);

  ErrorRateSummary summarize() const;
  const std::vector<UtteranceErrors>& utterances() const { return utterances_; }
  void clear() { utterances_.clear(); }

 private:
  bool split_tokens_;
  std::vector<UtteranceErrors> utterances_;
};

// One utterance's alignment as three aligned lines (ref, ops, hyp), "<eps>" for gaps, as
// SpeechBrain's wer file prints it.
std::string format_alignment(const UtteranceErrors& utterance);

}  // namespace masr::text

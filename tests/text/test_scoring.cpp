// tests/text/test_scoring.cpp
// WER/CER against hand-computed alignments (SpeechBrain/Kaldi tie-breaking) and normalization.
#include <catch2/catch.hpp>

#include "text/scoring.h"

using namespace masr::text;

namespace {
std::vector<std::string> w(const std::string& text) { return split_words(text); }

std::string ops(const std::vector<AlignedPair>& alignment) {
  std::string out;
  for (const auto& p : alignment) out += static_cast<char>(p.op);
  return out;
}
}  // namespace

TEST_CASE("alignment of simple edits", "[text]") {
  // THE CAT SAT ON THE MAT / THE CAT SAT ON MAT: one deletion (the second THE).
  auto a = align(w("THE CAT SAT ON THE MAT"), w("THE CAT SAT ON MAT"));
  CHECK(ops(a) == "====D=");
  CHECK(a[4].ref_index == 4);
  CHECK(a[4].hyp_index == -1);
  // A B C / A X B C D: two insertions.
  a = align(w("A B C"), w("A X B C D"));
  CHECK(ops(a) == "=I==I");
  CHECK(a[1].hyp_index == 1);
  // A B C / A Y C: one substitution.
  CHECK(ops(align(w("A B C"), w("A Y C"))) == "=S=");
  CHECK(ops(align({}, w("A B"))) == "II");
  CHECK(ops(align(w("A B"), {})) == "DD");
  CHECK(align({}, {}).empty());
}

TEST_CASE("ties split edits as Kaldi's compute-wer does", "[text]") {
  // ref A B, hyp B C: two optimal paths of cost 2, "SS" and "D=I". The table prefers insertion >
  // deletion > substitution in ties (hand-filled table below), so the backtrace gives D = I:
  //          ""   B    C
  //   ""     =    I    I
  //   A      D    S(1) I(2)
  //   B      D    =(1) I(2)
  const auto a = align(w("A B"), w("B C"));
  CHECK(ops(a) == "D=I");
  const auto counts = count_edits(a);
  CHECK(counts.deletions == 1);
  CHECK(counts.insertions == 1);
  CHECK(counts.substitutions == 0);
}

TEST_CASE("ErrorRateStats totals, per utterance and summary line", "[text]") {
  ErrorRateStats wer;
  const auto& u1 = wer.append("u1", w("THE CAT SAT ON THE MAT"), w("THE CAT SAT ON MAT"));
  CHECK(u1.counts.deletions == 1);
  CHECK(u1.error_rate == Approx(100.0 / 6.0));
  wer.append("u2", w("A B C"), w("A X B C D"));          // 2 ins over 3 words
  wer.append("u3", w("HELLO WORLD"), w("HELLO WORLD"));  // correct
  wer.append("u4", w("A B C"), w("A Y C"));              // 1 sub
  const auto s = wer.summarize();
  // 4 edits over 6 + 3 + 2 + 3 = 14 reference words; 3 of 4 sentences wrong.
  CHECK(s.scored_tokens == 14);
  CHECK(s.counts.edits() == 4);
  CHECK(s.counts.insertions == 2);
  CHECK(s.counts.deletions == 1);
  CHECK(s.counts.substitutions == 1);
  CHECK(s.error_rate == Approx(400.0 / 14.0));
  CHECK(s.erroneous_sentences == 3);
  CHECK(s.sentence_error_rate == Approx(75.0));
  CHECK(s.to_string() == "%WER 28.57 [ 4 / 14, 2 ins, 1 del, 1 sub ]");
  CHECK(wer.utterances().size() == 4);

  ErrorRateStats empty_ref;
  CHECK(empty_ref.append("e", {}, w("A")).error_rate == Approx(100.0));
  CHECK(ErrorRateStats().summarize().error_rate == 0.0);
}

TEST_CASE("CER scores characters with the word boundary as a token", "[text]") {
  // SpeechBrain's split_word: "AB_C" vs "AB" is two deletions over four characters.
  CHECK(split_characters(w("AB C")) == std::vector<std::string>{"A", "B", "_", "C"});
  ErrorRateStats cer(/*split_tokens=*/true);
  const auto& u = cer.append("u", w("AB C"), w("AB"));
  CHECK(u.counts.deletions == 2);
  CHECK(u.error_rate == Approx(50.0));
  // UTF-8 characters stay whole.
  CHECK(split_characters({"\xC3\x89T\xC3\x89"}).size() == 3);
}

TEST_CASE("normalization for scoring", "[text]") {
  CHECK(normalize_for_scoring("  hello, World!  it\xE2\x80\x99s  a well-known\tfact. ") ==
        "HELLO WORLD IT'S A WELL KNOWN FACT");
  CHECK(normalize_for_scoring("DON'T \"STOP\" mr. smith;") == "DON'T STOP MR SMITH");
  CHECK(normalize_for_scoring("") == "");
  CHECK(normalize_for_scoring(" ?! ") == "");
  ErrorRateStats wer;
  CHECK(wer.append_text("u", "Hello, world.", "HELLO WORLD").counts.edits() == 0);
}

TEST_CASE("alignment is printed with <eps> for gaps", "[text]") {
  ErrorRateStats wer;
  const auto& u = wer.append("u", w("A BB"), w("BB C"));
  CHECK(format_alignment(u) == "A     ; BB ; <eps>\nD     ; =  ; I    \n<eps> ; BB ; C    \n");
}

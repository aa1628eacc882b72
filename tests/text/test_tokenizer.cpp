// tests/text/test_tokenizer.cpp
// Tokenizer: training (char, unigram), SpeechBrain's special ids, round trips, error messages, and
// LibTorch + SentencePiece in one process (the isolation of the shim).
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <set>

#include "core/error.h"
#include "text/spm_shim_loader.h"
#include "text/tokenizer.h"
#include "text_corpus.h"

using masr::text::Tokenizer;
using masr::text::TokenizerTrainOptions;

namespace {

TokenizerTrainOptions char_options() {
  TokenizerTrainOptions options;
  options.model_type = "char";
  options.vocab_size = 31;
  return options;
}

}  // namespace

TEST_CASE("char tokenizer on LibriSpeech-like text has SpeechBrain's 31 CTC ids", "[text]") {
  masr::testing::TempDir dir("tok_char");
  const auto sentences = masr::testing::librispeech_like_sentences(300);
  const Tokenizer tok = Tokenizer::train(sentences, dir.file("31_char"), char_options());
  REQUIRE(std::ifstream(dir.file("31_char.model")).good());

  // unk/blank 0, bos 1, eos 2, then the word boundary, 26 letters and the apostrophe.
  REQUIRE(tok.vocab_size() == 31);
  CHECK(tok.id_to_piece(0) == "<unk>");
  CHECK(tok.id_to_piece(1) == "<s>");
  CHECK(tok.id_to_piece(2) == "</s>");
  std::set<std::string> pieces;
  for (int id = 3; id < 31; ++id) pieces.insert(tok.id_to_piece(id));
  std::set<std::string> expected = {"\xE2\x96\x81", "'"};  // U+2581 "▁"
  for (char c = 'A'; c <= 'Z'; ++c) expected.insert(std::string(1, c));
  CHECK(pieces == expected);

  // One id per character and one "▁" per word (add_dummy_prefix).
  const std::string text = "DON'T JUDGE";
  const auto ids = tok.encode(text);
  REQUIRE(ids.size() == 12);
  CHECK(tok.id_to_piece(ids[0]) == "\xE2\x96\x81");
  CHECK(tok.id_to_piece(ids[4]) == "'");
  CHECK(tok.decode(ids) == text);
  CHECK(tok.piece_to_id("J") == ids[7]);
  // Characters never seen map to <unk> (id 0), as SentencePiece does.
  CHECK(tok.encode("Ä").back() == 0);
}

TEST_CASE("unigram tokenizer round-trips and keeps ids 0/1/2", "[text]") {
  masr::testing::TempDir dir("tok_unigram");
  const auto sentences = masr::testing::librispeech_like_sentences(400);
  TokenizerTrainOptions options;
  options.model_type = "unigram";
  options.vocab_size = 60;
  const Tokenizer tok = Tokenizer::train(sentences, dir.file("sub/60_unigram"), options);
  CHECK(tok.vocab_size() == 60);
  CHECK(tok.id_to_piece(0) == "<unk>");
  CHECK(tok.id_to_piece(1) == "<s>");
  CHECK(tok.id_to_piece(2) == "</s>");
  for (size_t i = 0; i < 20; ++i) {
    const auto ids = tok.encode(sentences[i]);
    CHECK(ids.size() < sentences[i].size());  // subwords: fewer ids than characters
    CHECK(tok.decode(ids) == sentences[i]);
  }
  // No piece is longer than max_sentencepiece_length (10) characters (+ the 3-byte "▁").
  for (int id = 3; id < tok.vocab_size(); ++id) CHECK(tok.id_to_piece(id).size() <= 13);

  // Loading the written file and loading its bytes give the same model.
  const Tokenizer from_file = Tokenizer::from_file(dir.file("sub/60_unigram.model"));
  const Tokenizer from_bytes = Tokenizer::from_bytes(from_file.model_bytes(), "checkpoint");
  CHECK(from_bytes.encode(sentences[7]) == tok.encode(sentences[7]));
  CHECK(from_bytes.origin() == "checkpoint");
}

TEST_CASE("tokenizer errors name the file and the reason", "[text]") {
  masr::testing::TempDir dir("tok_err");
  const std::string bogus = dir.file("bogus.model");
  std::ofstream(bogus) << "this is not a sentencepiece model\n";
  CHECK_THROWS_WITH(
      Tokenizer::from_file(bogus),
      Catch::Contains("bogus.model") && Catch::Contains("not a valid SentencePiece model"));
  CHECK_THROWS_WITH(Tokenizer::from_file(dir.file("missing.model")),
                    Catch::Contains("missing.model") && Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(Tokenizer::from_bytes("", "checkpoint 'x'"),
                    Catch::Contains("checkpoint 'x': empty"));

  const Tokenizer unloaded;
  CHECK_THROWS_WITH(unloaded.encode("A"), Catch::Contains("before a model was loaded"));

  TokenizerTrainOptions options;
  options.model_type = "wordpiece";
  CHECK_THROWS_WITH(Tokenizer::train({"A B"}, dir.file("x"), options),
                    Catch::Contains("model_type 'wordpiece'"));
  options.model_type = "unigram";
  CHECK_THROWS_WITH(Tokenizer::train({}, dir.file("x"), options), Catch::Contains("no sentences"));
  // SentencePiece's own failure (vocabulary larger than the text allows) comes back as an error.
  options.vocab_size = 5000;
  CHECK_THROWS_WITH(Tokenizer::train({"A B C", "B C D"}, dir.file("big"), options),
                    Catch::Contains("big.model' failed") && Catch::Contains("vocab_size=5000"));

  const Tokenizer tok = Tokenizer::train(masr::testing::librispeech_like_sentences(50),
                                         dir.file("c"), char_options());
  CHECK_THROWS_WITH(tok.id_to_piece(31), Catch::Contains("no piece with id 31"));
  CHECK_THROWS_WITH(tok.decode({5, 99}), Catch::Contains("cannot decode id 99"));
}

TEST_CASE("a missing shim named by MASR_SPM_SHIM is a clear error", "[text]") {
  const char* previous = std::getenv("MASR_SPM_SHIM");
  const std::string saved = previous ? previous : "";
  ::setenv("MASR_SPM_SHIM", "/nonexistent/libmasr_spm_shim.so", 1);
  CHECK_THROWS_WITH(masr::text::locate_spm_shim(),
                    Catch::Contains("/nonexistent/libmasr_spm_shim.so ($MASR_SPM_SHIM)") &&
                        Catch::Contains("was not found"));
  if (previous) {
    ::setenv("MASR_SPM_SHIM", saved.c_str(), 1);
  } else {
    ::unsetenv("MASR_SPM_SHIM");
  }
  CHECK(masr::text::locate_spm_shim().find("libmasr_spm_shim") != std::string::npos);
}

TEST_CASE("LibTorch and SentencePiece work in one process", "[text]") {
  // This binary links LibTorch (protobuf 3.21); the tokenizer loads SentencePiece (protobuf 3.14)
  // through the shim. Linking both directly crashes at start-up; here both must work, interleaved.
  masr::testing::TempDir dir("tok_torch");
  const at::Tensor before = at::arange(10, at::kFloat).sum();
  const Tokenizer tok = Tokenizer::train(masr::testing::librispeech_like_sentences(100),
                                         dir.file("c"), char_options());
  const auto ids = tok.encode("HELLO WORLD");
  const at::Tensor targets = at::tensor(std::vector<int64_t>(ids.begin(), ids.end()));
  CHECK(before.item<float>() == 45.0f);
  CHECK(targets.numel() == 12);
  CHECK(targets.max().item<int64_t>() < 31);
  CHECK(tok.decode(ids) == "HELLO WORLD");
}

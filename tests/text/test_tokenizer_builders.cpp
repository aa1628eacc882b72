// tests/text/test_tokenizer_builders.cpp
// The hparams classes: SpeechBrain's SentencePiece wrapper trains from a CSV column (and loads the
// model the second time), sentencepiece.SentencePieceProcessor loads a model file.
#include <catch2/catch.hpp>
#include <fstream>

#include "data/manifest.h"
#include "hparams/hparams.h"
#include "text/tokenizer.h"
#include "text_corpus.h"

using namespace masr;

namespace {

std::shared_ptr<text::Tokenizer> tokenizer_of(const hparams::Hparams& hp, const std::string& key) {
  auto tokenizer = std::dynamic_pointer_cast<text::Tokenizer>(hp[key].instance()->object);
  REQUIRE(tokenizer != nullptr);
  return tokenizer;
}

}  // namespace

TEST_CASE("SpeechBrain SentencePiece trains a char model from train.csv, then loads it", "[text]") {
  masr::testing::TempDir dir("tok_builder");
  data::Manifest manifest;
  const auto sentences = masr::testing::librispeech_like_sentences(120);
  for (size_t i = 0; i < sentences.size(); ++i) {
    data::ManifestRow row;
    row.id = "utt" + std::to_string(i);
    row.duration = 1.0;
    row.wav = "/x/" + row.id + ".flac";
    row.wrd = sentences[i];
    manifest.rows.push_back(row);
  }
  data::write_speechbrain_csv(dir.file("train.csv"), manifest);

  hparams::Registry registry;
  hparams::register_builtin_classes(registry);
  text::register_text_classes(registry);
  hparams::LoadOptions options;
  options.registry = &registry;
  // As xi-j/Mamba-ASR's train_CTC.py builds it.
  const std::string yaml =
      "tokenizer: !new:speechbrain.tokenizers.SentencePiece.SentencePiece\n"
      "  model_dir: " +
      dir.str() +
      "\n"
      "  vocab_size: 31\n"
      "  annotation_train: " +
      dir.file("train.csv") +
      "\n"
      "  annotation_read: wrd\n"
      "  model_type: char\n"
      "  character_coverage: 1.0\n"
      "  bos_id: 1\n"
      "  eos_id: 2\n";
  const auto trained = tokenizer_of(hparams::load_text(yaml, options), "tokenizer");
  CHECK(trained->vocab_size() == 31);
  CHECK(trained->id_to_piece(2) == "</s>");
  REQUIRE(std::ifstream(dir.file("31_char.model")).good());
  // The second time the model exists and is loaded, not retrained.
  const auto loaded = tokenizer_of(hparams::load_text(yaml, options), "tokenizer");
  CHECK(loaded->origin().find("31_char.model") != std::string::npos);
  CHECK(loaded->encode("ZEAL") == trained->encode("ZEAL"));

  const auto processor =
      tokenizer_of(hparams::load_text("tok: !new:sentencepiece.SentencePieceProcessor\n"
                                      "  model_file: " +
                                          dir.file("31_char.model") + "\n",
                                      options),
                   "tok");
  CHECK(processor->vocab_size() == 31);
  const auto empty = tokenizer_of(
      hparams::load_text("tok: !new:sentencepiece.SentencePieceProcessor\n", options), "tok");
  CHECK_FALSE(empty->loaded());

  CHECK_THROWS_WITH(
      hparams::load_text("tokenizer: !new:speechbrain.tokenizers.SentencePiece.SentencePiece\n"
                         "  model_dir: " +
                             dir.str() +
                             "\n"
                             "  vocab_size: 100\n"
                             "  annotation_train: " +
                             dir.file("train.csv") +
                             "\n"
                             "  annotation_read: words\n",
                         options),
      Catch::Contains("annotation_read 'words' is not a column"));
  CHECK_THROWS_WITH(
      hparams::load_text("tokenizer: !new:speechbrain.tokenizers.SentencePiece.SentencePiece\n"
                         "  model_dir: " +
                             dir.str() +
                             "\n"
                             "  vocab_size: 100\n",
                         options),
      Catch::Contains("100_unigram.model") && Catch::Contains("annotation_train"));
}

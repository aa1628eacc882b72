// lib/text/tokenizer.h
// SentencePiece tokenizers (load, encode, decode, train), reached through the isolated shim module
// third_party/sentencepiece_shim, so that SentencePiece's protobuf never meets LibTorch's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hparams/registry.h"

namespace masr::text {

// Trainer settings. The defaults are the flags SpeechBrain's `SentencePiece` wrapper passes for
// the LibriSpeech recipes (SB:tokenizers/SentencePiece.py): id 0 is <unk> (also the CTC blank and
// the padding index), 1 is <s>, 2 is </s>, no pad piece.
struct TokenizerTrainOptions {
  std::string model_type = "unigram";  // unigram | bpe | char | word
  int vocab_size = 1000;               // not passed for `char` (SpeechBrain omits it as well)
  double character_coverage = 1.0;
  int unk_id = 0;
  int bos_id = 1;
  int eos_id = 2;
  int pad_id = -1;
  int max_sentencepiece_length = 10;
  bool add_dummy_prefix = true;
  bool split_by_whitespace = true;
  std::vector<std::string> user_defined_symbols;
  int64_t input_sentence_size = 0;  // 0: every sentence (SpeechBrain's num_sequence)

  // Throws a config error naming the bad field.
  void validate() const;
  std::string to_string() const;
};

// A loaded SentencePiece model. Immutable once loaded, so encode/decode may be called from several
// threads. A Tokenizer built by `sentencepiece.SentencePieceProcessor` without a model file stays
// unloaded until load_file() is called (SpeechBrain's Pretrainer fills it in later).
class Tokenizer : public hparams::Object {
 public:
  Tokenizer();
  ~Tokenizer() override;
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  static Tokenizer from_file(const std::string& path);
  // `origin` names the bytes in error messages (e.g. "checkpoint 'ckpt/tokenizer'").
  static Tokenizer from_bytes(std::string bytes, const std::string& origin);
  // Trains on `sentences`, writes `<prefix>.model` and `<prefix>.vocab`, and loads the model.
  static Tokenizer train(const std::vector<std::string>& sentences, const std::string& prefix,
                         const TokenizerTrainOptions& options);

  void load_file(const std::string& path);
  void load_bytes(std::string bytes, const std::string& origin);
  bool loaded() const { return handle_ != nullptr; }

  std::vector<int> encode(const std::string& text) const;
  std::string decode(const std::vector<int>& ids) const;
  std::string id_to_piece(int id) const;
  // Returns the unk id for an unknown piece, as SentencePiece does.
  int piece_to_id(const std::string& piece) const;
  int vocab_size() const;

  // The serialized model, for embedding in a checkpoint.
  const std::string& model_bytes() const { return bytes_; }
  // Where the model came from (a path or the origin given to from_bytes).
  const std::string& origin() const { return origin_; }

  std::string summary() const override;

 private:
  void* checked_handle() const;

  void* handle_ = nullptr;
  std::string bytes_;
  std::string origin_;
};

// Registers `speechbrain.tokenizers.SentencePiece.SentencePiece` and
// `sentencepiece.SentencePieceProcessor`.
void register_text_classes(hparams::Registry& registry);

}  // namespace masr::text

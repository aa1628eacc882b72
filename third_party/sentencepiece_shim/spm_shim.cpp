// third_party/sentencepiece_shim/spm_shim.cpp
// The only file of mamba-asr that includes SentencePiece headers; see spm_shim.h for why.
#include "spm_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

void set_error(char* err, size_t err_len, const std::string& message) {
  if (err == nullptr || err_len == 0) return;
  std::strncpy(err, message.c_str(), err_len - 1);
  err[err_len - 1] = '\0';
}

sentencepiece::SentencePieceProcessor* processor(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle);
}

// Feeds in-memory sentences to the trainer.
class ArraySentences : public sentencepiece::SentenceIterator {
 public:
  ArraySentences(const char* const* sentences, size_t n) : sentences_(sentences), n_(n) {
    if (n_ > 0) value_ = sentences_[0];
  }
  bool done() const override { return index_ >= n_; }
  void Next() override {
    ++index_;
    if (index_ < n_) value_ = sentences_[index_];
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override {
    return sentencepiece::util::Status();  // default-constructed: OK
  }

 private:
  const char* const* sentences_;
  size_t n_;
  size_t index_ = 0;
  std::string value_;
};

}  // namespace

extern "C" {
int masr_spm_abi_version(void) { return MASR_SPM_ABI_VERSION; }

void* masr_spm_load(const char* model_path, char* err, size_t err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  const auto status = sp->Load(model_path);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    delete sp;
    return nullptr;
  }
  return sp;
}

void* masr_spm_load_bytes(const char* data, size_t size, char* err, size_t err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  const auto status = sp->LoadFromSerializedProto(std::string(data, size));
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    delete sp;
    return nullptr;
  }
  return sp;
}

void masr_spm_free(void* handle) { delete processor(handle); }

int masr_spm_vocab_size(void* handle) { return processor(handle)->GetPieceSize(); }

int masr_spm_piece_to_id(void* handle, const char* piece) {
  return processor(handle)->PieceToId(piece);
}

int masr_spm_id_to_piece(void* handle, int id, char* out, size_t out_len) {
  if (id < 0 || id >= processor(handle)->GetPieceSize()) return -1;
  const std::string& piece = processor(handle)->IdToPiece(id);
  set_error(out, out_len, piece);
  return static_cast<int>(piece.size());
}

int masr_spm_encode(void* handle, const char* text, int* ids, size_t capacity, char* err,
                    size_t err_len) {
  std::vector<int> result;
  const auto status = processor(handle)->Encode(text, &result);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return -1;
  }
  const size_t n = result.size() < capacity ? result.size() : capacity;
  if (n > 0) std::memcpy(ids, result.data(), n * sizeof(int));
  return static_cast<int>(result.size());
}

int masr_spm_decode(void* handle, const int* ids, size_t n_ids, char* out, size_t out_len,
                    char* err, size_t err_len) {
  std::string text;
  const auto status = processor(handle)->Decode(std::vector<int>(ids, ids + n_ids), &text);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return -1;
  }
  set_error(out, out_len, text);
  return static_cast<int>(text.size());
}

int masr_spm_train(const char* args, char* err, size_t err_len) {
  const auto status = sentencepiece::SentencePieceTrainer::Train(args);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return -1;
  }
  return 0;
}

int masr_spm_train_sentences(const char* const* keys, const char* const* values, size_t n_flags,
                             const char* const* sentences, size_t n_sentences, char* err,
                             size_t err_len) {
  std::unordered_map<std::string, std::string> kwargs;
  for (size_t i = 0; i < n_flags; ++i) kwargs[keys[i]] = values[i];
  ArraySentences iterator(sentences, n_sentences);
  const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, &iterator);
  if (!status.ok()) {
    set_error(err, err_len, status.ToString());
    return -1;
  }
  return 0;
}

}  // extern "C"

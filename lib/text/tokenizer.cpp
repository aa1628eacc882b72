// lib/text/tokenizer.cpp
// Tokenizer: SentencePiece through the dlopen()ed shim. Only plain C types cross into the shim;
// every failure becomes a masr::Error naming the model and the reason.
#include "text/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "text/spm_shim_loader.h"

namespace masr::text {
namespace {

constexpr size_t kErrLen = 1024;

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_io_error("SentencePiece model '" + path + "': cannot open the file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw_io_error("SentencePiece model '" + path + "': read error");
  return bytes;
}

// SentencePiece's trainer flags as key/value pairs (SB:tokenizers/SentencePiece.py builds the same
// set as a flag string).
std::vector<std::pair<std::string, std::string>> trainer_flags(const TokenizerTrainOptions& o,
                                                               const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> flags = {
      {"model_prefix", prefix},
      {"model_type", o.model_type},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"unk_id", std::to_string(o.unk_id)},
      {"bos_id", std::to_string(o.bos_id)},
      {"eos_id", std::to_string(o.eos_id)},
      {"pad_id", std::to_string(o.pad_id)},
      {"max_sentencepiece_length", std::to_string(o.max_sentencepiece_length)},
      {"add_dummy_prefix", o.add_dummy_prefix ? "true" : "false"},
      {"split_by_whitespace", o.split_by_whitespace ? "true" : "false"},
      // SentencePiece logs every training step to stderr; keep warnings unless debugging.
      {"minloglevel", log_enabled(LogLevel::kDebug) ? "0" : "1"},
  };
  if (o.model_type != "char") flags.emplace_back("vocab_size", std::to_string(o.vocab_size));
  if (!o.user_defined_symbols.empty()) {
    flags.emplace_back("user_defined_symbols", join(o.user_defined_symbols, ","));
  }
  if (o.input_sentence_size > 0) {
    flags.emplace_back("input_sentence_size", std::to_string(o.input_sentence_size));
    flags.emplace_back("shuffle_input_sentence", "true");
  }
  return flags;
}

}  // namespace

void TokenizerTrainOptions::validate() const {
  if (model_type != "unigram" && model_type != "bpe" && model_type != "char" &&
      model_type != "word") {
    throw_config_error("tokenizer model_type '" + model_type +
                       "' is not one of unigram, bpe, char, word");
  }
  if (model_type != "char" && vocab_size < 4) {
    throw_config_error("tokenizer vocab_size " + std::to_string(vocab_size) +
                       " is too small (needs room for <unk>, <s>, </s> and pieces)");
  }
  if (!(character_coverage > 0.0 && character_coverage <= 1.0)) {
    throw_config_error("tokenizer character_coverage " + std::to_string(character_coverage) +
                       " is not in (0, 1]");
  }
  if (unk_id < 0) throw_config_error("tokenizer unk_id must be >= 0 (SentencePiece needs <unk>)");
  if (max_sentencepiece_length < 1) {
    throw_config_error("tokenizer max_sentencepiece_length must be >= 1");
  }
}

std::string TokenizerTrainOptions::to_string() const {
  std::ostringstream out;
  out << "model_type=" << model_type << " vocab_size=" << vocab_size
      << " character_coverage=" << character_coverage << " unk_id=" << unk_id
      << " bos_id=" << bos_id << " eos_id=" << eos_id << " pad_id=" << pad_id
      << " max_sentencepiece_length=" << max_sentencepiece_length
      << " add_dummy_prefix=" << (add_dummy_prefix ? "true" : "false")
      << " split_by_whitespace=" << (split_by_whitespace ? "true" : "false");
  if (!user_defined_symbols.empty()) {
    out << " user_defined_symbols=" << join(user_defined_symbols, ",");
  }
  return out.str();
}

Tokenizer::Tokenizer() = default;

Tokenizer::~Tokenizer() {
  if (handle_ != nullptr) spm_shim().free(handle_);
}

Tokenizer::Tokenizer(Tokenizer&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      bytes_(std::move(other.bytes_)),
      origin_(std::move(other.origin_)) {}

Tokenizer& Tokenizer::operator=(Tokenizer&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) spm_shim().free(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    bytes_ = std::move(other.bytes_);
    origin_ = std::move(other.origin_);
  }
  return *this;
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  Tokenizer tokenizer;
  tokenizer.load_file(path);
  return tokenizer;
}

Tokenizer Tokenizer::from_bytes(std::string bytes, const std::string& origin) {
  Tokenizer tokenizer;
  tokenizer.load_bytes(std::move(bytes), origin);
  return tokenizer;
}

void Tokenizer::load_file(const std::string& path) {
  load_bytes(read_file_bytes(path), "SentencePiece model '" + path + "'");
}

void Tokenizer::load_bytes(std::string bytes, const std::string& origin) {
  if (bytes.empty()) throw_input_error(origin + ": empty; expected a SentencePiece model");
  const SpmShim& shim = spm_shim();
  char err[kErrLen] = {0};
  void* handle = shim.load_bytes(bytes.data(), bytes.size(), err, sizeof(err));
  if (handle == nullptr) {
    throw_input_error(origin + ": not a valid SentencePiece model (" + err + ")");
  }
  if (handle_ != nullptr) shim.free(handle_);
  handle_ = handle;
  bytes_ = std::move(bytes);
  origin_ = origin;
}

void* Tokenizer::checked_handle() const {
  if (handle_ == nullptr) {
    throw_input_error(
        "tokenizer used before a model was loaded (a sentencepiece.SentencePieceProcessor built "
        "without model_file must be loaded by the pretrainer or the trainer first)");
  }
  return handle_;
}

std::vector<int> Tokenizer::encode(const std::string& text) const {
  void* handle = checked_handle();
  std::vector<int> ids(text.size() + 8);
  char err[kErrLen] = {0};
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int n = spm_shim().encode(handle, text.c_str(), ids.data(), ids.size(), err, kErrLen);
    if (n < 0) throw_input_error(origin_ + ": cannot encode '" + text + "': " + err);
    if (static_cast<size_t>(n) <= ids.size()) {
      ids.resize(static_cast<size_t>(n));
      return ids;
    }
    ids.resize(static_cast<size_t>(n));
  }
  throw Error(ErrorKind::kInternal, origin_ + ": encode result size changed between calls");
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  void* handle = checked_handle();
  const int size = vocab_size();
  for (int id : ids) {
    if (id < 0 || id >= size) {
      throw_input_error(origin_ + ": cannot decode id " + std::to_string(id) +
                        "; the vocabulary has ids 0.." + std::to_string(size - 1));
    }
  }
  std::vector<char> out(ids.size() * 8 + 64);
  char err[kErrLen] = {0};
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int n =
        spm_shim().decode(handle, ids.data(), ids.size(), out.data(), out.size(), err, kErrLen);
    if (n < 0) throw_input_error(origin_ + ": cannot decode: " + err);
    if (static_cast<size_t>(n) < out.size()) return std::string(out.data(), static_cast<size_t>(n));
    out.resize(static_cast<size_t>(n) + 1);
  }
  throw Error(ErrorKind::kInternal, origin_ + ": decode result size changed between calls");
}

std::string Tokenizer::id_to_piece(int id) const {
  void* handle = checked_handle();
  char piece[256] = {0};
  const int n = spm_shim().id_to_piece(handle, id, piece, sizeof(piece));
  if (n < 0) {
    throw_input_error(origin_ + ": no piece with id " + std::to_string(id) +
                      "; the vocabulary has ids 0.." + std::to_string(vocab_size() - 1));
  }
  if (static_cast<size_t>(n) >= sizeof(piece)) {
    std::vector<char> longer(static_cast<size_t>(n) + 1);
    spm_shim().id_to_piece(handle, id, longer.data(), longer.size());
    return std::string(longer.data(), static_cast<size_t>(n));
  }
  return std::string(piece, static_cast<size_t>(n));
}

int Tokenizer::piece_to_id(const std::string& piece) const {
  return spm_shim().piece_to_id(checked_handle(), piece.c_str());
}

int Tokenizer::vocab_size() const { return spm_shim().vocab_size(checked_handle()); }

std::string Tokenizer::summary() const {
  if (!loaded()) return "SentencePiece tokenizer (not loaded yet)";
  return "SentencePiece tokenizer, " + std::to_string(vocab_size()) + " pieces, from " + origin_;
}

Tokenizer Tokenizer::train(const std::vector<std::string>& sentences, const std::string& prefix,
                           const TokenizerTrainOptions& options) {
  options.validate();
  if (sentences.empty()) {
    throw_input_error("tokenizer training for '" + prefix + ".model': no sentences to train on");
  }
  const std::filesystem::path parent = std::filesystem::path(prefix).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec)
    throw_io_error("cannot create the tokenizer folder '" + parent.string() + "': " + ec.message());

  const auto flags = trainer_flags(options, prefix);
  std::vector<const char*> keys, values, lines;
  for (const auto& [key, value] : flags) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  for (const auto& sentence : sentences) lines.push_back(sentence.c_str());
  MASR_LOG_INFO("training a SentencePiece tokenizer on %zu sentences: %s -> %s.model",
                sentences.size(), options.to_string().c_str(), prefix.c_str());
  char err[kErrLen] = {0};
  if (spm_shim().train_sentences(keys.data(), values.data(), keys.size(), lines.data(),
                                 lines.size(), err, kErrLen) != 0) {
    throw_input_error("tokenizer training for '" + prefix + ".model' failed (" +
                      options.to_string() + "): " + err);
  }
  return from_file(prefix + ".model");
}

}  // namespace masr::text

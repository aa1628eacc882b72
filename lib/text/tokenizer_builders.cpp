// lib/text/tokenizer_builders.cpp
// hparams builders: `speechbrain.tokenizers.SentencePiece.SentencePiece` (load or train, as
// SB:tokenizers/SentencePiece.py) and `sentencepiece.SentencePieceProcessor`.
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "data/manifest.h"
#include "text/tokenizer.h"

namespace masr::text {
namespace {

// The sentences of one column of a SpeechBrain CSV.
std::vector<std::string> csv_column_text(const std::string& csv, const std::string& column,
                                         const std::string& origin) {
  const data::Manifest manifest = data::read_speechbrain_csv(csv);
  std::vector<std::string> sentences;
  sentences.reserve(manifest.rows.size());
  for (const auto& row : manifest.rows) {
    const std::string* text = column == "wrd" ? &row.wrd : row.find_extra(column);
    if (text == nullptr) {
      throw_config_error(origin + ": annotation_read '" + column + "' is not a column of '" + csv +
                         "'");
    }
    sentences.push_back(*text);
  }
  return sentences;
}

// An argument's value, or nullptr when absent or None (SpeechBrain's defaults are often None).
const hparams::Value* given(const hparams::Args& args, const std::string& name) {
  const hparams::Value* value = args.find(name);
  return value != nullptr && !value->is_null() ? value : nullptr;
}

std::string string_or(const hparams::Args& args, const std::string& name,
                      const std::string& fallback) {
  const hparams::Value* value = given(args, name);
  return value ? value->as_string() : fallback;
}

int int_or(const hparams::Args& args, const std::string& name, int fallback) {
  const hparams::Value* value = given(args, name);
  return value ? static_cast<int>(value->as_int()) : fallback;
}

TokenizerTrainOptions options_from(const hparams::Args& args) {
  TokenizerTrainOptions o;
  o.model_type = string_or(args, "model_type", "unigram");
  o.vocab_size = static_cast<int>(args.get("vocab_size").as_int());
  if (const hparams::Value* coverage = given(args, "character_coverage")) {
    o.character_coverage = coverage->as_double();
  }
  // SpeechBrain's defaults (the recipes pass bos_id 1 and eos_id 2 explicitly).
  o.unk_id = int_or(args, "unk_id", 0);
  o.bos_id = int_or(args, "bos_id", -1);
  o.eos_id = int_or(args, "eos_id", -1);
  o.pad_id = int_or(args, "pad_id", -1);
  o.max_sentencepiece_length = int_or(args, "max_sentencepiece_length", 10);
  if (const hparams::Value* v = given(args, "split_by_whitespace")) {
    o.split_by_whitespace = v->as_bool();
  }
  if (const hparams::Value* v = given(args, "add_dummy_prefix")) o.add_dummy_prefix = v->as_bool();
  o.input_sentence_size = int_or(args, "num_sequence", 0);
  const std::string symbols = string_or(args, "user_defined_symbols", "");
  for (size_t start = 0; start < symbols.size();) {
    const size_t comma = std::min(symbols.find(',', start), symbols.size());
    if (comma > start) o.user_defined_symbols.push_back(symbols.substr(start, comma - start));
    start = comma + 1;
  }
  return o;
}

std::shared_ptr<hparams::Object> build_speechbrain_sentencepiece(const hparams::Args& args) {
  const std::string origin = args.origin();
  const TokenizerTrainOptions options = options_from(args);
  const std::string model_dir = args.get("model_dir").as_string();
  // SpeechBrain names the model <model_dir>/<vocab_size>_<model_type>.model.
  const std::string prefix = (std::filesystem::path(model_dir) /
                              (std::to_string(options.vocab_size) + "_" + options.model_type))
                                 .string();
  if (std::filesystem::exists(prefix + ".model")) {
    MASR_LOG_INFO("tokenizer: loading %s.model", prefix.c_str());
    return std::make_shared<Tokenizer>(Tokenizer::from_file(prefix + ".model"));
  }
  if (const hparams::Value* v = given(args, "char_format_input"); v && v->as_bool()) {
    throw_config_error(origin + ": char_format_input is not supported");
  }
  const std::string format = string_or(args, "annotation_format", "csv");
  if (format != "csv") {
    throw_config_error(origin + ": annotation_format '" + format + "' is not supported (csv only)");
  }
  const std::string csv = string_or(args, "annotation_train", "");
  const std::string column = string_or(args, "annotation_read", "");
  if (csv.empty() || column.empty()) {
    throw_config_error(origin + ": no model at '" + prefix +
                       ".model', and annotation_train / annotation_read are not both given to "
                       "train one");
  }
  if (given(args, "annotation_list_to_check") != nullptr) {
    MASR_LOG_INFO("tokenizer: annotation_list_to_check is not checked");
  }
  return std::make_shared<Tokenizer>(
      Tokenizer::train(csv_column_text(csv, column, origin), prefix, options));
}

std::shared_ptr<hparams::Object> build_sentencepiece_processor(const hparams::Args& args) {
  auto tokenizer = std::make_shared<Tokenizer>();
  const std::string model_file = string_or(args, "model_file", "");
  if (!model_file.empty()) tokenizer->load_file(model_file);
  return tokenizer;
}

}  // namespace

void register_text_classes(hparams::Registry& registry) {
  registry.implement("speechbrain.tokenizers.SentencePiece.SentencePiece",
                     build_speechbrain_sentencepiece);
  registry.implement("sentencepiece.SentencePieceProcessor", build_sentencepiece_processor);
}

}  // namespace masr::text

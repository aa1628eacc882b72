// lib/train/lm_data.cpp
// Reading LM text, choosing its tokenizer, tokenizing and collating.
#include "train/lm_data.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/lm_model.h"
#include "train/train_data.h"

namespace masr::train {
namespace {

std::vector<std::string> paths_at(const hparams::Hparams& hp, const std::string& key) {
  const hparams::Value* v = hp.find(key);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_sequence()) {
    const std::string path = v->as_string();
    return path.empty() ? std::vector<std::string>{} : std::vector<std::string>{path};
  }
  std::vector<std::string> out;
  for (const hparams::Value& item : v->items()) out.push_back(item.as_string());
  return out;
}

void append_text_file(const std::string& path, data::Manifest& out) {
  std::ifstream in(path);
  if (!in) throw_io_error("LM text file '" + path + "' cannot be opened");
  size_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    data::ManifestRow row;
    row.id = path + ":" + std::to_string(line_number);
    row.source = row.id;
    row.wrd = line;
    out.rows.push_back(std::move(row));
  }
}

}  // namespace

LmCorpusConfig lm_corpus_from(const hparams::Hparams& hp) {
  LmCorpusConfig c;
  c.train_csv = paths_at(hp, "train_csv");
  c.valid_csv = paths_at(hp, "valid_csv");
  c.test_csv = paths_at(hp, "test_csv");
  c.train_text = paths_at(hp, "lm_train_data");
  for (const std::string& path : paths_at(hp, "lm_corpus_path")) c.train_text.push_back(path);
  c.valid_text = paths_at(hp, "lm_valid_data");
  c.test_text = paths_at(hp, "lm_test_data");
  if (c.train_csv.empty() && c.train_text.empty()) {
    throw_config_error("hparams " + hp.source() +
                       ": the LM has no training text; give train_csv, lm_train_data or "
                       "lm_corpus_path");
  }
  return c;
}

data::Manifest read_lm_sentences(const std::vector<std::string>& csvs,
                                 const std::vector<std::string>& texts,
                                 const data::Replacements& replacements) {
  data::Manifest out;
  out.has_durations = false;
  for (const std::string& csv : csvs) {
    out.origin += (out.origin.empty() ? "" : ", ") + csv;
    for (auto& row : data::read_speechbrain_csv(csv, replacements).rows) {
      if (row.wrd.find_first_not_of(" \t") != std::string::npos) out.rows.push_back(std::move(row));
    }
  }
  for (const std::string& text : texts) {
    out.origin += (out.origin.empty() ? "" : ", ") + text;
    append_text_file(text, out);
  }
  return out;
}

std::shared_ptr<const text::Tokenizer> ensure_lm_tokenizer(const hparams::Hparams& hp,
                                                           const TrainConfig& config,
                                                           const data::Manifest& train) {
  if (const hparams::Value* v = hp.find("tokenizer");
      v && v->type() == hparams::Value::Type::kObject && v->instance()->object) {
    auto tokenizer = std::dynamic_pointer_cast<text::Tokenizer>(v->instance()->object);
    if (tokenizer && tokenizer->loaded()) return tokenizer;
  }
  const hparams::Value* file = hp.find("tokenizer_file");
  const std::string path = file && !file->is_null() ? file->as_string() : "";
  if (!path.empty() && std::filesystem::exists(path)) {
    auto shared = models::read_tokenizer_file(path);
    if (shared->vocab_size() != config.output_neurons) {
      throw_config_error("train: tokenizer_file '" + path + "' has " +
                         std::to_string(shared->vocab_size()) + " tokens but output_neurons is " +
                         std::to_string(config.output_neurons));
    }
    return shared;
  }
  return load_or_train_tokenizer(
      config,
      [&train] {
        std::vector<std::string> sentences;
        sentences.reserve(train.rows.size());
        for (const auto& row : train.rows) sentences.push_back(row.wrd);
        return sentences;
      },
      train.origin);
}

std::vector<std::vector<int64_t>> tokenize_sentences(data::Manifest& sentences,
                                                     const text::Tokenizer& tokenizer) {
  std::vector<std::vector<int64_t>> out;
  out.reserve(sentences.rows.size());
  for (auto& row : sentences.rows) {
    const std::vector<int> ids = tokenizer.encode(row.wrd);
    out.emplace_back(ids.begin(), ids.end());
    row.duration = static_cast<double>(ids.size() + 1);
  }
  sentences.has_durations = true;
  return out;
}

LmBatch LmBatch::to(const at::Device& device) const {
  LmBatch b = *this;
  b.input = input.to(device), b.target = target.to(device), b.rel = rel.to(device);
  return b;
}

LmBatch collate_lm(const std::vector<const std::vector<int64_t>*>& sentences, int64_t bos,
                   int64_t eos, int64_t pad) {
  if (sentences.empty()) throw_input_error("collate_lm: empty batch");
  size_t longest = 0;
  for (const auto* s : sentences) longest = std::max(longest, s->size());
  const auto batch = static_cast<int64_t>(sentences.size());
  const auto width = static_cast<int64_t>(longest) + 1;
  LmBatch b;
  b.input = at::full({batch, width}, pad, at::kLong);
  b.target = at::full({batch, width}, pad, at::kLong);
  b.rel = at::empty({batch}, at::kFloat);
  auto input = b.input.accessor<int64_t, 2>();
  auto target = b.target.accessor<int64_t, 2>();
  for (int64_t i = 0; i < batch; ++i) {
    const std::vector<int64_t>& s = *sentences[static_cast<size_t>(i)];
    input[i][0] = bos;
    for (size_t k = 0; k < s.size(); ++k) {
      input[i][static_cast<int64_t>(k) + 1] = s[k];
      target[i][static_cast<int64_t>(k)] = s[k];
    }
    target[i][static_cast<int64_t>(s.size())] = eos;
    b.rel[i] = static_cast<float>(s.size() + 1) / static_cast<float>(width);
    b.tokens += static_cast<int64_t>(s.size()) + 1;
  }
  return b;
}

}  // namespace masr::train

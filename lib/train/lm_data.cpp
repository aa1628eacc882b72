// lib/train/lm_data.cpp
// Reading LM text, choosing its tokenizer, tokenizing and collating.
#include "train/lm_data.h"

#include <ATen/ATen.h>

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "core/error.h"
#include "core/log.h"
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

void append_text_file(const std::string& path, data::Manifest& out, bool speechbrain_transcripts) {
  std::ifstream in(path);
  if (!in) throw_io_error("LM text file '" + path + "' cannot be opened");
  // SpeechBrain's LibriSpeech LM dataset: re.sub(r"\d+-\d+-\d+\s", "", line), then strip, and
  // only lines under 1,000 characters.
  static const std::regex utterance_id("[0-9]+-[0-9]+-[0-9]+[ \t\n\r\f\v]");
  size_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (speechbrain_transcripts) {
      line = std::regex_replace(line, utterance_id, "");
      const size_t first = line.find_first_not_of(" \t\f\v");
      const size_t last = line.find_last_not_of(" \t\f\v");
      line = first == std::string::npos ? "" : line.substr(first, last - first + 1);
      if (line.size() >= 1000) continue;
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    data::ManifestRow row;
    row.id = path + ":" + std::to_string(line_number);
    row.source = row.id;
    row.wrd = line;
    out.rows.push_back(std::move(row));
  }
}

}  // namespace

namespace {

// glob_files: the matches of parts[i..] under `at`.
void glob_into(const std::filesystem::path& at, const std::vector<std::string>& parts, size_t i,
               std::vector<std::string>& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (i == parts.size()) {
    if (fs::is_regular_file(at, ec)) out.push_back(at.string());
    return;
  }
  if (!fs::is_directory(at, ec)) return;
  const std::string& part = parts[i];
  if (part == "**") {
    glob_into(at, parts, i + 1, out);  // no folder
    for (fs::recursive_directory_iterator it(at, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.empty() && name[0] == '.') {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_directory(ec)) glob_into(it->path(), parts, i + 1, out);
    }
    return;
  }
  if (part.find_first_of("*?[") == std::string::npos) {
    glob_into(at / part, parts, i + 1, out);
    return;
  }
  for (fs::directory_iterator it(at, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (fnmatch(part.c_str(), name.c_str(), FNM_PERIOD) == 0) glob_into(it->path(), parts, i + 1, out);
  }
}

std::vector<std::string> transcript_patterns(const hparams::Hparams& hp, const std::string& key,
                                             const std::string& folder) {
  std::vector<std::string> out;
  for (const std::string& pattern : paths_at(hp, key)) {
    out.push_back(pattern.empty() || pattern[0] == '/' || folder.empty()
                      ? pattern
                      : (std::filesystem::path(folder) / pattern).string());
  }
  return out;
}

}  // namespace

std::vector<std::string> glob_files(const std::string& pattern) {
  std::vector<std::string> parts;
  for (size_t start = 0; start <= pattern.size();) {
    const size_t slash = std::min(pattern.find('/', start), pattern.size());
    if (slash > start) parts.push_back(pattern.substr(start, slash - start));
    start = slash + 1;
  }
  std::vector<std::string> out;
  glob_into(!pattern.empty() && pattern[0] == '/' ? "/" : ".", parts, 0, out);
  if (pattern.empty() || pattern[0] != '/') {
    for (auto& path : out) {
      if (path.rfind("./", 0) == 0) path.erase(0, 2);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());  // `**/**` finds a file twice
  return out;
}

LmCorpusConfig lm_corpus_from(const hparams::Hparams& hp) {
  LmCorpusConfig c;
  c.train_csv = paths_at(hp, "train_csv");
  c.valid_csv = paths_at(hp, "valid_csv");
  c.test_csv = paths_at(hp, "test_csv");
  c.train_text = paths_at(hp, "lm_train_data");
  for (const std::string& path : paths_at(hp, "lm_corpus_path")) c.train_text.push_back(path);
  c.valid_text = paths_at(hp, "lm_valid_data");
  c.test_text = paths_at(hp, "lm_test_data");
  const hparams::Value* folder = hp.find("data_folder");
  const std::string root = folder != nullptr && !folder->is_null() ? folder->as_string() : "";
  c.train_patterns = transcript_patterns(hp, "train_transcripts_pattern", root);
  c.valid_patterns = transcript_patterns(hp, "dev_transcripts_pattern", root);
  c.test_patterns = transcript_patterns(hp, "test_transcripts_pattern", root);
  c.speechbrain_transcripts =
      !c.train_patterns.empty() || !c.valid_patterns.empty() || !c.test_patterns.empty();
  if (c.train_csv.empty() && c.train_text.empty() && c.train_patterns.empty()) {
    throw_config_error("hparams " + hp.source() +
                       ": the LM has no training text; give train_csv, lm_train_data, "
                       "lm_corpus_path or train_transcripts_pattern");
  }
  return c;
}

data::Manifest read_lm_sentences(const std::vector<std::string>& csvs,
                                 const std::vector<std::string>& texts,
                                 const data::Replacements& replacements,
                                 const std::vector<std::string>& patterns,
                                 bool speechbrain_transcripts) {
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
    append_text_file(text, out, speechbrain_transcripts);
  }
  for (const std::string& pattern : patterns) {
    const std::vector<std::string> files = glob_files(pattern);
    if (files.empty()) throw_io_error("LM text: no file matches '" + pattern + "'");
    out.origin += (out.origin.empty() ? "" : ", ") + pattern + " (" +
                  std::to_string(files.size()) + (files.size() == 1 ? " file)" : " files)");
    for (const std::string& file : files) append_text_file(file, out, speechbrain_transcripts);
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
  if (!path.empty() && !std::filesystem::exists(path)) {
    // SpeechBrain's LM recipe names the ASR model's tokenizer on the HuggingFace Hub here.
    MASR_LOG_WARN("train: tokenizer_file '%s' does not exist (SpeechBrain would download it); "
                  "the LM gets a tokenizer of its own, so it only fits ASR models trained with "
                  "that one",
                  path.c_str());
  }
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

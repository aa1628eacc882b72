// lib/train/lm_data.h
// The language model's text (SpeechBrain's LM recipe: the `wrd` column of CSVs and/or plain text
// files, one sentence per line), its tokenizer, and padded ([bos]+tokens, tokens+[eos]) batches.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/manifest.h"
#include "hparams/hparams.h"
#include "text/tokenizer.h"
#include "train/train_config.h"

namespace masr::train {

// Where the text of each split comes from. hparams keys (each a path or a list of paths):
//   train_csv / valid_csv / test_csv            SpeechBrain CSVs: their `wrd` column
//   lm_train_data / lm_valid_data / lm_test_data plain text, one sentence per line (SB's names)
//   lm_corpus_path                               more plain training text (e.g.
//   librispeech-lm-norm)
//   train_transcripts_pattern / dev_... / test_...  SpeechBrain's LibriSpeech LM recipe: glob
//                                                patterns under data_folder for the LibriSpeech
//                                                *.trans.txt files of each split
struct LmCorpusConfig {
  std::vector<std::string> train_csv, valid_csv, test_csv;
  std::vector<std::string> train_text, valid_text, test_text;
  // data_folder joined with each *_transcripts_pattern; expanded by glob_files when read.
  std::vector<std::string> train_patterns, valid_patterns, test_patterns;
  // Set with the patterns (SpeechBrain's LM dataset script): every text line loses LibriSpeech
  // utterance ids ("103-1240-0000 "), and lines of 1,000 characters or more are left out.
  bool speechbrain_transcripts = false;
};
LmCorpusConfig lm_corpus_from(const hparams::Hparams& hp);

// Python's glob.glob(pattern, recursive=True), sorted: `*`, `?` and `[...]` within one path
// component (not matching a leading '.'), `**` as a whole component for any number of folders,
// zero included.
std::vector<std::string> glob_files(const std::string& pattern);

// The sentences of CSVs and text files as manifest rows (id "<file>:<line>", wrd the sentence;
// blank lines skipped), the files matching `patterns` read as text files. Missing files, and
// patterns that match none, are I/O errors naming them. `speechbrain_transcripts`: see above.
data::Manifest read_lm_sentences(const std::vector<std::string>& csvs,
                                 const std::vector<std::string>& texts,
                                 const data::Replacements& replacements = {},
                                 const std::vector<std::string>& patterns = {},
                                 bool speechbrain_transcripts = false);

// The LM's tokenizer: hparams `tokenizer` when loaded; else `tokenizer_file` when that file exists
// (a SentencePiece .model, or a model.masr file whose tokenizer is then shared); else the
// SentencePiece model of the save folder, trained on `train` when absent.
std::shared_ptr<const text::Tokenizer> ensure_lm_tokenizer(const hparams::Hparams& hp,
                                                           const TrainConfig& config,
                                                           const data::Manifest& train);

// Token ids of every row; sets each row's duration to its token count (the batch samplers then
// measure batches in tokens).
std::vector<std::vector<int64_t>> tokenize_sentences(data::Manifest& sentences,
                                                     const text::Tokenizer& tokenizer);

struct LmBatch {
  at::Tensor input;    // (B, U+1) int64: [bos] + tokens, padded with pad_index
  at::Tensor target;   // (B, U+1) int64: tokens + [eos], padded with pad_index
  at::Tensor rel;      // (B) float: (length + 1) / (U + 1)
  int64_t tokens = 0;  // predicted positions (tokens + eos) in the batch
  LmBatch to(const at::Device& device) const;
};
LmBatch collate_lm(const std::vector<const std::vector<int64_t>*>& sentences, int64_t bos,
                   int64_t eos, int64_t pad);

}  // namespace masr::train

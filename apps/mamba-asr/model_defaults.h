// apps/mamba-asr/model_defaults.h
// A model folder's decode defaults: decode.json beside model.masr names options that `decode`
// takes when the command line does not give them, so that a shipped model decodes the way it
// was measured (models/conmamba-s2s-synth-en: its CTC head with the word 2-gram beside it).
//
//   {"search": "ctc-beam", "beam": 32, "arpa": "words-2gram.arpa", "arpa-weight": 0.8}
//
// Keys are decode's option names without "--" (kModelDefaultKeys); values are strings or
// numbers; a file value ("arpa", "lm") is relative to the folder.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace masr::cli {

// The options decode.json may set: the search and its settings, and the LMs.
extern const std::vector<std::string> kModelDefaultKeys;

struct ModelDefaults {
  std::string file;  // the decode.json read; empty: the model has none
  // ("--arpa", "<folder>/words-2gram.arpa"), by key
  std::vector<std::pair<std::string, std::string>> options;
};

// The defaults of `model` (a model file, or a folder holding model.masr): its folder's
// decode.json. Throws a config error naming the file when it is not a JSON object of known keys
// with string or number values, or names a file that does not exist.
ModelDefaults read_model_defaults(const std::string& model);

}  // namespace masr::cli

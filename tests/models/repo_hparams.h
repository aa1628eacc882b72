// tests/models/repo_hparams.h
// Loading one of the repository's hparams files in tests, optionally as a causal model.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "hparams/hparams.h"

namespace masr::test {

// `file` (relative to the source tree) with its Transformer's `causal: False` turned to True when
// `causal`: it is an argument of the !new: object, not a top-level key that an override could set.
inline hparams::Hparams load_repo_hparams(const std::string& file,
                                          const hparams::LoadOptions& options, bool causal) {
  const std::string path = std::string(MASR_SOURCE_DIR) + "/" + file;
  if (!causal) return hparams::load_file(path, options);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const std::string from = "    causal: False\n";
  const size_t at = yaml.find(from);
  REQUIRE(at != std::string::npos);
  yaml.replace(at, from.size(), "    causal: True\n");
  return hparams::load_text(yaml, options, path);
}

}  // namespace masr::test

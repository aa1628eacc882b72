// tests/text/text_corpus.h
// A deterministic LibriSpeech-like corpus (uppercase words, apostrophes, single spaces) for the
// tokenizer and scoring tests, and a temporary folder that removes itself.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/remove_tree.h"

namespace masr::testing {

// `count` sentences of 4..14 words drawn (fixed seed) from a small vocabulary that covers all 26
// letters and the apostrophe.
inline std::vector<std::string> librispeech_like_sentences(size_t count) {
  static const std::vector<std::string> words = {
      "THE",  "QUICK", "BROWN", "FOX",   "JUMPS",  "OVER",     "LAZY",  "DOG",      "AND",
      "HE",   "SAID",  "THAT",  "IT'S",  "DON'T",  "WOULDN'T", "HIS",   "MOTHER'S", "HOUSE",
      "WAS",  "NEAR",  "RIVER", "WHERE", "SHE",    "WALKED",   "EVERY", "MORNING",  "WITH",
      "A",    "JAR",   "OF",    "HONEY", "ZEAL",   "VEXED",    "KING",  "QUEEN",    "PUZZLED",
      "BY",   "SIXTY", "OXEN",  "IN",    "YOUR",   "GARDEN",   "MIGHT", "COULD",    "HAVE",
      "BEEN", "WHICH", "THEY",  "KNEW",  "ALWAYS", "I'LL",     "JUDGE"};
  std::mt19937 rng(1234);
  std::uniform_int_distribution<size_t> pick(0, words.size() - 1);
  std::uniform_int_distribution<int> length(4, 14);
  std::vector<std::string> out;
  out.push_back("THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG");  // every letter at least once
  while (out.size() < count) {
    std::string sentence;
    const int n = length(rng);
    for (int i = 0; i < n; ++i) sentence += (i ? " " : "") + words[pick(rng)];
    out.push_back(sentence);
  }
  return out;
}

class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::random_device device;
    path_ = std::filesystem::temp_directory_path() /
            ("masr_" + tag + "_" + std::to_string(device()) + std::to_string(device()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { masr::remove_tree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `bytes` to the file `name` in this folder and returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string path = file(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace masr::testing

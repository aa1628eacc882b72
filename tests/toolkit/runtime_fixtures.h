// tests/toolkit/runtime_fixtures.h
// Helpers for the runtime tests: a temporary plan cache (XDG_CACHE_HOME) and the tiny recipe.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "core/remove_tree.h"

namespace masr::test {

inline const std::string kTinyHparams =
    std::string(MASR_SOURCE_DIR) + "/hparams/CTC/conmamba_tiny.yaml";

// Points XDG_CACHE_HOME at a fresh temporary folder for the test's lifetime.
class TempCache {
 public:
  TempCache() {
    char pattern[] = "/tmp/masr-plans-XXXXXX";
    dir_ = mkdtemp(pattern);
    if (const char* old = std::getenv("XDG_CACHE_HOME")) previous_ = old;
    setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  ~TempCache() {
    if (previous_) {
      setenv("XDG_CACHE_HOME", previous_->c_str(), 1);
    } else {
      unsetenv("XDG_CACHE_HOME");
    }
    masr::remove_tree(dir_);
  }
  TempCache(const TempCache&) = delete;
  TempCache& operator=(const TempCache&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::optional<std::string> previous_;
};

}  // namespace masr::test

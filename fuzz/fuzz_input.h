// fuzz/fuzz_input.h
// Helpers shared by the fuzz targets: the input as a file (most parsers take paths), and the
// rule that a masr::Error is the only acceptable way to reject an input.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/log.h"

namespace masr::fuzz {

// A private folder for this process, removed at exit.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() / ("masr_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
    set_log_level(LogLevel::kError);  // parsers log warnings on odd but accepted input
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  // Writes `bytes` to `name` inside the folder and returns its path.
  std::string write(const std::string& name, const uint8_t* data, size_t size) const {
    const std::string file = (path_ / name).string();
    FILE* out = std::fopen(file.c_str(), "wb");
    if (out == nullptr) return file;
    if (size > 0) std::fwrite(data, 1, size, out);
    std::fclose(out);
    return file;
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace masr::fuzz

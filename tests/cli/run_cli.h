// tests/cli/run_cli.h
// Runs the mamba-asr binary as a user would (through the shell) and captures what it prints.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace masr::testing {

struct CliResult {
  int code = -1;       // the exit code; -1 when the process did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `exe` with `args`; `env`: VAR=value assignments for the command's environment.
inline CliResult run_program(const std::string& exe, const std::string& args,
                             const std::string& env = "") {
  const std::string command = (env.empty() ? "" : "env " + env + " ") + exe + " " + args + " 2>&1";
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The mamba-asr binary of this build, as a user would run it.
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  return run_program(MASR_EXE, args, env);
}

// A 16-bit PCM mono WAV at 16 kHz holding `samples`.
inline std::string wav_bytes(const std::vector<int16_t>& samples) {
  auto put = [](std::string& out, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i) & 0xFF));
  };
  std::string out = "RIFF";
  put(out, static_cast<uint32_t>(36 + 2 * samples.size()), 4);
  out += "WAVEfmt ";
  put(out, 16, 4);
  put(out, 1, 2);  // PCM
  put(out, 1, 2);  // mono
  put(out, 16000, 4);
  put(out, 32000, 4);
  put(out, 2, 2);
  put(out, 16, 2);
  out += "data";
  put(out, static_cast<uint32_t>(2 * samples.size()), 4);
  for (int16_t s : samples) put(out, static_cast<uint16_t>(s), 2);
  return out;
}

// A fresh folder under the temporary directory, removed with everything in it.
class CliScratch {
 public:
  explicit CliScratch(const std::string& tag = "cli") {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("masr-" + tag + "-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~CliScratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  CliScratch(const CliScratch&) = delete;
  CliScratch& operator=(const CliScratch&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `bytes` to `name` (folders created) and returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::filesystem::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary) << bytes;
    return file(name);
  }
  // Copies the file `from` to `name` (folders created) and returns its path.
  std::string copy(const std::string& from, const std::string& name) const {
    std::filesystem::create_directories((path_ / name).parent_path());
    std::filesystem::copy_file(from, path_ / name,
                               std::filesystem::copy_options::overwrite_existing);
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace masr::testing

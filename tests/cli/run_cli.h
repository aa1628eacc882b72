// tests/cli/run_cli.h
// Runs the mamba-asr binary as a user would (through the shell) and captures what it prints.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace masr::testing {

struct CliResult {
  int code = -1;       // the exit code; -1 when the process did not exit normally
  std::string output;  // stdout and stderr together
};

// `env`: VAR=value assignments for the command's environment.
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  const std::string command =
      (env.empty() ? "" : "env " + env + " ") + std::string(MASR_EXE) + " " + args + " 2>&1";
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

}  // namespace masr::testing

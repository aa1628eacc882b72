// lib/core/error.h
// The one exception type of mamba-asr. Every message names the input at fault and what would fix
// it.
#pragma once

#include <stdexcept>
#include <string>

namespace masr {

// Exit codes, documented in docs/cli.md. `main` maps each error kind to one of them.
enum class ExitCode : int {
  kOk = 0,
  kFailure = 1,  // a runtime failure: bad input data, an I/O error, an internal error
  kUsage = 2,    // the command line is wrong (unknown option, missing argument)
  kConfig = 3,   // an hparams file or override is wrong
  kInterrupted = 130,
};

// Error kinds let `main` choose the exit code and tests check what went wrong, while the message
// carries everything a user needs.
enum class ErrorKind { kConfig, kInput, kIo, kUsage, kInternal };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  explicit Error(const std::string& message) : Error(ErrorKind::kInput, message) {}

  ErrorKind kind() const { return kind_; }
  ExitCode exit_code() const;

 private:
  ErrorKind kind_;
};

// Shorthands that read well at the throw site.
[[noreturn]] void throw_config_error(const std::string& message);
[[noreturn]] void throw_input_error(const std::string& message);
[[noreturn]] void throw_io_error(const std::string& message);

}  // namespace masr

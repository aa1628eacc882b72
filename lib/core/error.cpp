// lib/core/error.cpp
#include "core/error.h"

namespace masr {

ExitCode Error::exit_code() const {
  switch (kind_) {
    case ErrorKind::kConfig:
      return ExitCode::kConfig;
    case ErrorKind::kUsage:
      return ExitCode::kUsage;
    default:
      return ExitCode::kFailure;
  }
}

void throw_config_error(const std::string& message) { throw Error(ErrorKind::kConfig, message); }
void throw_input_error(const std::string& message) { throw Error(ErrorKind::kInput, message); }
void throw_io_error(const std::string& message) { throw Error(ErrorKind::kIo, message); }

}  // namespace masr

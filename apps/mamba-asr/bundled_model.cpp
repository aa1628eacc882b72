// apps/mamba-asr/bundled_model.cpp
#include "bundled_model.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "core/executable.h"
#include "core/log.h"

namespace masr::cli {
namespace fs = std::filesystem;

namespace {

// Where the models folder may be, relative to the running binary: a build folder inside the
// source tree (<tree>/build/bin), the tree's own bin/, an install prefix.
std::vector<fs::path> model_folders() {
  const std::string dir = executable_dir();
  if (dir.empty()) return {};
  const fs::path bin = dir;
  return {bin / ".." / ".." / "models", bin / ".." / "models",
          bin / ".." / "share" / "mamba-asr" / "models"};
}

}  // namespace

std::string default_model(const std::string& command, const std::string& name) {
  if (const char* env = std::getenv("MASR_MODEL"); env != nullptr && *env != '\0') {
    if (!fs::exists(env)) {
      throw Error(ErrorKind::kUsage, command + ": no --model given, and MASR_MODEL names '" +
                                         std::string(env) + "', which does not exist");
    }
    MASR_LOG_INFO("%s: no --model given: MASR_MODEL's %s", command.c_str(), env);
    return env;
  }
  std::string looked;
  for (const fs::path& folder : model_folders()) {
    const fs::path candidate = (folder / name).lexically_normal();
    std::error_code ec;
    if (fs::exists(candidate / "model.masr", ec)) {
      MASR_LOG_INFO(
          "%s: no --model given: the bundled model %s (trained on synthetic speech only: its "
          "README.md says what it can and cannot recognize)",
          command.c_str(), candidate.c_str());
      return candidate.string();
    }
    if (looked.find(candidate.string()) == std::string::npos) {
      looked += (looked.empty() ? "" : ", ") + candidate.string();
    }
  }
  throw Error(ErrorKind::kUsage,
              command + ": no --model given, and the bundled model " + name + " was not found" +
                  (looked.empty() ? std::string() : " (looked in " + looked + ")") +
                  "; give --model FILE or set MASR_MODEL");
}

}  // namespace masr::cli

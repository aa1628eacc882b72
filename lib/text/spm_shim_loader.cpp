// lib/text/spm_shim_loader.cpp
// Locates libmasr_spm_shim.so ($MASR_SPM_SHIM, next to the executable, the build tree) and binds
// its functions with dlsym.
#include "text/spm_shim_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "../../third_party/sentencepiece_shim/spm_shim.h"
#include "core/error.h"
#include "core/executable.h"
#include "core/log.h"

#ifndef MASR_SPM_SHIM_NAME
#define MASR_SPM_SHIM_NAME "libmasr_spm_shim.so"
#endif

namespace masr::text {
namespace {

bool file_exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

// The candidates in order of preference, each with a word on where it comes from.
std::vector<std::pair<std::string, std::string>> candidates() {
  std::vector<std::pair<std::string, std::string>> out;
  if (const char* env = std::getenv("MASR_SPM_SHIM"); env != nullptr && *env != '\0') {
    out.emplace_back(env, "$MASR_SPM_SHIM");
    return out;  // an explicit choice is never silently replaced by another file
  }
  const std::string exe_dir = executable_dir();
  if (!exe_dir.empty()) {
    out.emplace_back(exe_dir + "/../lib/" MASR_SPM_SHIM_NAME, "next to the executable");
    out.emplace_back(exe_dir + "/" MASR_SPM_SHIM_NAME, "beside the executable");
  }
#ifdef MASR_SPM_SHIM_BUILD_PATH
  out.emplace_back(MASR_SPM_SHIM_BUILD_PATH, "the build tree");
#endif
  return out;
}

// (Not named `bind`: with a std::string argument, ADL would prefer std::bind.)
template <typename F>
void bind_symbol(void* library, const char* name, F& target, const std::string& path) {
  void* symbol = ::dlsym(library, name);
  if (symbol == nullptr) {
    throw_io_error("SentencePiece shim '" + path + "' lacks the function " + name +
                   "; rebuild it with this version of mamba-asr (target masr_spm_shim)");
  }
  target = reinterpret_cast<F>(symbol);
}

SpmShim open_shim() {
  SpmShim shim{};
  shim.path = locate_spm_shim();
  // RTLD_LOCAL keeps the module's symbols (and libsentencepiece's protobuf 3.14, which it exports)
  // out of the global namespace, so LibTorch's protobuf 3.21 is never interposed. RTLD_DEEPBIND
  // makes the module and its dependencies resolve their own symbols before the process's, so
  // SentencePiece does not bind to LibTorch's protobuf either. RTLD_NOW reports a broken module
  // here rather than at the first call.
  void* library = ::dlopen(shim.path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (library == nullptr) {
    const char* why = ::dlerror();
    throw_io_error("cannot load the SentencePiece shim '" + shim.path +
                   "': " + (why != nullptr ? why : "unknown dlopen error"));
  }
  bind_symbol(library, "masr_spm_abi_version", shim.abi_version, shim.path);
  if (shim.abi_version() != MASR_SPM_ABI_VERSION) {
    throw_io_error("SentencePiece shim '" + shim.path + "' has ABI version " +
                   std::to_string(shim.abi_version()) + "; this mamba-asr needs " +
                   std::to_string(MASR_SPM_ABI_VERSION) + " (rebuild target masr_spm_shim)");
  }
  bind_symbol(library, "masr_spm_load", shim.load, shim.path);
  bind_symbol(library, "masr_spm_load_bytes", shim.load_bytes, shim.path);
  bind_symbol(library, "masr_spm_free", shim.free, shim.path);
  bind_symbol(library, "masr_spm_vocab_size", shim.vocab_size, shim.path);
  bind_symbol(library, "masr_spm_piece_to_id", shim.piece_to_id, shim.path);
  bind_symbol(library, "masr_spm_id_to_piece", shim.id_to_piece, shim.path);
  bind_symbol(library, "masr_spm_encode", shim.encode, shim.path);
  bind_symbol(library, "masr_spm_decode", shim.decode, shim.path);
  bind_symbol(library, "masr_spm_train_sentences", shim.train_sentences, shim.path);
  // Never dlclose: tokenizers may outlive any owner, and unloading protobuf is not safe.
  MASR_LOG_DEBUG("SentencePiece shim loaded from %s", shim.path.c_str());
  return shim;
}

}  // namespace

std::string locate_spm_shim() {
  std::string tried;
  for (const auto& [path, where] : candidates()) {
    if (file_exists(path)) return path;
    tried += "\n  " + path + " (" + where + ")";
  }
  throw_io_error("the SentencePiece shim " MASR_SPM_SHIM_NAME " was not found; tried:" + tried +
                 "\nset MASR_SPM_SHIM to its path, or build the target masr_spm_shim");
}

const SpmShim& spm_shim() {
  // A magic static: initialised once, thread-safely; if open_shim() throws, the next call retries.
  static const SpmShim shim = open_shim();
  return shim;
}

}  // namespace masr::text

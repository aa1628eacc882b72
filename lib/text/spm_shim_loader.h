// lib/text/spm_shim_loader.h
// Finds and dlopen()s libmasr_spm_shim.so once per process and exposes its C functions, so that
// nothing of SentencePiece (or its protobuf 3.14) is ever linked into mamba-asr itself.
#pragma once

#include <cstddef>
#include <string>

namespace masr::text {

// The shim's C interface (see third_party/sentencepiece_shim/spm_shim.h), as function pointers.
struct SpmShim {
  int (*abi_version)();
  void* (*load)(const char*, char*, size_t);
  void* (*load_bytes)(const char*, size_t, char*, size_t);
  void (*free)(void*);
  int (*vocab_size)(void*);
  int (*piece_to_id)(void*, const char*);
  int (*id_to_piece)(void*, int, char*, size_t);
  int (*encode)(void*, const char*, int*, size_t, char*, size_t);
  int (*decode)(void*, const int*, size_t, char*, size_t, char*, size_t);
  int (*train_sentences)(const char* const*, const char* const*, size_t, const char* const*, size_t,
                         char*, size_t);
  std::string path;  // where it was loaded from
};

// Loads the shim on first use (thread-safe) and returns it; throws an I/O error naming every
// place tried, or a missing symbol / ABI mismatch.
const SpmShim& spm_shim();

// The shim module's path as it would be loaded: $MASR_SPM_SHIM, else `<exe dir>/../lib/`, else
// the build tree. Throws an I/O error listing the places tried when none exists.
std::string locate_spm_shim();

}  // namespace masr::text

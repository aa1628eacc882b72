// third_party/sentencepiece_shim/spm_shim.h
// A C interface to SentencePiece, compiled into its own shared module (libmasr_spm_shim.so).
//
// Why a separate module: Debian's libsentencepiece carries its own copy of protobuf (3.14) and
// exports its symbols; LibTorch links protobuf 3.21. Linking both into one process crashes in
// protobuf's static initialisation or aborts on its version check. mamba-asr therefore never links
// sentencepiece: lib/text loads this module with dlopen(RTLD_LOCAL | RTLD_DEEPBIND), so the
// module and its protobuf resolve their own symbols first and nothing leaks into the global scope.
// Only plain C types cross the boundary.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MASR_SPM_ABI_VERSION 2

// Every function that can fail returns 0 on success, or -1 with a message in err (NUL-terminated,
// truncated to err_len).
int masr_spm_abi_version(void);

// Loads a SentencePiece model file. Returns a handle, or NULL with a message in err.
void* masr_spm_load(const char* model_path, char* err, size_t err_len);
// Loads a model from its serialized bytes (as stored inside a mamba-asr checkpoint).
void* masr_spm_load_bytes(const char* data, size_t size, char* err, size_t err_len);
void masr_spm_free(void* handle);

int masr_spm_vocab_size(void* handle);
int masr_spm_piece_to_id(void* handle, const char* piece);
// Writes the piece for id into out (NUL-terminated); returns its length, or -1 for a bad id.
int masr_spm_id_to_piece(void* handle, int id, char* out, size_t out_len);

// Encodes UTF-8 text into ids. Returns the number of ids; if it exceeds capacity, only capacity
// ids were written and the caller retries with a larger buffer. Returns -1 on error.
int masr_spm_encode(void* handle, const char* text, int* ids, size_t capacity, char* err,
                    size_t err_len);
// Decodes ids into UTF-8 text. Returns the text length (excluding NUL); if it is >= out_len the
// text was truncated and the caller retries with a larger buffer. Returns -1 on error.
int masr_spm_decode(void* handle, const int* ids, size_t n_ids, char* out, size_t out_len,
                    char* err, size_t err_len);

// Trains a model; `args` is SentencePiece's trainer flag string
// ("--input=... --model_prefix=... --vocab_size=..."). Returns 0 or -1 with err.
int masr_spm_train(const char* args, char* err, size_t err_len);

// Trains a model from flags given as n_flags key/value pairs (keys without "--", so paths with
// spaces survive) over n_sentences in-memory sentences (no temporary text file). Since ABI 2.
int masr_spm_train_sentences(const char* const* keys, const char* const* values, size_t n_flags,
                             const char* const* sentences, size_t n_sentences, char* err,
                             size_t err_len);

#ifdef __cplusplus
}
#endif

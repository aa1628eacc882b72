// lib/core/remove_tree.h
// Recursive deletion of a file or folder without std::filesystem::remove_all: pip's LibTorch 2.x
// (libtorch.so) exports its own copy of that function, which the dynamic linker binds in place of
// libstdc++'s, and that copy jumps to a null pointer (seen on the GPU machine: checkpoint pruning
// and temporary folders crashed with SIGSEGV in std::filesystem::remove_all from libtorch.so).
#pragma once

#include <string>

namespace masr {

// Deletes `path` and everything under it (symbolic links are removed, not followed). A missing
// path is not an error. Returns false, with `error` set to the first failure, if something stays.
bool remove_tree(const std::string& path, std::string* error = nullptr) noexcept;

}  // namespace masr

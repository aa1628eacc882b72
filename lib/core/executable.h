// lib/core/executable.h
// Where the running binary is: for files that travel with it (the SentencePiece shim, the
// bundled models).
#pragma once

#include <string>

namespace masr {

// The folder of the running executable (/proc/self/exe, links resolved); "" when unknown.
std::string executable_dir();

}  // namespace masr

// lib/models/pickle_check.h
// A structural check of the pickle inside a torch.save / torch::pickle_save archive, run before
// LibTorch's unpickler, which trusts its input (it crashes or allocates gigabytes on forged files).
#pragma once

#include <string>

namespace masr::models {

// `zip` is the archive. Returns "" when it is well formed as far as this check sees, else the
// reason. The check reads data.pkl with LibTorch's own zip reader (so it walks exactly the bytes
// torch::pickle_load will) and refuses: a zip record declaring more bytes than the archive
// (LibTorch allocates that much before reading it); an archive that reader cannot open or without
// data.pkl; an opcode LibTorch's pickler never writes; a length running past the pickle; a stack or
// mark underflow; an odd item count for a dict; a memo index read before it is written or written
// out of order; a tensor storage whose type is not a torch.<T>Storage global, whose size is
// negative, or whose record holds fewer bytes than it claims.
std::string pickle_problem(const std::string& zip);

}  // namespace masr::models

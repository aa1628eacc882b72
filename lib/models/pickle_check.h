// lib/models/pickle_check.h
// A structural check of the pickle inside a torch.save / torch::pickle_save archive, run before
// LibTorch's unpickler, which trusts its input (it crashes or allocates gigabytes on forged files).
#pragma once

#include <ATen/Tensor.h>

#include <string>
#include <utility>
#include <vector>

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

// A torch::pickle_save'd dict of name -> tensor, read only after pickle_problem passes it, and
// with every tensor checked to lie inside its storage. Throws an input error "<what> is corrupt
// (<reason>)" or "<what> cannot be read (corrupt): <reason>"; `what` names the file or section.
std::vector<std::pair<std::string, at::Tensor>> load_pickled_tensors(const std::string& zip,
                                                                     const std::string& what);

}  // namespace masr::models

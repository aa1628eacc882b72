// lib/models/pickle_check.h
// A structural check of the pickle inside a torch.save / torch::pickle_save archive, run before
// LibTorch's unpickler, which trusts its input (it crashes or allocates gigabytes on forged files).
#pragma once

#include <string>

namespace masr::models {

// `zip` is the archive. Returns "" when the pickle in its data.pkl is well formed as far as this
// check sees, else the reason: a length running past the archive, a stack or mark underflow, a
// memo read of an index never written. It stops (returning "") at an opcode it does not know;
// LibTorch refuses those itself.
std::string pickle_problem(const std::string& zip);

}  // namespace masr::models

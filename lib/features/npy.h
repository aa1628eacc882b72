// lib/features/npy.h
// NumPy .npy files (format version 1.0, little-endian float32, C order): how `mamba-asr features`
// writes features and how tests read Python references.
#pragma once

#include <ATen/Tensor.h>

#include <string>

namespace masr::features {

// Writes any float tensor as float32. Throws masr::Error (io) naming the path on failure.
void write_npy(const std::string& path, const at::Tensor& tensor);
// Reads '<f4', '<f8' or '<i8' C-order arrays as float32; throws masr::Error naming the path
// and what is wrong (not .npy, unsupported dtype, Fortran order, truncated data).
at::Tensor read_npy(const std::string& path);

}  // namespace masr::features

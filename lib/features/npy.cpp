// lib/features/npy.cpp
// The .npy layout: "\x93NUMPY", version 1.0, a little-endian uint16 header length, a Python dict
// literal padded with spaces to a multiple of 64 bytes and ending in '\n', then the raw data.
#include "features/npy.h"

#include <ATen/ATen.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"

namespace masr::features {
namespace {

[[noreturn]] void bad_npy(const std::string& path, const std::string& reason) {
  throw_input_error("npy file '" + path + "': " + reason);
}

std::string shape_literal(at::IntArrayRef sizes) {
  // NumPy's own spelling: "(3,)" for one dimension, "(101, 80)" for two.
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << (sizes.size() == 1 ? ",)" : ")");
  return out.str();
}

}  // namespace

void write_npy(const std::string& path, const at::Tensor& tensor) {
  const at::Tensor data = tensor.detach().to(at::kCPU, at::kFloat).contiguous();
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_literal(data.sizes()) + ", }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  const uint16_t length = static_cast<uint16_t>(header.size());
  std::string bytes = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bytes += static_cast<char>(length & 0xff);
  bytes += static_cast<char>(length >> 8);
  bytes += header;
  bytes.append(static_cast<const char*>(data.data_ptr()), data.numel() * sizeof(float));
  // Atomic: a full disk or a kill leaves no truncated feature file behind.
  write_file_atomically(path, bytes);
}

at::Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, "npy file '" + path + "': cannot open");
  char magic[10] = {0};
  in.read(magic, 10);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad_npy(path, "not a .npy file");
  if (magic[6] != 1) bad_npy(path, "only format version 1.0 is supported");
  const size_t length = static_cast<unsigned char>(magic[8]) |
                        (static_cast<size_t>(static_cast<unsigned char>(magic[9])) << 8);
  std::string header(length, '\0');
  in.read(header.data(), static_cast<std::streamsize>(length));
  if (!in) bad_npy(path, "truncated header");
  at::ScalarType dtype;
  if (header.find("'<f4'") != std::string::npos) {
    dtype = at::kFloat;
  } else if (header.find("'<f8'") != std::string::npos) {
    dtype = at::kDouble;
  } else if (header.find("'<i8'") != std::string::npos) {
    dtype = at::kLong;
  } else {
    bad_npy(path, "dtype must be '<f4', '<f8' or '<i8' (header " + header + ")");
  }
  if (header.find("'fortran_order': False") == std::string::npos) {
    bad_npy(path, "Fortran order is not supported");
  }
  const size_t open = header.find('(', header.find("'shape'"));
  const size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) bad_npy(path, "no shape");
  std::vector<int64_t> shape;
  std::istringstream dims(header.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(dims, item, ',');) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(item));
    } catch (const std::exception&) {
      bad_npy(path, "bad shape in header " + header);
    }
    if (shape.back() < 0) bad_npy(path, "negative dimension in header " + header);
  }
  at::Tensor result = at::empty(shape, dtype);
  const auto bytes = static_cast<std::streamsize>(result.numel() * result.element_size());
  in.read(static_cast<char*>(result.data_ptr()), bytes);
  if (in.gcount() != bytes) bad_npy(path, "truncated data");
  return result.to(at::kFloat);
}

}  // namespace masr::features

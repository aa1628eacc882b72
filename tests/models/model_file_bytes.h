// tests/models/model_file_bytes.h
// Byte-level helpers of the hostile model-file tests: read and write a file whole, and zlib's
// CRC-32, to forge files whose checksum is right but whose sections lie.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

namespace masr::testing {

inline std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline uint32_t crc32(const std::string& bytes, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= static_cast<uint8_t>(bytes[i]);
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace masr::testing

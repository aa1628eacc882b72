// lib/core/crc32.h
// zlib's CRC-32 (polynomial 0xEDB88320), used to detect corrupt model and checkpoint files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace masr {

uint32_t crc32(const char* data, size_t size);
inline uint32_t crc32(const std::string& bytes) { return crc32(bytes.data(), bytes.size()); }

}  // namespace masr

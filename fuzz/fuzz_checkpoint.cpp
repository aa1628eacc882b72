// fuzz/fuzz_checkpoint.cpp
// Fuzzes the model file container (models/checkpoint_file.cpp). An input ending in the end
// marker gets its CRC-32 recomputed, so mutations reach the section parser and the state
// unpickler instead of stopping at the checksum (which tests/models pins). The tensors read are
// then touched byte by byte.
#include <cstdint>
#include <cstring>
#include <string>

#include <ATen/ATen.h>

#include "core/error.h"
#include "fuzz_input.h"
#include "models/checkpoint.h"

namespace {

uint32_t crc32(const uint8_t* bytes, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= bytes[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const masr::fuzz::ScratchDir scratch;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size >= 12 && std::memcmp(data + size - 8, "MASR_END", 8) == 0) {
    const uint32_t crc = crc32(data, size - 12);
    for (int i = 0; i < 4; ++i) bytes[size - 12 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  }
  const std::string path =
      scratch.write("model.masr", reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  try {
    const auto data = masr::models::read_checkpoint(path);
    // Reads each tensor's storage here, in instrumented code (LibTorch is not), so a storage
    // claiming more bytes than LibTorch allocated for it is an ASan report, not a silent read.
    volatile uint8_t sum = 0;
    for (const auto& [name, tensor] : data.state) {
      const auto* bytes = static_cast<const uint8_t*>(tensor.storage().data_ptr().get());
      for (size_t i = 0; i < tensor.storage().nbytes(); ++i) sum = sum + bytes[i];
    }
  } catch (const masr::Error&) {
  }
  return 0;
}

// tests/core/test_crc32.cpp
#include <catch2/catch.hpp>

#include <string>

#include "core/crc32.h"

TEST_CASE("crc32: zlib's check values", "[core]") {
  CHECK(masr::crc32(std::string()) == 0x00000000u);
  CHECK(masr::crc32(std::string("123456789")) == 0xCBF43926u);  // the CRC-32 check value
  CHECK(masr::crc32(std::string("The quick brown fox jumps over the lazy dog")) == 0x414FA339u);
  CHECK(masr::crc32(std::string(1, '\0')) == 0xD202EF8Du);
}

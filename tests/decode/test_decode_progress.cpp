// tests/decode/test_decode_progress.cpp
// The decode progress line (what CI logs and pipes get when stderr is not a terminal).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "decode/decode_progress.h"

using masr::decode::decode_status_line;
using masr::decode::DecodeCounts;

TEST_CASE("decode progress line: files, audio, RTFx and ETA", "[decode][progress]") {
  // 60 of 240 s decoded in 2 s: RTFx 30; the other 180 s take 6 s more.
  CHECK(decode_status_line({12, 40, 60.0, 240.0}, 2.0) ==
        "decode 12/40 files  60.0/240.0 s audio  RTFx 30.0  ETA 6s");
  CHECK(decode_status_line({0, 40, 0.0, 240.0}, 0.5) ==
        "decode 0/40 files  0.0/240.0 s audio  RTFx 0.0  ETA ?");
  CHECK(decode_status_line({40, 40, 240.0, 240.0}, 8.0) ==
        "decode 40/40 files  240.0/240.0 s audio  RTFx 30.0  ETA 0s");
  // 3000 s left at RTFx 1.5: 2000 s.
  CHECK(decode_status_line({1, 3, 300.0, 3300.0}, 200.0) ==
        "decode 1/3 files  300.0/3300.0 s audio  RTFx 1.5  ETA 33m20s");
}

TEST_CASE("decode progress without a terminal: lines at intervals, the last always",
          "[decode][progress]") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  {
    masr::decode::DecodeProgressDisplay progress(masr::ProgressDisplay::Mode::kLines, 3600.0, file);
    progress.update({1, 2, 1.5, 3.0});  // within the interval: not printed
    progress.update({2, 2, 3.0, 3.0});  // all done: printed
    progress.finish();
  }
  std::rewind(file);
  char buffer[256] = {0};
  const size_t n = std::fread(buffer, 1, sizeof buffer - 1, file);
  std::fclose(file);
  const std::string out(buffer, n);
  INFO(out);
  CHECK(out.rfind("decode 2/2 files  3.0/3.0 s audio  RTFx ", 0) == 0);
  CHECK(out.find("ETA 0s\n") != std::string::npos);
  CHECK(out.find("1/2") == std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}

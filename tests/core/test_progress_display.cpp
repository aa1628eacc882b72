// tests/core/test_progress_display.cpp
// The progress line as it reaches a log file or a terminal: plain lines at intervals, a bar
// redrawn in place, nothing when quiet.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "core/progress_display.h"

using masr::ProgressDisplay;

namespace {

// What `draw` wrote to a temporary file.
template <typename Draw>
std::string captured(Draw draw) {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  draw(file);
  std::fflush(file);
  std::rewind(file);
  std::string out;
  char buffer[512];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) out.append(buffer, n);
  std::fclose(file);
  return out;
}

}  // namespace

TEST_CASE("progress lines: one per interval, the last one always", "[core][progress]") {
  // Interval 0: every update is a line of its own.
  CHECK(captured([](std::FILE* f) {
          ProgressDisplay d(ProgressDisplay::Mode::kLines, 0.0, 0.2, f);
          d.update(0.5, "half");
          d.update(1.0, "all");
        }) == "half\nall\n");
  // An hour between lines: only the forced last update prints; messages always do.
  CHECK(captured([](std::FILE* f) {
          ProgressDisplay d(ProgressDisplay::Mode::kLines, 3600.0, 0.2, f);
          d.update(0.1, "early");
          d.message("valid loss 1.5");
          d.update(0.2, "later");
          d.update(1.0, "done", true);
          d.finish();
        }) == "valid loss 1.5\ndone\n");
}

TEST_CASE("progress bar: redrawn in place, ended by finish or a message", "[core][progress]") {
  const std::string bar = captured([](std::FILE* f) {
    ProgressDisplay d(ProgressDisplay::Mode::kBar, 30.0, 0.0, f);
    d.update(0.5, "12/24");
    d.message("kept");
    d.update(2.0, "24/24", true);  // clamped to full
    d.finish();
  });
  CHECK(bar ==
        "\r[############            ] 12/24\033[K\nkept\n"
        "\r[########################] 24/24\033[K\n");
}

TEST_CASE("progress: quiet draws nothing", "[core][progress]") {
  CHECK(captured([](std::FILE* f) {
          ProgressDisplay d(ProgressDisplay::Mode::kQuiet, 0.0, 0.0, f);
          d.update(1.0, "x", true);
          d.message("y");
          d.finish();
        }).empty());
  CHECK(ProgressDisplay::detect(true) == ProgressDisplay::Mode::kQuiet);
}

TEST_CASE("durations for an ETA", "[core][progress]") {
  CHECK(masr::format_duration(7.4) == "7s");
  CHECK(masr::format_duration(125) == "2m05s");
  CHECK(masr::format_duration(3723) == "1h02m03s");
  CHECK(masr::format_duration(-1) == "?");
  CHECK(masr::format_duration(1.0 / 0.0) == "?");
}

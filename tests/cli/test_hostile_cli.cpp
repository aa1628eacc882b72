// tests/cli/test_hostile_cli.cpp
// Whole commands on hostile input: `features` and `decode` given text named .wav, zero- and
// one-sample audio, a corrupt or missing model, an output folder that is a file and a full disk.
// Each exits 1 with `error:` naming the input and the reason, and writes no output file.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "run_cli.h"

using Catch::Contains;
namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path dir;
  Scratch() {
    std::random_device rd;
    dir = fs::temp_directory_path() / ("masr-hostile-cli-" + std::to_string(rd()));
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }
  size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir), {}));
  }
};

// A 16-bit PCM mono WAV at 16 kHz holding `samples` samples of value 1000.
void write_wav(const std::string& path, uint32_t samples) {
  std::ofstream(path, std::ios::binary)
      << masr::testing::wav_bytes(std::vector<int16_t>(samples, 1000));
}

}  // namespace

TEST_CASE("hostile cli: features on bad audio exits 1 naming the file, writing nothing", "[cli]") {
  Scratch s;
  std::ofstream(s.file("text.wav")) << "just text\n";
  write_wav(s.file("zero.wav"), 0);
  write_wav(s.file("one.wav"), 1);
  const struct {
    const char* file;
    const char* reason;
  } cases[] = {
      {"text.wav", "not a readable audio file"},
      {"zero.wav", "empty: it holds no audio samples"},
      {"one.wav", "1 samples; expected at least 400"},
      {"absent.wav", "cannot open"},
  };
  for (const auto& c : cases) {
    INFO(c.file);
    const auto r =
        masr::testing::run_cli("features " + s.file(c.file) + " -o " + s.file("out.npy"));
    CHECK(r.code == 1);
    CHECK_THAT(r.output,
               Contains("error: audio file '" + s.file(c.file) + "'") && Contains(c.reason));
    CHECK_FALSE(fs::exists(s.file("out.npy")));
  }
}

TEST_CASE("hostile cli: features into a folder that is a file, or onto a full disk", "[cli]") {
  Scratch s;
  write_wav(s.file("ok.wav"), 1600);
  std::ofstream(s.file("file")) << "x";
  const auto r =
      masr::testing::run_cli("features " + s.file("ok.wav") + " -o " + s.file("file") + "/out.npy");
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains(s.file("file") + "/out.npy") && Contains("Not a directory"));
  const size_t before = s.entries();
  ::setenv("MASR_FAULT_DISK_FULL_AFTER_BYTES", "100", 1);  // inherited by the command
  const auto full =
      masr::testing::run_cli("features " + s.file("ok.wav") + " -o " + s.file("out.npy"));
  ::unsetenv("MASR_FAULT_DISK_FULL_AFTER_BYTES");
  CHECK(full.code == 1);
  CHECK_THAT(full.output, Contains(s.file("out.npy")) && Contains("No space left on device"));
  CHECK(s.entries() == before);  // neither the file nor a temporary
}

TEST_CASE("hostile cli: decode with a corrupt, truncated or missing model exits 1", "[cli]") {
  Scratch s;
  write_wav(s.file("ok.wav"), 1600);
  std::ofstream(s.file("text.masr")) << "a text file named like a model\n";
  std::ofstream(s.file("short.masr")) << "MASRMODL";
  const struct {
    const char* model;
    const char* reason;
  } cases[] = {
      {"text.masr", "not a mamba-asr model"},
      {"short.masr", "truncated (8 bytes)"},
      {"absent.masr", "does not exist"},
  };
  for (const auto& c : cases) {
    INFO(c.model);
    const auto r = masr::testing::run_cli("decode -m " + s.file(c.model) + " " + s.file("ok.wav"));
    CHECK(r.code == 1);
    CHECK_THAT(r.output,
               Contains("error: model file '" + s.file(c.model) + "'") && Contains(c.reason));
  }
}

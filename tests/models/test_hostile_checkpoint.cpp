// tests/models/test_hostile_checkpoint.cpp
// Hostile model files and hostile disks: every truncation and many bit flips of a real model
// file, sections that lie about their sizes, a tokenizer that does not fit the model, a disk that
// fills up while saving and an output folder that cannot be written. Each is a masr::Error naming
// the file, and a failed save leaves the previous file intact and no temporary behind.
#include <catch2/catch.hpp>

#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "../text/text_corpus.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "model_file_bytes.h"
#include "models/checkpoint.h"
#include "text/tokenizer.h"
#include "tiny_asr.h"

using Catch::Contains;
using masr::models::AsrModel;
namespace fs = std::filesystem;

namespace {

using masr::testing::bytes_of;
using masr::testing::crc32;
using masr::testing::write_bytes;

void put_le(std::string& bytes, size_t at, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

std::string with_fixed_crc(std::string bytes) {
  put_le(bytes, bytes.size() - 12, crc32(bytes, bytes.size() - 12), 4);
  return bytes;
}

// Files in `dir` other than `keep` (temporaries a failed write must not leave).
std::vector<std::string> others(const std::string& dir, const std::string& keep) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename() != keep) found.push_back(entry.path().filename().string());
  }
  return found;
}

// The error message of loading `path`, or "" when it loads (which a hostile file must not).
std::string load_error(const std::string& path) {
  try {
    (void)masr::models::read_checkpoint(path);
    return "";
  } catch (const masr::Error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("hostile model files: every truncation and bit flips are errors naming the file",
          "[checkpoint]") {
  masr::testing::TempDir dir("hostile_ckpt");
  const auto model = masr::testing::build(masr::testing::tiny_yaml(0));
  const std::string good = dir.file("good.masr");
  model->save(good);
  const std::string bytes = bytes_of(good);
  const std::string bad = dir.file("bad.masr");
  // Every length up to 64 bytes, then 200 lengths spread over the file.
  std::vector<size_t> lengths;
  for (size_t n = 0; n < 64; ++n) lengths.push_back(n);
  for (size_t k = 0; k < 200; ++k) lengths.push_back(64 + k * (bytes.size() - 65) / 200);
  for (size_t n : lengths) {
    INFO("truncated to " << n << " of " << bytes.size() << " bytes");
    write_bytes(bad, bytes.substr(0, n));
    const std::string message = load_error(bad);
    CHECK_THAT(message, Contains(bad) && (Contains("truncated") || Contains("not a mamba-asr")));
  }
  for (size_t k = 0; k < 200; ++k) {
    const size_t at = k * (bytes.size() - 1) / 199;
    INFO("bit flip at byte " << at);
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << (k % 8)));
    write_bytes(bad, flipped);
    CHECK_THAT(load_error(bad), Contains(bad));
  }
}

TEST_CASE("hostile model files: sections that lie about their sizes, with a valid checksum",
          "[checkpoint]") {
  masr::testing::TempDir dir("hostile_sections");
  const auto model = masr::testing::build(masr::testing::tiny_yaml(0));
  const std::string good = dir.file("good.masr");
  model->save(good);
  const std::string bytes = bytes_of(good);
  const std::string bad = dir.file("bad.masr");
  // Layout: magic(8) version(4) count(4), then "model_type" section: u32 10, name, u64 3, "ctc".
  const size_t name_length_at = 16, data_length_at = 16 + 4 + 10;
  struct Case {
    const char* what;
    size_t at;
    uint64_t value;
    int width;
    const char* expected;
  };
  const Case cases[] = {
      {"section count 2^32-1", 12, 0xFFFFFFFFu, 4, "runs past the end"},
      {"name length 2^32-1", name_length_at, 0xFFFFFFFFu, 4, "runs past the end"},
      {"data length 2^64-1", data_length_at, ~0ull, 8, "runs past the end"},
      {"data length 2^63", data_length_at, 1ull << 63, 8, "runs past the end"},
      {"section count 0", 12, 0, 4, "the section 'model_type' is missing"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    std::string forged = bytes;
    put_le(forged, c.at, c.value, c.width);
    write_bytes(bad, with_fixed_crc(forged));
    CHECK_THAT(load_error(bad), Contains(bad) && Contains(c.expected));
  }
  SECTION("a state section that is not a pickled dict") {
    masr::models::CheckpointData data;
    data.model_type = "ctc";
    data.hparams_yaml = model->hparams_yaml();
    data.state = {{"x", torch::zeros({2})}};
    masr::models::write_checkpoint(bad, data);
    std::string forged = bytes_of(bad);
    const size_t state_at = forged.find("PK\x03\x04");  // the zip archive inside "state"
    REQUIRE(state_at != std::string::npos);
    for (size_t i = state_at; i < state_at + 64; ++i) forged[i] = 'x';
    write_bytes(bad, with_fixed_crc(forged));
    CHECK_THAT(load_error(bad), Contains(bad) && Contains("state section is corrupt"));
  }
  SECTION("a pickle declaring a 2 GB string (LibTorch would allocate it before reading)") {
    masr::models::CheckpointData data;
    data.model_type = "ctc";
    data.hparams_yaml = model->hparams_yaml();
    data.state = {{"weight_name", torch::zeros({2})}};
    masr::models::write_checkpoint(bad, data);
    std::string forged = bytes_of(bad);
    const size_t key_at = forged.find(std::string("X\x0b\0\0\0weight_name", 16));
    REQUIRE(key_at != std::string::npos);
    put_le(forged, key_at + 1, 0x7FFFFFF0u, 4);
    write_bytes(bad, with_fixed_crc(forged));
    CHECK_THAT(load_error(bad), Contains(bad) && Contains("state section is corrupt") &&
                                    Contains("declares 2147483632 bytes past its end"));
  }
}

TEST_CASE("hostile model files: a tokenizer that does not fit the output layer", "[checkpoint]") {
  masr::testing::TempDir dir("hostile_tok");
  const auto model = masr::testing::build(masr::testing::tiny_yaml(0));
  masr::text::TokenizerTrainOptions options;
  options.model_type = "unigram";
  options.vocab_size = 40;  // the model has 31 outputs
  const auto tok = masr::text::Tokenizer::train(masr::testing::librispeech_like_sentences(200),
                                                dir.file("40_unigram"), options);
  masr::models::CheckpointData data;
  data.model_type = model->model_type();
  data.hparams_yaml = model->hparams_yaml();
  data.state = model->named_state();
  data.tokenizer_model = tok.model_bytes();
  const std::string path = dir.file("mismatch.masr");
  masr::models::write_checkpoint(path, data);
  CHECK_THROWS_WITH(AsrModel::load(path),
                    Contains(path) && Contains("has 40 pieces") && Contains("output layer has 31"));
}

TEST_CASE("hostile disks: a full disk while saving keeps the old model file, no temporary",
          "[checkpoint]") {
  masr::testing::TempDir dir("hostile_disk");
  const auto model = masr::testing::build(masr::testing::tiny_yaml(0));
  const std::string path = dir.file("model.masr");
  model->save(path);
  const std::string before = bytes_of(path);
  for (long long budget : {0LL, 10LL, static_cast<long long>(before.size()) - 1}) {
    INFO("disk full after " << budget << " bytes");
    masr::set_disk_full_after_bytes(budget);
    try {
      model->save(path);
      masr::set_disk_full_after_bytes(-1);
      FAIL("the save succeeded on a full disk");
    } catch (const masr::Error& e) {
      masr::set_disk_full_after_bytes(-1);
      CHECK(e.kind() == masr::ErrorKind::kIo);
      CHECK_THAT(e.what(), Contains("model.masr") && Contains("No space left on device"));
    }
    CHECK(bytes_of(path) == before);
    CHECK(others(dir.str(), "model.masr").empty());
  }
  model->save(path);  // and the disk, freed, takes the file again
  CHECK(bytes_of(path) == before);
}

TEST_CASE("hostile disks: an output folder that cannot be written", "[checkpoint]") {
  masr::testing::TempDir dir("hostile_folder");
  const auto model = masr::testing::build(masr::testing::tiny_yaml(0));
  // A regular file used as a folder: ENOTDIR even for root (chmod does not stop root).
  write_bytes(dir.file("file"), "x");
  const std::string under_file = dir.file("file") + "/model.masr";
  CHECK_THROWS_WITH(model->save(under_file), Contains(under_file) && Contains("Not a directory"));
  const std::string missing = dir.file("no/such/folder/model.masr");
  CHECK_THROWS_WITH(model->save(missing),
                    Contains(missing) && Contains("No such file or directory"));
  if (::geteuid() != 0) {  // permissions bind only non-root users
    fs::create_directories(dir.file("ro"));
    fs::permissions(dir.file("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    const std::string ro = dir.file("ro") + "/model.masr";
    CHECK_THROWS_WITH(model->save(ro), Contains(ro) && Contains("Permission denied"));
    fs::permissions(dir.file("ro"), fs::perms::owner_all);
  }
  CHECK(others(dir.str(), "file").empty());
}

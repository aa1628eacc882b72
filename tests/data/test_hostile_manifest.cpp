// tests/data/test_hostile_manifest.cpp
// Hostile manifests: transcripts that are not UTF-8 (SpeechBrain reads CSVs as UTF-8 and fails
// on them), empty transcripts, missing columns, CRLF line ends, a BOM, and a write that hits a
// full disk. Each error names the file and line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "../text/text_corpus.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "data/manifest.h"

using Catch::Contains;
using masr::data::read_kaldi_dir;
using masr::data::read_speechbrain_csv;

TEST_CASE("hostile manifests: transcripts that are not UTF-8 name the line and byte", "[data]") {
  masr::testing::TempDir dir("hostile_utf8");
  const std::string header = "ID,duration,wav,spk_id,wrd\n";
  // Latin-1 "CAFÉ", a lone continuation byte, a truncated 3-byte sequence, an overlong encoding.
  const struct {
    const char* what;
    std::string wrd;
    const char* byte;
    size_t offset;
  } cases[] = {
      {"latin-1", "CAF\xC9 OK", "0xC9", 3},
      {"continuation", "A \x80", "0x80", 2},
      {"truncated", "AB\xE2\x82", "0xE2", 2},
      {"overlong", "\xC0\xAF", "0xC0", 0},
      {"beyond U+10FFFF", "X\xF5\x80\x80\x80", "0xF5", 1},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    const std::string path =
        dir.write("bad.csv", header + "u1,1.0,a.wav,s,GOOD\nu2,1.0,b.wav,s," + c.wrd + "\n");
    CHECK_THROWS_WITH(
        read_speechbrain_csv(path),
        Contains(path + ":3") && Contains("not valid UTF-8") &&
            Contains(std::string("byte ") + c.byte + " at offset " + std::to_string(c.offset)));
  }
  // Valid multi-byte UTF-8 (2, 3 and 4 bytes) reads.
  const std::string ok = dir.write("ok.csv", header + "u1,1.0,a.wav,s,CAFÉ – 語 😀\n");
  CHECK(read_speechbrain_csv(ok).rows.at(0).wrd == "CAFÉ – 語 😀");

  std::filesystem::create_directories(dir.file("kaldi"));
  dir.write("kaldi/wav.scp", "u1 /a.wav\nu2 /b.wav\n");
  dir.write("kaldi/text", "u1 FINE\nu2 NA\xEFVE\n");
  CHECK_THROWS_WITH(read_kaldi_dir(dir.file("kaldi")),
                    Contains("kaldi/text:2") && Contains("not valid UTF-8"));
}

TEST_CASE("hostile manifests: empty transcripts, missing columns, CRLF", "[data]") {
  masr::testing::TempDir dir("hostile_csv");
  // An empty transcript reads (decoding needs none); training refuses it (tests/train).
  const std::string empty =
      dir.write("empty_wrd.csv", "ID,duration,wav,spk_id,wrd\nu1,1.0,a.wav,s,\n");
  CHECK(read_speechbrain_csv(empty).rows.at(0).wrd.empty());
  for (const char* column : {"ID", "duration", "wav"}) {
    INFO(column);
    std::string header = "ID,duration,wav,wrd";
    header.erase(header.find(column), std::string(column).size() + 1);
    const std::string path = dir.write("missing.csv", header + "\nx,y,z\n");
    CHECK_THROWS_WITH(read_speechbrain_csv(path),
                      Contains(path) && Contains(std::string("no '") + column + "'"));
  }
  // Windows line ends: the last field must not keep the '\r'.
  const std::string crlf =
      dir.write("crlf.csv", "ID,duration,wav,spk_id,wrd\r\nu1,1.5,a.wav,s,HI\r\n");
  const auto rows = read_speechbrain_csv(crlf).rows;
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].wrd == "HI");
  CHECK(rows[0].duration == 1.5);
}

TEST_CASE("hostile disks: writing a manifest on a full disk keeps the old one", "[data]") {
  masr::testing::TempDir dir("hostile_manifest_disk");
  const std::string path = dir.write("m.csv", "ID,duration,wav,spk_id,wrd\nu1,1,a.wav,s,OLD\n");
  masr::data::Manifest manifest = read_speechbrain_csv(path);
  manifest.rows[0].wrd = "NEW";
  masr::set_disk_full_after_bytes(8);
  CHECK_THROWS_WITH(masr::data::write_speechbrain_csv(path, manifest),
                    Contains(path) && Contains("No space left on device"));
  masr::set_disk_full_after_bytes(-1);
  CHECK(read_speechbrain_csv(path).rows.at(0).wrd == "OLD");
  CHECK(std::distance(std::filesystem::directory_iterator(dir.str()),
                      std::filesystem::directory_iterator()) == 1);
  masr::data::write_speechbrain_csv(path, manifest);
  CHECK(read_speechbrain_csv(path).rows.at(0).wrd == "NEW");
}

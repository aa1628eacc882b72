// tests/data/test_librispeech.cpp
// LibriSpeech preparation on a fake tree in the real layout: CSV rows, durations from the FLAC
// headers, SpeechBrain's spk_id, merged train splits, skipped splits, and each error's message.
#include <sndfile.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../text/text_corpus.h"
#include "audio/audio_reader.h"
#include "core/error.h"
#include "data/librispeech.h"

namespace fs = std::filesystem;
using masr::testing::TempDir;

namespace {

// <root>/<split>/<spk>/<chapter>/<spk>-<chapter>-<n>.flac of `samples` 16 kHz samples each, and
// the chapter's transcript.
void add_chapter(const fs::path& root, const std::string& split, const std::string& spk,
                 const std::string& chapter, const std::vector<std::pair<int, std::string>>& utts,
                 const std::vector<int64_t>& samples) {
  const fs::path folder = root / split / spk / chapter;
  fs::create_directories(folder);
  std::ofstream trans(folder / (spk + "-" + chapter + ".trans.txt"));
  for (size_t i = 0; i < utts.size(); ++i) {
    char id[64];
    std::snprintf(id, sizeof(id), "%s-%s-%04d", spk.c_str(), chapter.c_str(), utts[i].first);
    trans << id << " " << utts[i].second << "\n";
    std::vector<float> wave(static_cast<size_t>(samples[i]), 0.0f);
    for (size_t t = 0; t < wave.size(); ++t) wave[t] = 0.1f * static_cast<float>((t % 50) / 50.0);
    masr::audio::write_audio((folder / (std::string(id) + ".flac")).string(), wave, 16000, 1,
                             SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  }
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("LibriSpeech preparation writes SpeechBrain CSVs from the standard layout", "[data]") {
  TempDir tmp("librispeech");
  const fs::path root = fs::path(tmp.str()) / "LibriSpeech";
  add_chapter(root, "train-clean-100", "19", "198", {{1, "NORTHANGER ABBEY"}, {0, "CHAPTER ONE"}},
              {16000, 8000});
  add_chapter(root, "train-other-500", "20", "205", {{0, "IT'S A TEST"}}, {24000});
  add_chapter(root, "dev-clean", "84", "121123", {{3, "GO DO YOU HEAR"}}, {4000});
  const fs::path out = fs::path(tmp.str()) / "csv";
  const auto result = masr::data::prepare_librispeech(root.string(), out.string());
  REQUIRE(result.written ==
          std::vector<std::string>{(out / "train.csv").string(), (out / "dev-clean.csv").string()});
  CHECK(result.missing ==
        std::vector<std::string>{"train-clean-360", "dev-other", "test-clean", "test-other"});
  const std::string t = (root / "train-clean-100/19/198").string();
  CHECK(slurp(out / "train.csv") ==
        "ID,duration,wav,spk_id,wrd\n"
        "19-198-0000,0.5," +
            t +
            "/19-198-0000.flac,19-198,CHAPTER ONE\n"
            "19-198-0001,1," +
            t +
            "/19-198-0001.flac,19-198,NORTHANGER ABBEY\n"
            "20-205-0000,1.5," +
            (root / "train-other-500/20/205").string() + "/20-205-0000.flac,20-205,IT'S A TEST\n");
  CHECK(slurp(out / "dev-clean.csv") == "ID,duration,wav,spk_id,wrd\n84-121123-0003,0.25," +
                                            (root / "dev-clean/84/121123").string() +
                                            "/84-121123-0003.flac,84-121123,GO DO YOU HEAR\n");
  CHECK_FALSE(fs::exists(out / "train.csv.tmp"));
}

TEST_CASE("LibriSpeech preparation names what is wrong with a broken tree", "[data]") {
  TempDir tmp("librispeech_bad");
  const fs::path root = fs::path(tmp.str()) / "LibriSpeech";
  const std::string out = (fs::path(tmp.str()) / "csv").string();
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(masr::data::prepare_librispeech((root / "nope").string(), out),
                    Contains("does not exist"));
  fs::create_directories(root / "unrelated");
  CHECK_THROWS_WITH(masr::data::prepare_librispeech(root.string(), out),
                    Contains("none of the requested splits"));
  add_chapter(root, "dev-clean", "1", "2", {{0, "HELLO"}}, {1600});
  // A transcript line whose audio is missing.
  std::ofstream(root / "dev-clean/1/2/1-2.trans.txt", std::ios::app) << "1-2-0001 LOST\n";
  CHECK_THROWS_WITH(masr::data::prepare_librispeech_split((root / "dev-clean").string()),
                    Contains("1-2-0001.flac' is missing"));
  // Audio without a transcript line.
  add_chapter(root, "test-clean", "3", "4", {{0, "HELLO"}}, {1600});
  fs::copy_file(root / "test-clean/3/4/3-4-0000.flac", root / "test-clean/3/4/3-4-0009.flac");
  CHECK_THROWS_WITH(masr::data::prepare_librispeech_split((root / "test-clean").string()),
                    Contains("3-4-0009.flac' has no line"));
  // A malformed line, and a file that is not audio.
  add_chapter(root, "test-other", "5", "6", {{0, "HELLO"}}, {1600});
  std::ofstream(root / "test-other/5/6/5-6.trans.txt") << "5-6-0000\n";
  CHECK_THROWS_WITH(masr::data::prepare_librispeech_split((root / "test-other").string()),
                    Contains("5-6.trans.txt:1: expected '<id> <words>'"));
  std::ofstream(root / "test-other/5/6/5-6.trans.txt") << "5-6-0000 HELLO\n";
  std::ofstream(root / "test-other/5/6/5-6-0000.flac") << "not audio";
  CHECK_THROWS_WITH(masr::data::prepare_librispeech_split((root / "test-other").string()),
                    Contains("5-6.trans.txt:1"));
  fs::create_directories(root / "empty-split/1");
  CHECK_THROWS_WITH(masr::data::prepare_librispeech_split((root / "empty-split").string()),
                    Contains("has no *.trans.txt files"));
}

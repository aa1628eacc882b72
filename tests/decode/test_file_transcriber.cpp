// tests/decode/test_file_transcriber.cpp
// Batching by count and by padded seconds, worked out by hand; parallel reading keeps row order
// and reports unreadable files instead of throwing.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "audio/audio_reader.h"
#include "core/remove_tree.h"
#include "decode/file_transcriber.h"

using masr::decode::Batching;
using masr::decode::make_batches;
using Batches = std::vector<std::vector<size_t>>;

TEST_CASE("make_batches: longest first, by count and by padded seconds", "[decode]") {
  // 10 samples per second: 10, 1, 9, 5, 8, 4 seconds.
  const std::vector<size_t> lengths = {100, 10, 90, 50, 80, 40};
  const std::vector<size_t> all = {0, 1, 2, 3, 4, 5};
  CHECK(make_batches(all, lengths, 10, {3, 0.0}) == Batches{{0, 2, 4}, {3, 5, 1}});
  // 25 padded seconds: {10, 9} = 20 (a third: 30); {8, 5, 4} = 24; {1}.
  CHECK(make_batches(all, lengths, 10, {3, 25.0}) == Batches{{0, 2}, {4, 3, 5}, {1}});
  // A budget below an utterance: that utterance alone.
  CHECK(make_batches(all, lengths, 10, {8, 5.0}) ==
        Batches{{0}, {2}, {4}, {3}, {5}, {1}});
  // Only the chosen indices; equal lengths keep their order.
  CHECK(make_batches({5, 1, 3}, {0, 7, 0, 7, 0, 7}, 10, {2, 0.0}) == Batches{{5, 1}, {3}});
  CHECK_THROWS_WITH(make_batches(all, lengths, 10, {0, 0.0}),
                    Catch::Contains("batch size must be at least 1"));
  CHECK_THROWS_WITH(make_batches(all, lengths, 10, {1, -1.0}),
                    Catch::Contains("batch seconds must be >= 0"));
}

TEST_CASE("read_all_audio: row order kept, unreadable files reported", "[decode]") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "masr_test_read_all_audio";
  masr::remove_tree(root.string());
  fs::create_directories(root);
  std::vector<masr::data::ManifestRow> rows;
  for (int i = 0; i < 9; ++i) {
    const std::string path = (root / ("u" + std::to_string(i) + ".wav")).string();
    if (i == 4) {
      std::ofstream(path) << "not audio";
    } else if (i != 7) {  // 7 is missing
      masr::audio::write_audio(path, std::vector<float>(160 * (i + 1), 0.25f), 16000);
    }
    masr::data::ManifestRow row;
    row.id = "u" + std::to_string(i);
    row.wav = path;
    rows.push_back(row);
  }
  const auto audio = masr::decode::read_all_audio(rows, 8000, 3);
  CHECK(audio.readable == std::vector<size_t>{0, 1, 2, 3, 5, 6, 8});
  for (size_t i : audio.readable) CHECK(audio.samples[i].size() == 80 * (i + 1));  // resampled
  CHECK_FALSE(audio.errors[4].empty());
  CHECK_THAT(audio.errors[7], Catch::Contains("u7.wav"));
  CHECK(audio.seconds == Approx((1 + 2 + 3 + 4 + 6 + 7 + 9) * 0.01));
  masr::remove_tree(root.string());
}

// tests/decode/test_decode_inputs.cpp
// Decode inputs: files, recursive folders, @lists, CSVs, wav.scp, stdin, and their errors.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "decode/decode_inputs.h"
#include "core/remove_tree.h"

namespace fs = std::filesystem;
using masr::decode::gather_inputs;

namespace {
void touch(const fs::path& path, const std::string& text = "") {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}
}  // namespace

TEST_CASE("Decode inputs expand files, folders, lists, CSVs, wav.scp and stdin", "[decode]") {
  const fs::path root = fs::temp_directory_path() / "masr_test_decode_inputs";
  masr::remove_tree(root);
  touch(root / "audio/z.wav");
  touch(root / "audio/sub/a.FLAC");
  touch(root / "audio/notes.txt");
  touch(root / "single.wav");
  touch(root / "list.txt",
        (root / "l1.wav").string() + "\n# comment\n\n" + (root / "l2.ogg").string() + "\n");
  touch(root / "test.csv", "ID,duration,wav,spk_id,wrd\nc1,1.5,/x/c1.wav,s,HELLO THERE\n");
  touch(root / "kaldi/wav.scp", "k1 /x/k1.wav\n");
  touch(root / "kaldi/text", "k1 GOOD DAY\n");
  std::istringstream stdin_list("  /y/s1.wav  \n#skip\n/y/s2.flac\n");
  const auto rows = gather_inputs({(root / "audio").string(), (root / "single.wav").string(),
                                   "@" + (root / "list.txt").string(), (root / "test.csv").string(),
                                   (root / "kaldi/wav.scp").string(), "-"},
                                  stdin_list);
  std::vector<std::string> ids;
  for (const auto& row : rows) ids.push_back(row.id);
  // Folder entries sorted by path: audio/sub/a.FLAC before audio/z.wav; notes.txt skipped.
  CHECK(ids == std::vector<std::string>{"a", "z", "single", "l1", "l2", "c1", "k1", "s1", "s2"});
  CHECK(rows[5].wrd == "HELLO THERE");
  CHECK(rows[6].wav == "/x/k1.wav");
  CHECK(rows[6].wrd == "GOOD DAY");
  CHECK(rows[7].wav == "/y/s1.wav");
  std::istringstream empty;
  // A missing audio file is kept (the decoder reports and skips it); a missing manifest or
  // folder is an error.
  CHECK(gather_inputs({(root / "nothing.wav").string()}, empty)[0].id == "nothing");
  CHECK_THROWS_WITH(gather_inputs({(root / "nothing.csv").string()}, empty),
                    Catch::Contains("nothing.csv' does not exist"));
  CHECK_THROWS_WITH(gather_inputs({(root / "no_folder").string()}, empty),
                    Catch::Contains("no_folder' does not exist"));
  touch(root / "other/z.wav");
  CHECK_THROWS_WITH(gather_inputs({(root / "audio").string(), (root / "other").string()}, empty),
                    Catch::Contains("utterance id 'z' appears twice"));
  masr::remove_tree(root);
}

// tests/decode/test_decode_inputs.cpp
// Decode inputs: files, recursive folders, @lists, CSVs, wav.scp, stdin, and their errors.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "core/remove_tree.h"
#include "decode/decode_inputs.h"

namespace fs = std::filesystem;
using masr::decode::gather_decode_inputs;
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
  masr::remove_tree(root);
}

TEST_CASE("Decode inputs: ids stay unique when file names repeat in other folders", "[decode]") {
  const fs::path root = fs::temp_directory_path() / "masr_test_decode_ids";
  masr::remove_tree(root);
  touch(root / "data/a/x.wav");
  touch(root / "data/b/x.wav");
  touch(root / "data/b/y.wav");
  touch(root / "data/x.flac");
  touch(root / "other/b/x.wav");
  std::istringstream empty;
  auto ids_of = [&](const std::vector<std::string>& inputs) {
    std::vector<std::string> ids;
    for (const auto& row : gather_inputs(inputs, empty)) ids.push_back(row.id);
    return ids;
  };
  // Within one folder: the path below it; names that do not repeat keep their short id.
  CHECK(ids_of({(root / "data").string()}) == std::vector<std::string>{"a/x", "b/x", "y", "x"});
  // Two folders with the same layout: below-folder paths repeat too, so the paths as given.
  const std::string data = (root / "data").generic_string(),
                    other = (root / "other").generic_string();
  CHECK(ids_of({data + "/b", other + "/b"}) ==
        std::vector<std::string>{data + "/b/x", "y", other + "/b/x"});
  // Files named one by one (and in @lists) the same way.
  CHECK(ids_of({data + "/a/x.wav", data + "/b/x.wav"}) ==
        std::vector<std::string>{data + "/a/x", data + "/b/x"});
  touch(root / "list.txt", data + "/a/x.wav\n" + data + "/b/x.wav\n");
  CHECK(ids_of({"@" + (root / "list.txt").string()}) ==
        std::vector<std::string>{data + "/a/x", data + "/b/x"});
  // The same file twice, or a manifest's repeated id, is still an error naming both.
  CHECK_THROWS_WITH(gather_inputs({data + "/b/y.wav", data + "/b/y.wav"}, empty),
                    Catch::Contains("is given twice"));
  touch(root / "t.csv", "ID,duration,wav,spk_id,wrd\nz,1,/x/1.wav,s,A\n");
  touch(root / "u.csv", "ID,duration,wav,spk_id,wrd\nz,1,/x/2.wav,s,B\n");
  CHECK_THROWS_WITH(gather_inputs({(root / "t.csv").string(), (root / "u.csv").string()}, empty),
                    Catch::Contains("utterance id 'z' appears twice"));
  // A manifest id and a file name that meet: the file gives way.
  touch(root / "x.csv", "ID,duration,wav,spk_id,wrd\ny,1,/x/1.wav,s,A\n");
  CHECK(ids_of({(root / "x.csv").string(), data + "/b/y.wav"}) ==
        std::vector<std::string>{"y", data + "/b/y"});
  masr::remove_tree(root);
}

namespace {
std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}
}  // namespace

TEST_CASE("Decode input '-': stdin as one audio file, raw PCM, or a list", "[decode][stdin]") {
  const fs::path root = fs::temp_directory_path() / "masr_test_decode_stdin";
  masr::remove_tree(root);
  fs::create_directories(root);
  std::vector<float> x(1600, 0.25f);
  masr::audio::write_audio((root / "a.wav").string(), x, 16000);
  const std::string wav = bytes_of(root / "a.wav");
  SECTION("a WAV on stdin is one utterance, read from memory") {
    std::istringstream in(wav);
    const auto inputs = gather_decode_inputs({"-"}, in);
    REQUIRE(inputs.rows.size() == 1);
    CHECK(inputs.rows[0].id == "stdin");
    CHECK(inputs.audio.probe(inputs.rows[0]).frames == 1600);
    CHECK(inputs.audio.read(inputs.rows[0], 8000).size() == 800);
    // Files given beside it are read from disk as before.
    std::istringstream again(wav);
    const auto mixed = gather_decode_inputs({(root / "a.wav").string(), "-"}, again);
    REQUIRE(mixed.rows.size() == 2);
    CHECK(mixed.audio.read(mixed.rows[0], 16000) == mixed.audio.read(mixed.rows[1], 16000));
    // The rows-only form refuses audio on stdin rather than pretending '-' is a path.
    std::istringstream third(wav);
    CHECK_THROWS_WITH(gather_inputs({"-"}, third),
                      Catch::Contains("stdin holds audio, but this command reads stdin only"));
  }
  SECTION("headerless PCM on stdin and in files with --raw-pcm") {
    const auto s16 = masr::audio::parse_raw_pcm_spec("s16le:16000");
    std::istringstream in(wav.substr(44));
    const auto inputs = gather_decode_inputs({"-"}, in, {}, s16);
    REQUIRE(inputs.rows.size() == 1);
    CHECK(inputs.audio.read(inputs.rows[0], 16000) == masr::audio::read_audio((root / "a.wav").string()).samples);
    // A folder yields its .raw files; each is read as raw PCM.
    fs::create_directories(root / "raw");
    std::ofstream(root / "raw/b.raw", std::ios::binary) << wav.substr(44);
    std::ofstream(root / "raw/odd.pcm", std::ios::binary) << "abc";
    std::istringstream none;
    const auto folder = gather_decode_inputs({(root / "raw").string()}, none, {}, s16);
    REQUIRE(folder.rows.size() == 2);
    CHECK(folder.rows[0].id == "b");
    CHECK(folder.audio.probe(folder.rows[0]).frames == 1600);
    CHECK_THROWS_WITH(folder.audio.probe(folder.rows[1]),
                      Catch::Contains("3 bytes are not a whole number of s16le samples"));
  }
  SECTION("text on stdin is still a list of paths") {
    std::istringstream in("/y/s1.wav\n\n# c\n/y/s2.flac");
    const auto inputs = gather_decode_inputs({"-"}, in);
    REQUIRE(inputs.rows.size() == 2);
    CHECK(inputs.rows[1].wav == "/y/s2.flac");
    CHECK(inputs.rows[1].source == "stdin:4");
    CHECK_FALSE(inputs.audio.stdin_bytes);
  }
  SECTION("empty, binary non-audio and twice-read stdin are errors") {
    std::istringstream empty;
    CHECK_THROWS_WITH(gather_decode_inputs({"-"}, empty),
                      Catch::Contains("stdin is empty; pipe in an audio file"));
    std::istringstream binary(std::string("\x01\x00\x02\x00\x03\x00", 6));
    CHECK_THROWS_WITH(gather_decode_inputs({"-"}, binary),
                      Catch::Contains("stdin (6 bytes) is neither audio that libsndfile reads nor "
                                      "a list of paths") &&
                          Catch::Contains("--raw-pcm s16le:16000"));
    std::istringstream in(wav);
    CHECK_THROWS_WITH(gather_decode_inputs({"-", "-"}, in),
                      Catch::Contains("'-' (stdin) is given twice"));
  }
  masr::remove_tree(root);
}

// tests/data/test_manifest.cpp
// Manifests: SpeechBrain CSV quoting, $var substitution, Kaldi folders, path lists, the writer,
// and an error naming file and line for each kind of bad row.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../text/text_corpus.h"
#include "data/manifest.h"

using namespace masr::data;

TEST_CASE("SpeechBrain CSV with quotes, extra columns and $data_root", "[data]") {
  masr::testing::TempDir dir("manifest_csv");
  const std::string path =
      dir.write("train.csv",
                "ID,duration,wav,spk_id,wrd,lang\r\n"
                "1089-134686-0000,10.435,$data_root/a.flac,1089-134686,"
                "HE HOPED THERE WOULD BE STEW,en\r\n"
                "\r\n"
                "u2, 2.5,\"$data_root/b, c.flac\",s2,\"SAID \"\"HI\"\"\nTWICE\",fr\r\n"
                "u3,3,/abs/c.wav,s3,,en\r\n");
  const Manifest m = read_speechbrain_csv(path, {{"data_root", "/data/LibriSpeech"}});
  REQUIRE(m.size() == 3);
  CHECK(m.rows[0].id == "1089-134686-0000");
  CHECK(m.rows[0].duration == 10.435);
  CHECK(m.rows[0].wav == "/data/LibriSpeech/a.flac");
  CHECK(m.rows[0].spk_id == "1089-134686");
  CHECK(m.rows[0].wrd == "HE HOPED THERE WOULD BE STEW");
  CHECK(*m.rows[0].find_extra("lang") == "en");
  CHECK(m.rows[1].duration == 2.5);  // skipinitialspace
  CHECK(m.rows[1].wav == "/data/LibriSpeech/b, c.flac");
  CHECK(m.rows[1].wrd == "SAID \"HI\"\nTWICE");
  CHECK(m.rows[1].source == path + ":4");  // blank line 3 skipped
  CHECK(m.rows[2].source == path + ":6");  // the quoted field spanned two lines
  CHECK(m.rows[2].wrd.empty());
  CHECK(m.extra_columns == std::vector<std::string>{"lang"});
  CHECK(m.total_duration() == Approx(15.935));

  // Written back and read again, everything survives.
  const std::string copy = dir.file("copy.csv");
  write_speechbrain_csv(copy, m);
  const Manifest again = read_speechbrain_csv(copy);
  REQUIRE(again.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(again.rows[i].id == m.rows[i].id);
    CHECK(again.rows[i].duration == m.rows[i].duration);
    CHECK(again.rows[i].wav == m.rows[i].wav);
    CHECK(again.rows[i].wrd == m.rows[i].wrd);
    CHECK(again.rows[i].extra == m.rows[i].extra);
  }
  std::ifstream in(copy);
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  CHECK(header == "ID,duration,wav,spk_id,wrd,lang");
  CHECK(first ==
        "1089-134686-0000,10.435,/data/LibriSpeech/a.flac,1089-134686,HE HOPED THERE WOULD BE "
        "STEW,en");
}

TEST_CASE("bad SpeechBrain CSVs name the file and line", "[data]") {
  masr::testing::TempDir dir("manifest_bad");
  const std::string head = "ID,duration,wav,spk_id,wrd\n";
  auto fails = [&](const std::string& text, const std::string& message) {
    const std::string path = dir.write("bad.csv", text);
    CHECK_THROWS_WITH(read_speechbrain_csv(path),
                      Catch::Contains(path) && Catch::Contains(message));
  };
  fails("", "empty file");
  fails(head, "a header but no rows");
  fails("ID,wav,wrd\nu1,a.wav,A\n", "no 'duration' column");
  fails(head + "u1,1.0,a.wav,s1\n", "bad.csv:2: 4 fields, but the header has 5 columns");
  fails(head + "u1,1.0,a.wav,s1,A,extra\n", "bad.csv:2: 6 fields");
  fails(head + "u1,1.0,a.wav,s1,A\nu2,abc,b.wav,s1,B\n", "bad.csv:3: duration 'abc'");
  fails(head + "u1,-1,a.wav,s1,A\n", "bad.csv:2: duration '-1'");
  fails(head + "u1,1,a.wav,s1,A\nu1,2,b.wav,s1,B\n", "bad.csv:3: duplicate ID 'u1'");
  fails(head + "u1,1,$root/a.wav,s1,A\n", "bad.csv:2: '$root/a.wav' needs a value for $root");
  fails(head + "u1,1,a.wav,s1,\"A\n", "bad.csv:2: unterminated quoted field");
  fails(head + "u1,1,\"a\"x,s1,A\n", "bad.csv:2: text after a closing quote");
  CHECK_THROWS_WITH(read_speechbrain_csv(dir.file("none.csv")),
                    Catch::Contains("none.csv") && Catch::Contains("cannot open"));
}

TEST_CASE("Kaldi data folders", "[data]") {
  masr::testing::TempDir dir("manifest_kaldi");
  dir.write("wav.scp", "u1 /a/u1.wav\nu2  /a/u2.flac \n");
  dir.write("text", "u1 HELLO WORLD\nu2\n");
  dir.write("utt2spk", "u1 spkA\nu2 spkB\n");
  Manifest m = read_manifest(dir.str());
  REQUIRE(m.size() == 2);
  CHECK_FALSE(m.has_durations);
  CHECK(m.rows[0].wrd == "HELLO WORLD");
  CHECK(m.rows[1].wav == "/a/u2.flac");
  CHECK(m.rows[1].wrd.empty());
  CHECK(m.rows[1].spk_id == "spkB");

  dir.write("utt2dur", "u1 1.25\nu2 0.5\n");
  m = read_kaldi_dir(dir.str());
  CHECK(m.has_durations);
  CHECK(m.total_duration() == 1.75);

  dir.write("utt2dur", "u1 1.25\nu2 x\n");
  CHECK_THROWS_WITH(read_kaldi_dir(dir.str()), Catch::Contains("utt2dur:2: duration 'x'"));
  dir.write("utt2dur", "u1 1.25\n");
  CHECK_THROWS_WITH(read_kaldi_dir(dir.str()), Catch::Contains("no duration for 'u2'"));
  std::filesystem::remove(dir.file("utt2dur"));
  dir.write("text", "u1 A\nu2 B\nu3 C\n");
  CHECK_THROWS_WITH(read_kaldi_dir(dir.str()),
                    Catch::Contains("text:3: utterance 'u3' is not in wav.scp"));
  dir.write("text", "u1 A\nu1 B\n");
  CHECK_THROWS_WITH(read_kaldi_dir(dir.str()), Catch::Contains("text:2: duplicate ID 'u1'"));
  dir.write("text", "u1 A\nu2 B\n");
  dir.write("wav.scp", "u1 sox x.wav -t wav - |\nu2 /a/u2.flac\n");
  CHECK_THROWS_WITH(read_kaldi_dir(dir.str()),
                    Catch::Contains("wav.scp:1") && Catch::Contains("piped command"));
  dir.write("segments", "u1 rec1 0.0 1.0\n");
  CHECK_THROWS_WITH(read_kaldi_dir(dir.str()),
                    Catch::Contains("'segments' file, which is not supported"));
}

TEST_CASE("plain lists of audio paths", "[data]") {
  masr::testing::TempDir dir("manifest_list");
  const std::string path = dir.write("list.txt", "# test set\n/x/a.flac\n\n  /y/b.wav  \n");
  const Manifest m = read_manifest(path);
  REQUIRE(m.size() == 2);
  CHECK(m.rows[0].id == "a");
  CHECK(m.rows[1].wav == "/y/b.wav");
  CHECK(m.rows[1].source == path + ":4");
  const std::string dup = dir.write("dup.txt", "/x/a.flac\n/y/a.wav\n");
  CHECK_THROWS_WITH(read_audio_list(dup), Catch::Contains("dup.txt:2: duplicate ID 'a'"));
  const std::string empty = dir.write("empty.txt", "# nothing\n");
  CHECK_THROWS_WITH(read_audio_list(empty), Catch::Contains("empty.txt: empty file"));
}

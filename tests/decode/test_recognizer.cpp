// tests/decode/test_recognizer.cpp
// The decode facade (decode::Recognizer) on the bundled model: files and in-memory waveforms give
// the bundled examples' transcripts, the searches agree with the lower-level calls they wrap, and
// wrong set-ups fail before any audio is read, with messages that name the option.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "decode/asr_model_recognizer.h"
#include "decode/recognizer.h"

using masr::decode::Recognizer;
using masr::decode::RecognizerConfig;

namespace {

const std::string kDir = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";
const std::vector<std::string> kNames = {"en_us_nyc_m4-000499", "en_gb_x_gbclan_m1-000167",
                                         "en_gb_x_gbcwmd_m5-002757"};
// What the bundled model hears in its examples (greedy and beam agree; the second one's split
// word is the model's own: its reference is "HE KNOWS HE DOESN'T KNOW WHAT HE'S DOING SO HE
// DOES IT CAREFULLY AND WITH GREAT RESTRAINT").
const std::vector<std::string> kTexts = {
    "IT IS A PERIOD OF SYSTEM WAR",
    "HE KNOWS HE DOESN'T KNOW WHAT HE'S DO IN SO HE DOES IT CAREFULLY AND WITH GREAT RESTRAINT",
    "TELL ME A JOKE"};

RecognizerConfig bundled(const std::string& search) {
  RecognizerConfig c;
  c.model = kDir;  // a folder holding model.masr
  c.decode.search = masr::decode::parse_search(search);
  return c;
}

}  // namespace

TEST_CASE("Recognizer: files and waveforms give the bundled examples' transcripts",
          "[decode][recognizer][bundled]") {
  std::vector<masr::data::ManifestRow> rows;
  std::vector<std::vector<float>> audio;
  for (const auto& n : kNames) {
    masr::data::ManifestRow row;
    row.id = n;
    row.wav = kDir + "/examples/" + n + ".wav";
    rows.push_back(row);
    audio.push_back(masr::audio::read_audio(row.wav, 16000).samples);
  }
  for (const std::string search : {"greedy", "ctc-beam", "auto"}) {
    INFO("search " << search);
    auto recognizer = Recognizer::open(bundled(search));
    using masr::decode::Search;  // a CTC model: auto is ctc-beam
    CHECK(recognizer->search() == (search == "greedy" ? Search::kGreedy : Search::kCtcBeam));
    CHECK(recognizer->device().str() == "cpu");
    CHECK(recognizer->sample_rate() == 16000);

    std::vector<std::string> from_files(rows.size());
    masr::decode::TranscribeOptions options;
    options.batching.max_utterances = 2;
    recognizer->transcribe(rows, options, [&](masr::decode::FileResult&& r) {
      REQUIRE(r.transcript);
      from_files[r.row] = r.transcript->text;
    });
    CHECK(from_files == kTexts);

    std::vector<const std::vector<float>*> waveforms;
    for (const auto& a : audio) waveforms.push_back(&a);
    const auto batch = recognizer->transcribe(waveforms);
    REQUIRE(batch.size() == kTexts.size());
    for (size_t i = 0; i < batch.size(); ++i) CHECK(batch[i].text == kTexts[i]);

    // The facade adds nothing to the search: the lower-level calls on a model loaded apart give
    // the same result.
    masr::decode::AsrModelRecognizer plain(masr::decode::load_asr_model(kDir));
    masr::decode::DecodeConfig config = recognizer->config();
    const auto direct = masr::decode::decode_batch(plain, waveforms, config);
    for (size_t i = 0; i < batch.size(); ++i) {
      CHECK(direct[i].text == batch[i].text);
      CHECK(direct[i].score == Approx(batch[i].score).epsilon(1e-6));
    }
  }
}

TEST_CASE("Recognizer: beam and n-best set every search", "[decode][recognizer]") {
  RecognizerConfig c;
  c.decode.ctc.nbest = 20;
  c.set_beam(4);
  CHECK(c.decode.ctc.beam_size == 4);
  CHECK(c.decode.s2s.beam_size == 4);
  CHECK(c.decode.ctc.nbest == 4);  // capped at the beam
  CHECK(c.decode.s2s.nbest == 4);
}

TEST_CASE("Recognizer: wrong set-ups are config errors naming the option",
          "[decode][recognizer][bundled]") {
  using Catch::Contains;
  RecognizerConfig none;
  CHECK_THROWS_WITH(Recognizer::open(none), Contains("no model given"));

  RecognizerConfig s2s = bundled("s2s");  // a CTC-only model
  CHECK_THROWS_WITH(Recognizer::open(s2s), Contains("s2s"));

  RecognizerConfig lm_greedy = bundled("greedy");
  lm_greedy.lm = "/nonexistent/lm.masr";  // refused for the search before it is read
  CHECK_THROWS_WITH(Recognizer::open(lm_greedy),
                    Contains("used by the s2s and ctc-beam searches, not 'greedy'"));

  RecognizerConfig cold = bundled("greedy");
  cold.lm_temperature = 0.0;
  CHECK_THROWS_WITH(Recognizer::open(cold), Contains("--lm-temperature"));

  RecognizerConfig missing = bundled("greedy");
  missing.model = kDir + "/examples";  // a folder without model.masr
  try {
    (void)Recognizer::open(missing);
    FAIL("a folder without model.masr was accepted");
  } catch (const masr::Error& e) {
    CHECK(std::string(e.what()).find("has no model.masr") != std::string::npos);
  }
}

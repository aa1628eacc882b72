// tests/decode/test_chunked_decoder.cpp
// Long files in windows: on a model whose waveform spells its CTC frames, chunked greedy decoding
// equals decoding the whole file for every chunk size and overlap (cuts inside words included);
// the cut and join rules by hand; streaming reads equal whole reads; a folder's results come in
// input order with bounded read-ahead; the bundled model on concatenated utterances.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "core/remove_tree.h"
#include "decode/asr_model_recognizer.h"
#include "decode/chunked_decoder.h"
#include "decode/decode_inputs.h"
#include "decode/file_transcriber.h"
#include "text/scoring.h"

using namespace masr::decode;

namespace {

// 100 samples are one 40 ms encoder frame whose best token is round(8 x its middle sample):
// 0 blank, 1 " ", 2 "a", 3 "b", 4 "c". Each frame depends on its own samples only, so any window
// gives the same frames as the whole file, and audio that starts off the frame grid gives the
// frames of the file whose middles it holds.
class SpellingModel : public RecognitionModel {
 public:
  std::pair<at::Tensor, at::Tensor> encode(const at::Tensor& wavs,
                                           const at::Tensor& rel_lens) override {
    ++encodes;
    longest = std::max(longest, wavs.size(1));
    encoded.push_back(wavs.size(1));
    const int64_t frames = wavs.size(1) / 100;
    const at::Tensor ids = at::round(wavs.narrow(1, 0, frames * 100)
                                         .view({wavs.size(0), frames, 100})
                                         .select(2, 50) * 8)
                               .to(at::kLong)
                               .clamp(0, 4);
    const at::Tensor enc = at::log_softmax(at::one_hot(ids, 5).to(at::kFloat) * 6.0, -1);
    return {enc, at::round(rel_lens * frames).to(at::kLong)};
  }
  at::Tensor ctc_log_probs(const at::Tensor& enc) override { return enc; }
  bool has_decoder() const override { return false; }
  at::Tensor decoder_log_probs(const at::Tensor&, const at::Tensor&, const at::Tensor&) override {
    throw masr::Error("no decoder");
  }
  std::vector<std::string> pieces() const override { return {"<b>", " ", "a", "b", "c"}; }
  int sample_rate() const override { return 2500; }
  std::string detokenize(const std::vector<int64_t>& tokens) const override {
    std::string text;
    for (int64_t t : tokens) text += pieces()[static_cast<size_t>(t)];
    return text;
  }
  bool causal() const override { return is_causal; }
  int encodes = 0;
  int64_t longest = 0;
  bool is_causal = false;
  std::vector<int64_t> encoded;  // the length in samples of every encode call's audio
};

std::vector<float> spell(const std::vector<int>& frames) {
  std::vector<float> w;
  for (int f : frames) w.insert(w.end(), 100, static_cast<float>(f) / 8.0f);
  return w;
}

// Words of letters, each letter held 1-3 frames, blanks between letters only sometimes (so the
// same letter may repeat across a blank, and runs of letters have no blank to cut at), spaces
// between words, and now and then a pause of 10-30 blank frames.
std::vector<int> random_speech(size_t frames, unsigned seed, bool pauses) {
  std::mt19937 rng(seed);
  std::vector<int> out;
  while (out.size() < frames) {
    const int letters = 1 + static_cast<int>(rng() % 6);
    for (int l = 0; l < letters; ++l) {
      const int token = 2 + static_cast<int>(rng() % 3);
      out.insert(out.end(), 1 + rng() % 3, token);
      if (rng() % 3 == 0) out.push_back(0);
    }
    out.push_back(1);
    if (pauses && rng() % 4 == 0) out.insert(out.end(), 10 + rng() % 20, 0);
  }
  out.resize(frames);
  return out;
}

Transcript whole(SpellingModel& model, const std::vector<float>& w, const DecodeConfig& config) {
  return decode_batch(model, {&w}, config).at(0);
}

// The text's letters without its spaces: utterances joined with no pause between them come out
// as run-together words ("JOKETELL"), which is not a lost word.
std::string letters(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != ' ') out += c;
  return out;
}

}  // namespace

TEST_CASE("choose_cut: middle of the longest blank run, else the quietest frame", "[decode][chunked]") {
  auto lp = [](const std::vector<int>& best) {
    return at::log_softmax(
        at::one_hot(at::tensor(std::vector<int64_t>(best.begin(), best.end())), 3).to(at::kFloat) *
            5.0,
        -1);
  };
  // Runs of blank (0): [1,3) length 2, [4,8) length 4 -> middle 6.
  CHECK(choose_cut(lp({1, 0, 0, 2, 0, 0, 0, 0, 1}), {}, 0) == 6);
  // Equal runs: the later one (frames 4-5 -> 5).
  CHECK(choose_cut(lp({0, 0, 1, 2, 0, 0}), {}, 0) == 5);
  // No blank: the quietest frame.
  CHECK(choose_cut(lp({1, 2, 1, 2}), {0.5, 0.2, 0.1, 0.3}, 0) == 2);
}

TEST_CASE("append_hypothesis: runs across a cut merge, pauses become word boundaries",
          "[decode][chunked]") {
  const std::vector<char> starts = {0, 0, 0, 0, 0}, seps = {0, 1, 0, 0, 0};
  CtcHypothesis all;
  all.tokens = {2, 3};
  all.start_frames = {0, 4};
  all.end_frames = {2, 10};
  all.token_logp = {0, 0};
  CtcHypothesis piece;  // "b" continues the run that ended at frame 10, then "c"
  piece.tokens = {3, 4};
  piece.start_frames = {0, 30};
  piece.end_frames = {2, 31};
  piece.token_logp = {0, 0};
  append_hypothesis(all, piece, 10, 1, 8, starts, seps);
  CHECK(all.tokens == std::vector<int64_t>{2, 3, 4});
  CHECK(all.end_frames == std::vector<int64_t>{2, 12, 41});
  // A piece starting 20 frames after the last token with no boundary: a space goes between.
  CtcHypothesis next;
  next.tokens = {2};
  next.start_frames = {20};
  next.end_frames = {21};
  append_hypothesis(all, next, 41, 1, 8, starts, seps);
  CHECK(all.tokens == std::vector<int64_t>{2, 3, 4, 1, 2});
  // The same gap below the pause length: no space (a cut inside a word).
  next.start_frames = {3};
  next.end_frames = {4};
  append_hypothesis(all, next, 62, 1, 8, starts, seps);
  CHECK(all.tokens == std::vector<int64_t>{2, 3, 4, 1, 2, 2});
  // A space on each side of the cut: one kept.
  all.tokens.back() = 1;
  next.tokens = {1};
  append_hypothesis(all, next, 70, 1, 8, starts, seps);
  CHECK(all.tokens == std::vector<int64_t>{2, 3, 4, 1, 2, 1});
}

TEST_CASE("chunked greedy equals whole-file greedy for every chunk size and overlap",
          "[decode][chunked]") {
  SpellingModel model;
  DecodeConfig config;
  config.search = Search::kGreedy;
  config.word_start_shift = 0.0;
  for (const bool pauses : {true, false}) {
    const std::vector<float> wav = spell(random_speech(1500, pauses ? 7 : 8, pauses));  // 60 s
    const Transcript expected = whole(model, wav, config);
    REQUIRE(expected.words.size() > 100);
    for (const double chunk : {3.0, 4.4, 10.0, 25.0}) {
      for (const double overlap : {0.0, 0.4, 1.0})
      for (const bool segments : {true, false}) {
        CAPTURE(pauses, chunk, overlap, segments);
        ChunkingOptions chunking{chunk, overlap, 1e9};  // no pause separators: exact equality
        chunking.segments = segments;
        MemorySampleStream stream(wav);
        model.encodes = 0;
        model.longest = 0;
        ChunkedDecodeStats stats;
        const Transcript t = decode_chunked(model, stream, config, chunking, nullptr, {}, &stats);
        CHECK(t.text == expected.text);
        CHECK(t.tokens == expected.tokens);
        REQUIRE(t.words.size() == expected.words.size());
        for (size_t i = 0; i < t.words.size(); ++i) {
          CHECK(t.words[i].start == Approx(expected.words[i].start));
          CHECK(t.words[i].end == Approx(expected.words[i].end));
        }
        CHECK(stats.seconds == Approx(60.0));
        CHECK(static_cast<size_t>(model.encodes) == stats.windows + stats.stretches);
        CHECK((segments || stats.stretches == 0));
        CHECK(model.encodes >= static_cast<int>(60.0 / chunk));
        CHECK(model.longest <= static_cast<int64_t>((chunk + 1.0) * 2500));  // bounded windows
      }
    }
  }
}

TEST_CASE("chunked segments: split at pauses, each stretch trimmed to its speech",
          "[decode][chunked]") {
  // 10 frames of speech, 20 of pause, 10 of speech, 20 of pause, 10 of speech (2.8 s): one
  // window, then each stretch between the pauses (at least 0.3 s = 8 frames) encoded again, from
  // its first sound to 0.1 s (250 samples) after its last.
  std::vector<int> frames;
  for (int part = 0; part < 5; ++part) {
    if (part % 2 == 0) {
      for (int f = 0; f < 10; ++f) frames.push_back(f % 2 == 0 ? 2 : 3);
    } else {
      frames.insert(frames.end(), 20, 0);
    }
  }
  std::vector<float> wav = spell(frames);
  DecodeConfig config;
  config.search = Search::kGreedy;
  config.word_start_shift = 0.0;  // word starts at their first frame
  const ChunkingOptions chunking{30.0, 2.0, 0.3};
  // A causal model (no silence kept before the speech): pauses [10, 30) and [40, 60) split at 20
  // and 50; the stretches [0, 20), [20, 50), [50, 70) trimmed to samples [0, 1250), [3000, 4250),
  // [6000, 7000).
  SpellingModel model;
  model.is_causal = true;
  MemorySampleStream stream(wav);
  Transcript t = decode_chunked(model, stream, config, chunking, nullptr, {});
  CHECK(model.encoded == std::vector<int64_t>{7000, 1250, 1250, 1000});
  CHECK(t.text == "ababababab ababababab ababababab");
  CHECK(t.words.at(1).start == Approx(1.2));  // frames of the whole file
  CHECK(t.words.at(2).start == Approx(2.4));

  // Speech that starts inside a frame: the stretch starts at its first loud sample, off the
  // frame grid, and its frames are placed at the nearest frame of the file.
  std::vector<float> late_wav = wav;
  std::fill(late_wav.begin() + 3000, late_wav.begin() + 3040, 0.0f);  // 0.4 frame later
  model.encoded.clear();
  MemorySampleStream late(late_wav);
  t = decode_chunked(model, late, config, chunking, nullptr, {});
  CHECK(model.encoded.at(2) == 1210);
  CHECK(t.words.at(1).start == Approx(1.2));  // 30.4 frames: frame 30
  // Quiet is relative: 50 dB under the loudest 10 ms. -60 dB noise in the pauses is silence.
  for (float& x : late_wav)
    if (x == 0.0f) x = (&x - late_wav.data()) % 2 ? 1e-3f : -1e-3f;
  model.encoded.clear();
  MemorySampleStream noisy(late_wav);
  t = decode_chunked(model, noisy, config, chunking, nullptr, {});
  CHECK(model.encoded == std::vector<int64_t>{7000, 1250, 1210, 1000});
  CHECK(t.text == "ababababab ababababab ababababab");

  // A bidirectional model keeps 0.05 s (125 samples) before the speech: [0, 1250),
  // [2875, 4250), [5875, 7000).
  SpellingModel bidirectional;
  MemorySampleStream again(wav);
  t = decode_chunked(bidirectional, again, config, chunking, nullptr, {});
  CHECK(bidirectional.encoded == std::vector<int64_t>{7000, 1250, 1375, 1125});
  CHECK(t.text == "ababababab ababababab ababababab");
}

TEST_CASE("chunked prefix beam search equals whole-file beam search on a spelled file",
          "[decode][chunked]") {
  SpellingModel model;
  DecodeConfig config;
  config.search = Search::kCtcBeam;
  config.ctc.beam_size = 8;
  const std::vector<float> wav = spell(random_speech(1000, 11, true));
  const Transcript expected = whole(model, wav, config);
  for (const double chunk : {4.0, 12.0}) {
    MemorySampleStream stream(wav);
    const Transcript t = decode_chunked(model, stream, config, {chunk, 1.0, 1e9});
    CHECK(t.text == expected.text);
  }
}

TEST_CASE("chunking options: clear errors", "[decode][chunked]") {
  CHECK_NOTHROW(ChunkingOptions{30, 2, 0.3}.validate());
  CHECK_NOTHROW(ChunkingOptions{0, 2, 0.3}.validate());
  CHECK_THROWS_WITH((ChunkingOptions{4, 2, 0.3}.validate()), Catch::Contains("2 x overlap + 1 s"));
  CHECK_THROWS_WITH((ChunkingOptions{-1, 2, 0.3}.validate()), Catch::Contains("--chunk-seconds"));
  CHECK_THROWS_WITH((ChunkingOptions{30, -1, 0.3}.validate()), Catch::Contains("--chunk-overlap"));
  SpellingModel model;
  MemorySampleStream empty({});
  CHECK_THROWS_WITH(decode_chunked(model, empty, DecodeConfig{}, ChunkingOptions{}),
                    Catch::Contains("no samples"));
}

TEST_CASE("file sample stream: blocks equal the whole read, resampled too", "[decode][chunked]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "masr_test_sample_stream";
  masr::remove_tree(dir.string());
  fs::create_directories(dir);
  std::vector<float> stereo;
  for (int i = 0; i < 8000 * 7; ++i) {  // 7 s of two sines at 8 kHz
    stereo.push_back(0.4f * std::sin(0.01f * static_cast<float>(i)));
    stereo.push_back(0.3f * std::sin(0.037f * static_cast<float>(i)));
  }
  const std::string path = (dir / "a.wav").string();
  masr::audio::write_audio(path, stereo, 8000, 2);
  for (const int rate : {8000, 16000}) {
    const std::vector<float> whole_read = masr::audio::read_audio(path, rate).samples;
    auto stream = open_file_sample_stream(path, rate);
    REQUIRE(stream);
    std::vector<float> got;
    while (stream->read(got, 3001) > 0) {
    }
    CAPTURE(rate);
    REQUIRE(std::abs(static_cast<double>(got.size()) - static_cast<double>(whole_read.size())) <= 2);
    double worst = 0;
    for (size_t i = 0; i < std::min(got.size(), whole_read.size()); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(got[i] - whole_read[i])));
    CHECK(worst < 1e-3);
  }
  std::ofstream(dir / "bad.wav") << "not audio";
  CHECK_FALSE(open_file_sample_stream((dir / "bad.wav").string(), 16000));
  masr::remove_tree(dir.string());
}

TEST_CASE("transcribe_files: results in input order, long files in windows, errors kept",
          "[decode][chunked]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "masr_test_ordered_results";
  masr::remove_tree(dir.string());
  fs::create_directories(dir);
  SpellingModel model;
  DecodeConfig config;
  config.search = Search::kGreedy;
  std::vector<masr::data::ManifestRow> rows;
  std::vector<std::string> expected;
  for (int i = 0; i < 23; ++i) {
    masr::data::ManifestRow row;
    row.id = "u" + std::to_string(i);
    row.wav = (dir / (row.id + ".wav")).string();
    rows.push_back(row);
    if (i == 5) {  // missing
      expected.push_back("");
      continue;
    }
    // Every seventh file is 40 s long (chunked at 10 s), the others 1-4 s.
    const size_t frames = i % 7 == 3 ? 1000 : 25 * (1 + static_cast<size_t>(i % 4));
    const std::vector<float> wav = spell(random_speech(frames, static_cast<unsigned>(i), true));
    masr::audio::write_audio(row.wav, wav, 2500);
    // 16-bit files: the spelled values survive quantization (they round back to the same ids).
    expected.push_back(whole(model, wav, config).text);
  }
  TranscribeOptions options;
  options.batching = {3, 0.0};
  options.chunking = {10.0, 1.0, 1e9};
  options.reorder_window = 5;
  options.read_ahead_batches = 1;
  options.threads = 3;
  std::vector<size_t> order;
  model.longest = 0;
  transcribe_files(model, rows, options, config, [&](FileResult&& r) {
    order.push_back(r.row);
    CAPTURE(r.row);
    if (r.row == 5) {
      CHECK(r.transcript == nullptr);
      CHECK_THAT(r.error, Catch::Contains("u5.wav"));
      return;
    }
    REQUIRE(r.transcript != nullptr);
    CHECK(r.transcript->id == rows[r.row].id);
    CHECK(r.transcript->text == expected[r.row]);
  });
  std::vector<size_t> all(rows.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  CHECK(order == all);
  CHECK(model.longest <= 11 * 2500);  // the 40 s files never went whole to the encoder
  masr::remove_tree(dir.string());
}

TEST_CASE("bundled model: chunked decoding of concatenated utterances matches one by one",
          "[decode][chunked][bundled]") {
  const std::string dir = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";
  auto recognizer = std::make_unique<AsrModelRecognizer>(load_asr_model(dir + "/model.masr"));
  DecodeConfig config;
  config.search = Search::kGreedy;
  use_model_token_ids(config, *load_asr_model(dir + "/model.masr"));
  const std::vector<std::string> names = {"en_us_nyc_m4-000499", "en_gb_x_gbclan_m1-000167",
                                          "en_gb_x_gbcwmd_m5-002757"};
  std::vector<std::vector<float>> utterances;
  for (const auto& n : names)
    utterances.push_back(masr::audio::read_audio(dir + "/examples/" + n + ".wav", 16000).samples);
  const std::vector<std::string> refs = {
      "IT IS A PERIOD OF SYSTEM WAR",
      "HE KNOWS HE DOESN'T KNOW WHAT HE'S DOING SO HE DOES IT CAREFULLY AND WITH GREAT RESTRAINT",
      "TELL ME A JOKE"};
  // Each utterance twice, in two orders, with 0.6 s of silence or none between: about 30 s.
  for (const double gap : {0.6, 0.0}) {
    std::vector<float> joined;
    std::string one_by_one, ref;
    for (const size_t k : {0, 1, 2, 2, 0, 1}) {
      joined.insert(joined.end(), utterances[k].begin(), utterances[k].end());
      joined.insert(joined.end(), static_cast<size_t>(gap * 16000), 0.0f);
      const auto t = decode_batch(*recognizer, {&utterances[k]}, config).at(0);
      one_by_one += (one_by_one.empty() ? "" : " ") + t.text;
      ref += (ref.empty() ? "" : " ") + refs[k];
    }
    masr::text::ErrorRateStats base;
    base.append_text("joined", ref, one_by_one);
    const double wer_one_by_one = base.summarize().error_rate;
    for (const double chunk : {8.0, 12.0}) {
      MemorySampleStream stream(joined);
      ChunkedDecodeStats stats;
      const Transcript t =
          decode_chunked(*recognizer, stream, config, {chunk, 1.0, 0.3}, nullptr, {}, &stats);
      masr::text::ErrorRateStats chunked;
      chunked.append_text("joined", ref, t.text);
      const double wer = chunked.summarize().error_rate;
      // Letters against one by one's (character errors, spaces aside).
      masr::text::ErrorRateStats spelled(/*split_tokens=*/true);
      const auto& u = spelled.append_text("joined", letters(one_by_one), letters(t.text));
      CAPTURE(gap, chunk, one_by_one, t.text, wer_one_by_one, wer, stats.windows, u.error_rate,
              u.counts.insertions, u.counts.deletions, u.counts.substitutions, u.ref_tokens);
      CHECK(stats.windows >= 2);
      // Measured WER: one by one 7.1 %; chunked 7.1 % (12 s windows) and 17.9 % (8 s: three
      // words of the longest utterance change by a letter or two) with pauses, 17.9 % without
      // them, where utterances run into each other ("JOKETELL") (docs/decode.md, Long recordings).
      CHECK(wer <= wer_one_by_one + (gap > 0 ? 15.0 : 20.0));
      // No word lost or doubled at the cuts: the letters stay those of one by one but for a few
      // changed in place (measured: none, or 6 of 210 with 8 s windows and pauses, 2 of them
      // deletions; a lost "TELL ME A JOKE" would delete 11).
      CHECK(u.counts.insertions + u.counts.deletions <= 4);
      CHECK(u.error_rate <= 5.0);
      for (size_t i = 1; i < t.words.size(); ++i) CHECK(t.words[i].start >= t.words[i - 1].start);
      REQUIRE_FALSE(t.words.empty());
      CHECK(t.words.back().end <= static_cast<double>(joined.size()) / 16000 + 1e-9);
    }
  }
}

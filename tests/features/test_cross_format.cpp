// tests/features/test_cross_format.cpp
// The same espeak-ng sentence as a 16 kHz WAV, a 44.1 kHz stereo FLAC and an 8 kHz OGG Vorbis
// (made with sox): read at 16 kHz, their Fbank features must agree within what resampling explains,
// plus, for Vorbis, its coding noise (measured against a lossless 8 kHz WAV of the same speech).
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "audio/audio_reader.h"
#include "features/fbank.h"
#include "signals.h"

namespace {

bool have_tool(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

void run(const std::string& command) {
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

// Mel bins of the 80-mel, 16 kHz SpeechBrain Fbank whose upper edge lies below `hz`. Bin m spans
// mel points m..m+2 of n_mels+2 equally spaced on the HTK mel scale (2595 log10(1 + f/700)).
int64_t mel_bins_below(double hz, int n_mels = 80, double f_max = 8000.0) {
  const auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
  const double step = mel(f_max) / (n_mels + 1);
  int64_t bins = 0;
  while (bins < n_mels && (bins + 2) * step < mel(hz)) ++bins;
  return bins;
}

struct Agreement {
  double mean = 0.0;  // mean |a - b| in dB over the selected frames and bins
  double max = 0.0;
  int64_t frames = 0;  // frames selected
};

// Compares `other` with `reference` (both (frames, n_mels) dB) on the first `bins` mel bins, over
// the frames whose energy (power summed over all bins) is within `range_db` of the loudest frame
// of `reference`. Near-silent frames are left out: there the 80 dB floor and lossy coding noise,
// not the spectrum of the speech, decide the values.
Agreement compare(const at::Tensor& reference, const at::Tensor& other, int64_t bins,
                  double range_db) {
  const int64_t frames = std::min(reference.size(0), other.size(0));
  const at::Tensor ref = reference.slice(0, 0, frames).to(at::kDouble);
  const at::Tensor oth = other.slice(0, 0, frames).to(at::kDouble);
  const at::Tensor energy = 10.0 * at::log10(at::pow(10.0, ref / 10.0).sum(1));
  const at::Tensor loud = energy >= energy.max() - range_db;
  const at::Tensor diff = (ref - oth).slice(1, 0, bins).abs().index({loud});
  return {diff.mean().item<double>(), diff.max().item<double>(), loud.sum().item<int64_t>()};
}

}  // namespace

TEST_CASE(
    "the same speech as WAV 16 kHz, FLAC 44.1 kHz stereo and OGG 8 kHz gives the same "
    "features within resampling error",
    "[features]") {
  if (!have_tool("espeak-ng") || !have_tool("sox")) {
    WARN("espeak-ng or sox is missing (scripts/setup.sh installs both); cross-format test skipped");
    return;
  }
  const masr::test::ScratchDir dir("crossformat");
  const std::string speech = dir.file("speech.wav");
  run("espeak-ng -v en-us -w " + speech +
      " 'The quick brown fox jumps over the lazy dog, while seven wizards quietly study "
      "ancient books.'");
  // -R: repeatable output; -D: no dither, so the files hold the same signal bit for bit per run.
  const std::string wav = dir.file("a.wav"), flac = dir.file("b.flac"), ogg = dir.file("c.ogg");
  run("sox -R -D " + speech + " -r 16000 -b 16 " + wav);
  run("sox -R -D " + speech + " -r 44100 -b 24 -c 2 " + flac);
  run("sox -R -D " + speech + " -r 8000 " + ogg);
  // The same 8 kHz signal without lossy coding separates what resampling does from what Vorbis
  // does.
  const std::string wav8k = dir.file("d.wav");
  run("sox -R -D " + speech + " -r 8000 -b 16 " + wav8k);

  masr::features::FbankConfig config;
  config.n_mels = 80;
  const masr::features::Fbank fbank(config);
  const auto features = [&](const std::string& path) {
    masr::audio::Audio audio = masr::audio::read_audio(path, 16000);
    const at::Tensor wav_tensor = at::from_blob(
        audio.samples.data(), {static_cast<int64_t>(audio.samples.size())}, at::kFloat);
    return fbank(wav_tensor)[0].clone();
  };
  const at::Tensor a = features(wav), b = features(flac), c = features(ogg), d = features(wav8k);
  // Every file is 5.75 s: soxr keeps lengths to the sample, so the frame counts match.
  CHECK(a.size(0) == b.size(0));
  CHECK(a.size(0) == c.size(0));
  CHECK(a.size(0) == d.size(0));

  const int64_t low_bins = mel_bins_below(3800.0);
  REQUIRE(low_bins == 58);
  const Agreement flac_all = compare(a, b, 80, 1e9);  // every frame, every bin
  const Agreement flac_loud = compare(a, b, 80, 40.0);
  const Agreement ogg_loud = compare(a, c, low_bins, 40.0);
  const Agreement ogg_all = compare(a, c, low_bins, 1e9);
  const Agreement wav8k_loud = compare(a, d, low_bins, 40.0);
  if (std::getenv("MASR_PRINT_PARITY") != nullptr) {
    std::printf("cross-format (%lld frames; %lld within 40 dB of the loudest):\n",
                static_cast<long long>(a.size(0)), static_cast<long long>(flac_loud.frames));
    std::printf("  flac 44.1k stereo, 80 bins, all frames: mean %.4f max %.3f dB\n", flac_all.mean,
                flac_all.max);
    std::printf("  flac 44.1k stereo, 80 bins, loud frames: mean %.4f max %.3f dB\n",
                flac_loud.mean, flac_loud.max);
    std::printf("  ogg 8k, %lld bins < 3.8 kHz, loud frames: mean %.4f max %.3f dB\n",
                static_cast<long long>(low_bins), ogg_loud.mean, ogg_loud.max);
    std::printf("  wav 8k, %lld bins < 3.8 kHz, loud frames: mean %.4f max %.3f dB\n",
                static_cast<long long>(low_bins), wav8k_loud.mean, wav8k_loud.max);
    std::printf("  ogg 8k, %lld bins < 3.8 kHz, all frames: mean %.4f max %.3f dB\n",
                static_cast<long long>(low_bins), ogg_all.mean, ogg_all.max);
  }
  // Measured (espeak-ng 1.51, sox 14.4.2, libvorbis 1.3.7; docs/features.md): FLAC mean 0.008
  // max 0.66 dB over everything; 8 kHz WAV mean 0.033 dB; 8 kHz Vorbis mean 1.78 dB (loud frames,
  // bins below 3.8 kHz). The bounds leave room for other versions of the tools.
  CHECK(flac_loud.frames > a.size(0) / 2);  // the speech is there: most frames are loud
  CHECK(flac_all.mean < 0.03);
  CHECK(flac_all.max < 1.5);
  CHECK(wav8k_loud.mean < 0.1);  // resampling to 8 kHz and back alone
  CHECK(ogg_loud.mean < 2.5);
  // Vorbis at 8 kHz adds coding noise beyond resampling, most of it in quiet frames: without the
  // energy mask the difference is larger (this guards the metric itself).
  CHECK(ogg_loud.mean > wav8k_loud.mean);
  CHECK(ogg_all.mean > ogg_loud.mean);
}

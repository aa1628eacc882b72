// lib/audio/audio_reader.h
// Reading audio files (libsndfile: WAV, FLAC, OGG/Vorbis, Opus, MP3, ...) as mono float32 at a
// requested sample rate, like SpeechBrain's read_audio followed by a resampler.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace masr::audio {

// Samples in [-1, 1] (integer formats are scaled by 2^(bits-1), as torchaudio does).
struct Audio {
  std::vector<float> samples;
  int sample_rate = 0;

  double duration() const {
    return sample_rate > 0 ? static_cast<double>(samples.size()) / sample_rate : 0.0;
  }
};

// What the file header says, without decoding the samples (fast, for manifests).
struct AudioInfo {
  int64_t frames = 0;  // samples per channel
  int sample_rate = 0;
  int channels = 0;
  std::string format;  // e.g. "WAV (Microsoft) / Signed 16 bit PCM"

  double duration() const {
    return sample_rate > 0 ? static_cast<double>(frames) / sample_rate : 0.0;
  }
};

// Sample rates a header may declare; anything else is a damaged header (an input error).
inline constexpr int kMinSampleRate = 1000;
inline constexpr int kMaxSampleRate = 768000;

// Throws masr::Error (naming the file and the reason) for files that cannot be opened or are not
// audio, that have no samples, whose data ends before the header says, whose header declares a
// sample rate outside kMinSampleRate..kMaxSampleRate or more samples than the file's bytes can
// hold, or that hold NaN/Inf.
AudioInfo probe_audio(const std::string& path);

// Decodes every channel, averages them to mono and resamples to `target_rate` (libsoxr, high
// quality). target_rate <= 0 keeps the file's rate.
Audio read_audio(const std::string& path, int target_rate = 16000);

// The same for a whole audio file held in memory (e.g. read from stdin), through libsndfile's
// virtual I/O: any format libsndfile reads from a file. `name` stands for the path in messages.
AudioInfo probe_audio_bytes(const std::string& bytes, const std::string& name);
Audio read_audio_bytes(const std::string& bytes, const std::string& name, int target_rate = 16000);
// Whether libsndfile recognizes `bytes` as an audio file (its header, not yet its samples).
bool has_audio_header(const std::string& bytes);

// Writes mono or interleaved float samples; `format` is an SF_FORMAT_* combination (0: 16-bit
// PCM WAV). Used by tests and tools; throws masr::Error on failure.
void write_audio(const std::string& path, const std::vector<float>& interleaved, int sample_rate,
                 int channels = 1, int format = 0);

}  // namespace masr::audio

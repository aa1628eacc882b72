// lib/decode/sample_stream.h
// An utterance's audio read front to back in blocks, mono at the model's rate, so that a long
// file is decoded without ever holding all of its samples (decode/chunked_decoder.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace masr::decode {

class SampleStream {
 public:
  virtual ~SampleStream() = default;
  // Appends up to `count` next samples to `out`; returns how many (0: the audio has ended).
  // Throws masr::Error naming the file when its data turns out unreadable (cut off, NaN/Inf).
  virtual size_t read(std::vector<float>& out, size_t count) = 0;
};

// Samples already in memory (stdin, headerless PCM, formats that are decoded whole).
class MemorySampleStream : public SampleStream {
 public:
  explicit MemorySampleStream(std::vector<float> samples) : samples_(std::move(samples)) {}
  size_t read(std::vector<float>& out, size_t count) override;

 private:
  std::vector<float> samples_;
  size_t position_ = 0;
};

// A file libsndfile reads block by block (WAV, FLAC, AIFF, ...), channels averaged in double as
// audio::read_audio does and resampled to `sample_rate` with libsoxr in streaming mode (the same
// high-quality filter as the one-shot resampler). Returns null for files it should not stream
// (Ogg and MPEG containers, which audio::read_audio decodes its own way; files libsndfile does not
// open): the caller then reads the file whole. Files audio::probe_audio refuses (truncated, a
// damaged header) are the same input errors here.
std::unique_ptr<SampleStream> open_file_sample_stream(const std::string& path, int sample_rate);

}  // namespace masr::decode

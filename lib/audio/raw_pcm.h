// lib/audio/raw_pcm.h
// Headerless PCM (`--raw-pcm s16le:16000`): what arecord, ffmpeg -f s16le or a telephony stack
// writes. Mono, little-endian, 16-bit integer or 32-bit float samples at a stated rate.
#pragma once

#include <string>

#include "audio/audio_reader.h"

namespace masr::audio {

struct RawPcmFormat {
  enum class Encoding { kS16le, kF32le };
  Encoding encoding = Encoding::kS16le;
  int sample_rate = 16000;

  int bytes_per_sample() const { return encoding == Encoding::kS16le ? 2 : 4; }
  std::string str() const;  // "s16le:16000", as parsed
};

// Parses "ENCODING:RATE": s16le or f32le, and a sample rate in Hz (an integer, 1000 to 768000).
// Throws a usage error that names the spec and shows a valid one.
RawPcmFormat parse_raw_pcm_spec(const std::string& spec);

// Samples of `bytes` (s16le scaled by 1/32768, as libsndfile and torchaudio do) resampled to
// `target_rate` (<= 0: kept). Input errors name `name`: no bytes, a byte count that is not a whole
// number of samples, a non-finite f32 sample.
Audio decode_raw_pcm(const std::string& bytes, const RawPcmFormat& format, const std::string& name,
                     int target_rate = 16000);
// Frames and rate of `bytes` without decoding them (the same errors for empty and odd sizes).
AudioInfo probe_raw_pcm(size_t byte_count, const RawPcmFormat& format, const std::string& name);

// The container whose magic bytes begin `bytes` ("WAV (RIFF)", "FLAC", ...), or "" for none: a
// file with a header given as raw PCM would be read header and all as samples.
std::string audio_header_name(const std::string& bytes);
// Logs a warning naming `name` and the container when `bytes` (the start of raw PCM input) begins
// with an audio file header; the samples are still read as asked.
void warn_if_audio_header(const std::string& bytes, const std::string& name);

// A raw PCM file on disk (its start checked with warn_if_audio_header).
AudioInfo probe_raw_pcm_file(const std::string& path, const RawPcmFormat& format);
Audio read_raw_pcm_file(const std::string& path, const RawPcmFormat& format,
                        int target_rate = 16000);

}  // namespace masr::audio

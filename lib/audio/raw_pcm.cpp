// lib/audio/raw_pcm.cpp
// Decoding headerless PCM byte by byte (little-endian whatever the host is).
#include "audio/raw_pcm.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "audio/resample.h"
#include "core/error.h"
#include "core/log.h"

namespace masr::audio {
namespace {

constexpr int kMinRate = 1000, kMaxRate = 768000;

[[noreturn]] void bad_spec(const std::string& spec, const std::string& reason) {
  throw Error(ErrorKind::kUsage, "--raw-pcm '" + spec + "': " + reason +
                                     "; expected ENCODING:RATE with ENCODING s16le or f32le "
                                     "(mono, little-endian), e.g. --raw-pcm s16le:16000");
}

[[noreturn]] void fail(const std::string& name, const std::string& reason) {
  throw_input_error("raw PCM '" + name + "': " + reason);
}

std::string encoding_name(RawPcmFormat::Encoding e) {
  return e == RawPcmFormat::Encoding::kS16le ? "s16le" : "f32le";
}

}  // namespace

std::string RawPcmFormat::str() const {
  return encoding_name(encoding) + ":" + std::to_string(sample_rate);
}

RawPcmFormat parse_raw_pcm_spec(const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) bad_spec(spec, "no sample rate");
  const std::string encoding = spec.substr(0, colon);
  const std::string rate = spec.substr(colon + 1);
  RawPcmFormat format;
  if (encoding == "s16le") {
    format.encoding = RawPcmFormat::Encoding::kS16le;
  } else if (encoding == "f32le") {
    format.encoding = RawPcmFormat::Encoding::kF32le;
  } else {
    bad_spec(spec, encoding.empty() ? "no sample encoding"
                                    : "unknown sample encoding '" + encoding + "'");
  }
  if (rate.find(':') != std::string::npos) {
    bad_spec(spec, "only mono is supported (no channel count)");
  }
  if (rate.empty() || rate.find_first_not_of("0123456789") != std::string::npos) {
    bad_spec(spec, "the sample rate '" + rate + "' is not a whole number of Hz");
  }
  format.sample_rate = rate.size() > 7 ? kMaxRate + 1 : std::stoi(rate);
  if (format.sample_rate < kMinRate || format.sample_rate > kMaxRate) {
    bad_spec(spec, "the sample rate " + rate + " Hz is outside " + std::to_string(kMinRate) + ".." +
                       std::to_string(kMaxRate));
  }
  return format;
}

AudioInfo probe_raw_pcm(size_t byte_count, const RawPcmFormat& format, const std::string& name) {
  const size_t width = static_cast<size_t>(format.bytes_per_sample());
  if (byte_count == 0) fail(name, "empty: it holds no audio samples");
  if (byte_count % width != 0) {
    fail(name, std::to_string(byte_count) + " bytes are not a whole number of " +
                   encoding_name(format.encoding) + " samples (" + std::to_string(width) +
                   " bytes each): cut off, or not " + format.str() + "?");
  }
  AudioInfo info;
  info.frames = static_cast<int64_t>(byte_count / width);
  info.sample_rate = format.sample_rate;
  info.channels = 1;
  info.format = "raw PCM " + format.str();
  return info;
}

Audio decode_raw_pcm(const std::string& bytes, const RawPcmFormat& format, const std::string& name,
                     int target_rate) {
  const AudioInfo info = probe_raw_pcm(bytes.size(), format, name);
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  Audio audio;
  audio.sample_rate = format.sample_rate;
  audio.samples.resize(static_cast<size_t>(info.frames));
  for (size_t i = 0; i < audio.samples.size(); ++i) {
    if (format.encoding == RawPcmFormat::Encoding::kS16le) {
      const auto v =
          static_cast<int16_t>(static_cast<uint16_t>(data[2 * i] | data[2 * i + 1] << 8));
      audio.samples[i] = static_cast<float>(v) / 32768.0f;
    } else {
      const uint32_t u = static_cast<uint32_t>(data[4 * i]) |
                         static_cast<uint32_t>(data[4 * i + 1]) << 8 |
                         static_cast<uint32_t>(data[4 * i + 2]) << 16 |
                         static_cast<uint32_t>(data[4 * i + 3]) << 24;
      float v;
      std::memcpy(&v, &u, sizeof v);
      if (!std::isfinite(v)) {
        std::ostringstream reason;
        reason << "sample " << i << " is " << v << "; audio must be finite (is it really f32le?)";
        fail(name, reason.str());
      }
      audio.samples[i] = v;
    }
  }
  if (target_rate > 0 && target_rate != audio.sample_rate) {
    audio.samples = resample(audio.samples, audio.sample_rate, target_rate);
    if (audio.samples.empty()) {
      fail(name, std::to_string(info.frames) + " samples at " + std::to_string(audio.sample_rate) +
                     " Hz are less than one sample at " + std::to_string(target_rate) + " Hz");
    }
    audio.sample_rate = target_rate;
  }
  return audio;
}

std::string audio_header_name(const std::string& bytes) {
  static const std::pair<const char*, const char*> kMagic[] = {
      {"RIFF", "WAV (RIFF)"}, {"RIFX", "WAV (RIFX)"},    {"RF64", "WAV (RF64)"}, {"FORM", "AIFF"},
      {"fLaC", "FLAC"},       {"OggS", "Ogg"},           {"ID3", "MP3"},         {".snd", "Sun AU"},
      {"caff", "CAF"},        {"NIST_1A", "NIST SPHERE"}};
  for (const auto& [magic, name] : kMagic) {
    if (bytes.rfind(magic, 0) == 0) return name;
  }
  return "";
}

void warn_if_audio_header(const std::string& bytes, const std::string& name) {
  const std::string header = audio_header_name(bytes);
  if (header.empty()) return;
  MASR_LOG_WARN(
      "%s starts with a %s header, but --raw-pcm reads it as headerless samples (the "
      "header too); drop --raw-pcm to read it as the audio file it is",
      name.c_str(), header.c_str());
}

AudioInfo probe_raw_pcm_file(const std::string& path, const RawPcmFormat& format) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) throw_io_error("raw PCM '" + path + "': cannot open: " + error.message());
  return probe_raw_pcm(static_cast<size_t>(size), format, path);
}

Audio read_raw_pcm_file(const std::string& path, const RawPcmFormat& format, int target_rate) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_io_error("raw PCM '" + path + "': cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw_io_error("raw PCM '" + path + "': read failed");
  const std::string data = bytes.str();
  warn_if_audio_header(data.substr(0, 16), "raw PCM '" + path + "'");
  return decode_raw_pcm(data, format, path, target_rate);
}

}  // namespace masr::audio

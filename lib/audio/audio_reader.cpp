// lib/audio/audio_reader.cpp
// libsndfile decoding, down-mixing and validation; resampling is in resample.cpp.
#include "audio/audio_reader.h"

#include <sndfile.h>

#include <cmath>
#include <memory>
#include <sstream>

#include "audio/resample.h"
#include "core/error.h"

namespace masr::audio {
namespace {

struct SndfileCloser {
  void operator()(SNDFILE* file) const { sf_close(file); }
};
using SndfilePtr = std::unique_ptr<SNDFILE, SndfileCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw_input_error("audio file '" + path + "': " + reason);
}

std::string format_name(int format) {
  std::string result;
  for (int mask : {SF_FORMAT_TYPEMASK, SF_FORMAT_SUBMASK}) {
    SF_FORMAT_INFO info{};
    info.format = format & mask;
    if (sf_command(nullptr, SFC_GET_FORMAT_INFO, &info, sizeof(info)) == 0 &&
        info.name != nullptr) {
      result += (result.empty() ? "" : " / ") + std::string(info.name);
    }
  }
  return result;
}

// Opens the file and checks what the header promises. libsndfile accepts a WAV whose data chunk
// is longer than the file by shortening it and noting "data : N (should be M)" in its log; that
// file was cut off, so we refuse it rather than silently decoding a fragment.
SndfilePtr open_checked(const std::string& path, SF_INFO& info) {
  info = SF_INFO{};
  SndfilePtr file(sf_open(path.c_str(), SFM_READ, &info));
  if (!file) {
    const std::string reason = sf_strerror(nullptr);
    if (reason.find("No such file") != std::string::npos ||
        reason.find("ermission") != std::string::npos) {
      throw Error(ErrorKind::kIo, "audio file '" + path + "': cannot open: " + reason);
    }
    fail(path, "not a readable audio file (" + reason + ")");
  }
  char log[4096] = {0};
  sf_command(file.get(), SFC_GET_LOG_INFO, log, sizeof(log));
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const bool data_chunk = line.rfind("data", 0) == 0 || line.rfind("SSND", 0) == 0;
    if (data_chunk && line.find("should be") != std::string::npos) {
      fail(path, "truncated: the header announces more audio than the file holds (" + line + ")");
    }
  }
  if (info.channels < 1) fail(path, "the header declares no channels");
  if (info.samplerate < 1) fail(path, "the header declares no sample rate");
  if (info.frames <= 0) fail(path, "empty: it holds no audio samples");
  return file;
}

}  // namespace

AudioInfo probe_audio(const std::string& path) {
  SF_INFO sf{};
  SndfilePtr file = open_checked(path, sf);
  AudioInfo info;
  info.frames = sf.frames;
  info.sample_rate = sf.samplerate;
  info.channels = sf.channels;
  info.format = format_name(sf.format);
  return info;
}

Audio read_audio(const std::string& path, int target_rate) {
  SF_INFO sf{};
  SndfilePtr file = open_checked(path, sf);
  const int channels = sf.channels;
  const sf_count_t frames = sf.frames;
  std::vector<float> interleaved(static_cast<size_t>(frames) * channels);
  const sf_count_t got = sf_readf_float(file.get(), interleaved.data(), frames);
  if (got < frames) {
    std::ostringstream reason;
    reason << "truncated or corrupt: decoded " << got << " of " << frames << " frames";
    if (sf_error(file.get()) != SF_ERR_NO_ERROR) reason << " (" << sf_strerror(file.get()) << ")";
    fail(path, reason.str());
  }
  Audio audio;
  audio.sample_rate = sf.samplerate;
  audio.samples.resize(static_cast<size_t>(frames));
  for (sf_count_t i = 0; i < frames; ++i) {
    // Average the channels (in double, so 8 channels lose nothing).
    double sum = 0.0;
    for (int c = 0; c < channels; ++c) {
      const float v = interleaved[static_cast<size_t>(i) * channels + c];
      if (!std::isfinite(v)) {
        std::ostringstream reason;
        reason << "sample " << i << " of channel " << c << " is " << v << "; audio must be finite";
        fail(path, reason.str());
      }
      sum += v;
    }
    audio.samples[static_cast<size_t>(i)] = static_cast<float>(sum / channels);
  }
  if (target_rate > 0 && target_rate != audio.sample_rate) {
    audio.samples = resample(audio.samples, audio.sample_rate, target_rate);
    if (audio.samples.empty()) {
      fail(path, std::to_string(frames) + " samples at " + std::to_string(audio.sample_rate) +
                     " Hz are less than one sample at " + std::to_string(target_rate) + " Hz");
    }
    audio.sample_rate = target_rate;
  }
  return audio;
}

void write_audio(const std::string& path, const std::vector<float>& interleaved, int sample_rate,
                 int channels, int format) {
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = channels;
  info.format = format != 0 ? format : (SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  if (!sf_format_check(&info)) {
    throw Error(
        ErrorKind::kIo, "audio file '" + path + "': libsndfile cannot write format 0x" +
                            [&] {
                              std::ostringstream hex;
                              hex << std::hex << info.format;
                              return hex.str();
                            }() +
                            " at " + std::to_string(sample_rate) + " Hz");
  }
  SndfilePtr file(sf_open(path.c_str(), SFM_WRITE, &info));
  if (!file) {
    throw Error(ErrorKind::kIo,
                "audio file '" + path + "': cannot write: " + std::string(sf_strerror(nullptr)));
  }
  const sf_count_t frames = static_cast<sf_count_t>(interleaved.size() / channels);
  if (sf_writef_float(file.get(), interleaved.data(), frames) != frames) {
    throw Error(ErrorKind::kIo,
                "audio file '" + path + "': write failed: " + std::string(sf_strerror(file.get())));
  }
}

}  // namespace masr::audio

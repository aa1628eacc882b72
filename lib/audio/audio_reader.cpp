// lib/audio/audio_reader.cpp
// libsndfile decoding, down-mixing and validation; resampling is in resample.cpp.
#include "audio/audio_reader.h"

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "audio/ogg_opus.h"
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

// A whole audio file held in memory, read through libsndfile's virtual I/O.
struct MemoryFile {
  const std::string* bytes;
  sf_count_t position = 0;

  static MemoryFile& of(void* user) { return *static_cast<MemoryFile*>(user); }
  static sf_count_t length(void* user) { return static_cast<sf_count_t>(of(user).bytes->size()); }
  static sf_count_t seek(sf_count_t offset, int whence, void* user) {
    MemoryFile& f = of(user);
    const sf_count_t size = length(user);
    const sf_count_t base = whence == SEEK_CUR ? f.position : whence == SEEK_END ? size : 0;
    const sf_count_t target = base + offset;
    if (target < 0 || target > size) return -1;
    f.position = target;
    return f.position;
  }
  static sf_count_t read(void* out, sf_count_t count, void* user) {
    MemoryFile& f = of(user);
    const sf_count_t n = std::max<sf_count_t>(0, std::min(count, length(user) - f.position));
    std::memcpy(out, f.bytes->data() + f.position, static_cast<size_t>(n));
    f.position += n;
    return n;
  }
  static sf_count_t write(const void*, sf_count_t, void*) { return 0; }
  static sf_count_t tell(void* user) { return of(user).position; }
};

SF_VIRTUAL_IO memory_io() {
  SF_VIRTUAL_IO io{};
  io.get_filelen = MemoryFile::length;
  io.seek = MemoryFile::seek;
  io.read = MemoryFile::read;
  io.write = MemoryFile::write;
  io.tell = MemoryFile::tell;
  return io;
}

// A file on disk (bytes null: `name` is its path) or in memory (`name` is how messages call it).
// An open SNDFILE reads through `memory`, so the Source must outlive it.
struct Source {
  std::string name;
  const std::string* bytes = nullptr;
  mutable MemoryFile memory{nullptr};
  mutable SF_VIRTUAL_IO io{};

  SNDFILE* open(SF_INFO& info) const {
    if (bytes == nullptr) return sf_open(name.c_str(), SFM_READ, &info);
    memory = MemoryFile{bytes};
    io = memory_io();
    return sf_open_virtual(&io, SFM_READ, &info, &memory);
  }
};

// The file's size in bytes (0 when unknown).
uint64_t byte_size(const Source& source) {
  if (source.bytes != nullptr) return source.bytes->size();
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(source.name, error);
  return error ? 0 : static_cast<uint64_t>(size);
}

// Uncompressed PCM holds a sample in 1 to 8 bytes; a compressed format at most ~6,000 samples per
// byte (FLAC's constant subframes of 65,535 samples), so 16,384 per byte is beyond any of them.
double max_samples_per_byte(int format) {
  // FLAC reports its samples' width as a PCM subtype but compresses them.
  if ((format & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC) return 16384.0;
  switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8:
    case SF_FORMAT_PCM_U8:
    case SF_FORMAT_ULAW:
    case SF_FORMAT_ALAW:
      return 1.0;
    case SF_FORMAT_PCM_16:
    case SF_FORMAT_PCM_24:
    case SF_FORMAT_PCM_32:
    case SF_FORMAT_FLOAT:
    case SF_FORMAT_DOUBLE:
      return 0.5;
    default:
      return 16384.0;
  }
}

// A damaged header can announce any rate and length, and the resampler would turn 900 bytes at
// "1 Hz" into 15 minutes of audio; refuse what no real recording holds.
void check_header_sense(const Source& source, const SF_INFO& info) {
  if (info.samplerate < kMinSampleRate || info.samplerate > kMaxSampleRate) {
    fail(source.name, "the header's sample rate of " + std::to_string(info.samplerate) +
                          " Hz is outside what audio uses (" + std::to_string(kMinSampleRate) +
                          " to " + std::to_string(kMaxSampleRate) + " Hz): a damaged header");
  }
  const uint64_t bytes = byte_size(source);
  const double max_samples = static_cast<double>(bytes) * max_samples_per_byte(info.format);
  const double samples = static_cast<double>(info.frames) * info.channels;
  if (bytes > 0 && samples > max_samples) {
    std::ostringstream reason;
    reason << "the header announces " << info.frames << " frames of " << info.channels
           << " channel(s), more than its " << bytes << " bytes can hold: a damaged header";
    fail(source.name, reason.str());
  }
}

// Opens the file and checks what the header promises. libsndfile accepts a WAV whose data chunk
// is longer than the file by shortening it and noting "data : N (should be M)" in its log; that
// file was cut off, so we refuse it rather than silently decoding a fragment.
SndfilePtr open_checked(const Source& source, SF_INFO& info) {
  const std::string& path = source.name;
  info = SF_INFO{};
  SndfilePtr file(source.open(info));
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
    // A WAV written to a pipe (ffmpeg -f wav -) cannot seek back to fill in its sizes and leaves
    // 0xFFFFFFFF ("unknown"): on stdin the data runs to the end of the stream.
    const bool streamed = source.bytes != nullptr && line.find(" 4294967295 ") != std::string::npos;
    if (data_chunk && !streamed && line.find("should be") != std::string::npos) {
      fail(path, "truncated: the header announces more audio than the file holds (" + line + ")");
    }
  }
  if (info.channels < 1) fail(path, "the header declares no channels");
  if (info.samplerate < 1) fail(path, "the header declares no sample rate");
  if (info.frames <= 0) fail(path, "empty: it holds no audio samples");
  check_header_sense(source, info);
  return file;
}

AudioInfo probe(const Source& source) {
  SF_INFO sf{};
  SndfilePtr file = open_checked(source, sf);
  AudioInfo info;
  info.frames = sf.frames;
  info.sample_rate = sf.samplerate;
  info.channels = sf.channels;
  info.format = format_name(sf.format);
  return info;
}

// Averages the channels to mono (in double, so 8 channels lose nothing), refuses NaN/Inf, and
// resamples to target_rate (<= 0: keep the file's rate).
Audio to_mono(const std::string& path, const std::vector<float>& interleaved, int channels,
              int sample_rate, int target_rate) {
  const size_t frames = interleaved.size() / static_cast<size_t>(channels);
  Audio audio;
  audio.sample_rate = sample_rate;
  audio.samples.resize(frames);
  for (size_t i = 0; i < frames; ++i) {
    double sum = 0.0;
    for (int c = 0; c < channels; ++c) {
      const float v = interleaved[i * channels + c];
      if (!std::isfinite(v)) {
        std::ostringstream reason;
        reason << "sample " << i << " of channel " << c << " is " << v << "; audio must be finite";
        fail(path, reason.str());
      }
      sum += v;
    }
    audio.samples[i] = static_cast<float>(sum / channels);
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

// Ogg Opus with one stream goes through decode_ogg_opus (ogg_opus.h says why); nullopt for other
// files, and for Opus files it leaves to libsndfile.
std::optional<DecodedAudio> try_ogg_opus(const Source& source) {
  char head[64];
  if (source.bytes != nullptr) {
    if (!looks_like_ogg_opus(source.bytes->data(), source.bytes->size())) return std::nullopt;
    return decode_ogg_opus(*source.bytes);
  }
  std::ifstream in(source.name, std::ios::binary);
  if (!in.read(head, sizeof(head)) || !looks_like_ogg_opus(head, sizeof(head))) {
    return std::nullopt;
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size <= 0) return std::nullopt;
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) return std::nullopt;
  return decode_ogg_opus(bytes);
}

Audio read(const Source& source, int target_rate) {
  const std::string& path = source.name;
  if (std::optional<DecodedAudio> opus = try_ogg_opus(source)) {
    return to_mono(path, opus->interleaved, opus->channels, opus->sample_rate, target_rate);
  }
  SF_INFO sf{};
  SndfilePtr file = open_checked(source, sf);
  const int channels = sf.channels;
  const sf_count_t frames = sf.frames;
  // Read in blocks rather than allocating what the header promises: a damaged MPEG or FLAC header
  // can announce 2^62 frames, and that is a clear error below, not an allocation failure.
  constexpr sf_count_t kBlockFrames = 1 << 16;
  std::vector<float> interleaved;
  interleaved.reserve(static_cast<size_t>(std::min<sf_count_t>(frames, kBlockFrames * 64)) * channels);
  sf_count_t got = 0;
  while (got < frames) {
    const sf_count_t want = std::min(kBlockFrames, frames - got);
    interleaved.resize(static_cast<size_t>(got + want) * channels);
    const sf_count_t n = sf_readf_float(file.get(), interleaved.data() + got * channels, want);
    if (n <= 0) break;
    got += n;
  }
  interleaved.resize(static_cast<size_t>(got) * channels);
  if (got < frames) {
    std::ostringstream reason;
    reason << "truncated or corrupt: decoded " << got << " of " << frames << " frames";
    if (sf_error(file.get()) != SF_ERR_NO_ERROR) reason << " (" << sf_strerror(file.get()) << ")";
    fail(path, reason.str());
  }
  return to_mono(path, interleaved, channels, sf.samplerate, target_rate);
}

}  // namespace

AudioInfo probe_audio(const std::string& path) { return probe(Source{path}); }

Audio read_audio(const std::string& path, int target_rate) {
  return read(Source{path}, target_rate);
}

AudioInfo probe_audio_bytes(const std::string& bytes, const std::string& name) {
  return probe(Source{name, &bytes});
}

Audio read_audio_bytes(const std::string& bytes, const std::string& name, int target_rate) {
  return read(Source{name, &bytes}, target_rate);
}

bool has_audio_header(const std::string& bytes) {
  const Source source{"", &bytes};  // outlives the file, which reads through it
  SF_INFO info{};
  SndfilePtr file(source.open(info));
  return file != nullptr;
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

// lib/decode/sample_stream.cpp
// Block-wise reading with libsndfile and streaming resampling with libsoxr.
#include "decode/sample_stream.h"

#include <sndfile.h>
#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "audio/audio_reader.h"
#include "core/error.h"

namespace masr::decode {

size_t MemorySampleStream::read(std::vector<float>& out, size_t count) {
  if (position_ >= samples_.size()) return 0;
  const size_t n = std::min(count, samples_.size() - position_);
  out.insert(out.end(), samples_.begin() + static_cast<std::ptrdiff_t>(position_),
             samples_.begin() + static_cast<std::ptrdiff_t>(position_ + n));
  position_ += n;
  if (position_ == samples_.size()) std::vector<float>().swap(samples_);  // done: release
  return n;
}

namespace {

constexpr sf_count_t kBlockFrames = 1 << 15;  // 2 s at 16 kHz per read

class SndfileSampleStream : public SampleStream {
 public:
  SndfileSampleStream(std::string path, SNDFILE* file, const SF_INFO& info, int rate)
      : path_(std::move(path)), file_(file), info_(info), rate_(rate) {
    if (info_.samplerate != rate_) {
      soxr_error_t error = nullptr;
      const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
      const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
      resampler_ = soxr_create(info_.samplerate, rate_, 1, &error, &io, &quality, nullptr);
      if (error != nullptr) {
        sf_close(file_);
        throw Error(ErrorKind::kInternal, "resample " + std::to_string(info_.samplerate) + " -> " +
                                              std::to_string(rate_) + " Hz failed: " + error);
      }
    }
  }
  ~SndfileSampleStream() override {
    if (resampler_ != nullptr) soxr_delete(resampler_);
    sf_close(file_);
  }
  SndfileSampleStream(const SndfileSampleStream&) = delete;
  SndfileSampleStream& operator=(const SndfileSampleStream&) = delete;

  size_t read(std::vector<float>& out, size_t count) override {
    const size_t before = out.size();
    while (out.size() - before < count && !(flushed_ && pending_.empty())) {
      if (pending_.empty()) refill();
      const size_t n = std::min(count - (out.size() - before), pending_.size() - pending_at_);
      out.insert(out.end(), pending_.begin() + static_cast<std::ptrdiff_t>(pending_at_),
                 pending_.begin() + static_cast<std::ptrdiff_t>(pending_at_ + n));
      pending_at_ += n;
      if (pending_at_ == pending_.size()) pending_.clear(), pending_at_ = 0;
    }
    return out.size() - before;
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const {
    throw_input_error("audio file '" + path_ + "': " + reason);
  }

  // Next block of mono samples at the file's rate (empty at the end of the data).
  std::vector<float> next_block() {
    const sf_count_t want = std::min(kBlockFrames, info_.frames - frames_read_);
    if (want <= 0) return {};
    interleaved_.resize(static_cast<size_t>(want) * static_cast<size_t>(info_.channels));
    const sf_count_t got = sf_readf_float(file_, interleaved_.data(), want);
    if (got != want) {
      std::ostringstream reason;
      reason << "truncated: only " << frames_read_ + std::max<sf_count_t>(got, 0) << " of the "
             << info_.frames << " frames the header announces could be read";
      fail(reason.str());
    }
    std::vector<float> mono(static_cast<size_t>(got));
    for (sf_count_t i = 0; i < got; ++i) {
      double sum = 0.0;
      for (int c = 0; c < info_.channels; ++c) {
        const float v = interleaved_[static_cast<size_t>(i * info_.channels + c)];
        if (!std::isfinite(v)) {
          std::ostringstream reason;
          reason << "sample " << frames_read_ + i << " of channel " << c << " is " << v
                 << "; audio must be finite";
          fail(reason.str());
        }
        sum += v;
      }
      mono[static_cast<size_t>(i)] = static_cast<float>(sum / info_.channels);
    }
    frames_read_ += got;
    return mono;
  }

  // Fills pending_ with the next converted samples, or sets flushed_ at the end.
  void refill() {
    while (pending_.empty() && !flushed_) {
      std::vector<float> block = next_block();
      if (resampler_ == nullptr) {
        if (block.empty()) flushed_ = true;
        pending_ = std::move(block);
        continue;
      }
      // Output room for the block's converted length plus the filter's delayed tail.
      const double ratio = static_cast<double>(rate_) / info_.samplerate;
      pending_.resize(static_cast<size_t>(std::ceil(block.size() * ratio)) + 1024);
      size_t used = 0, produced = 0;
      const soxr_error_t error =
          soxr_process(resampler_, block.empty() ? nullptr : block.data(), block.size(), &used,
                       pending_.data(), pending_.size(), &produced);
      if (error != nullptr) {
        throw Error(ErrorKind::kInternal, "audio file '" + path_ + "': resampling failed: " + error);
      }
      pending_.resize(produced);
      if (block.empty() && produced == 0) flushed_ = true;  // end of input, filter drained
    }
  }

  std::string path_;
  SNDFILE* file_;
  SF_INFO info_;
  int rate_;
  soxr_t resampler_ = nullptr;
  sf_count_t frames_read_ = 0;
  std::vector<float> interleaved_;
  std::vector<float> pending_;  // converted samples not yet handed out
  size_t pending_at_ = 0;
  bool flushed_ = false;
};

}  // namespace

std::unique_ptr<SampleStream> open_file_sample_stream(const std::string& path, int sample_rate) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  if (file == nullptr) return nullptr;
  const int container = info.format & SF_FORMAT_TYPEMASK;
  const bool whole_only = container == SF_FORMAT_OGG
#ifdef SF_FORMAT_MPEG
                          || container == SF_FORMAT_MPEG
#endif
      ;
  if (whole_only || info.channels < 1 || info.samplerate < 1 || info.frames <= 0 ||
      sample_rate < 1) {
    sf_close(file);
    return nullptr;
  }
  try {  // what read_audio refuses is refused here too: truncated files, damaged headers
    audio::probe_audio(path);
  } catch (...) {
    sf_close(file);
    throw;
  }
  return std::make_unique<SndfileSampleStream>(path, file, info, sample_rate);
}

}  // namespace masr::decode

// lib/features/streaming_fbank.cpp
// Frames of a growing signal through the offline Fbank itself: each batch of complete frames is
// cut out of the padded signal so that Fbank's own centre padding falls on frames that are dropped.
#include "features/streaming_fbank.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace masr::features {
namespace {

FbankConfig without_floor(FbankConfig config) {
  config.top_db = 0.0;
  return config;
}

}  // namespace

StreamingFbank::StreamingFbank(const FbankConfig& config)
    : raw_(without_floor(config)),
      hop_(config.hop_samples()),
      pad_(config.n_fft / 2),
      n_fft_(config.n_fft),
      padded_(static_cast<size_t>(config.n_fft / 2), 0.0f) {}

void StreamingFbank::accept(const float* samples, size_t n) {
  if (finished_) return;
  padded_.insert(padded_.end(), samples, samples + n);
  samples_ += static_cast<int64_t>(n);
}

void StreamingFbank::finish() {
  if (finished_) return;
  padded_.insert(padded_.end(), static_cast<size_t>(pad_), 0.0f);
  finished_ = true;
}

int64_t StreamingFbank::frames_available() const {
  if (finished_) {
    return samples_ >= raw_.config().win_samples() ? raw_.config().num_frames(samples_) : 0;
  }
  // Frame f is complete when the padded signal holds f*hop + n_fft values.
  const int64_t length = padded_start_ + static_cast<int64_t>(padded_.size());
  return length < n_fft_ ? 0 : (length - n_fft_) / hop_ + 1;
}

at::Tensor StreamingFbank::take_frames() {
  const int64_t first = next_frame_, count = frames_available() - first;
  if (count <= 0) return at::empty({0, raw_.config().n_mels}, at::kFloat);
  // Fbank pads pad_ zeros itself; its frame g covers window[g*hop - pad, g*hop + pad). Starting
  // the window `lead` frames early, frames lead.. touch none of Fbank's own padding.
  const int64_t lead = (pad_ + hop_ - 1) / hop_;
  const int64_t begin = (first - lead) * hop_ + pad_;  // in the padded signal; < 0 at the start
  const int64_t end = (first + count - 1) * hop_ + n_fft_;
  std::vector<float> window(static_cast<size_t>(end - begin), 0.0f);
  const int64_t from = std::max(begin, padded_start_);
  std::copy(padded_.begin() + (from - padded_start_), padded_.begin() + (end - padded_start_),
            window.begin() + (from - begin));
  const at::Tensor frames = raw_(at::from_blob(window.data(), {1, end - begin}, at::kFloat))
                                .narrow(1, lead, count)
                                .squeeze(0)
                                .clone();
  next_frame_ += count;
  // Keep what the next frame's window reaches back to.
  const int64_t keep_from = std::max<int64_t>(padded_start_, (next_frame_ - lead) * hop_ + pad_);
  padded_.erase(padded_.begin(), padded_.begin() + (keep_from - padded_start_));
  padded_start_ = keep_from;
  return frames;
}

}  // namespace masr::features

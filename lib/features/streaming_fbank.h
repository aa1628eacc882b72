// lib/features/streaming_fbank.h
// SpeechBrain's Fbank (features/fbank.h) computed as samples arrive: each frame as soon as its
// 25 ms window is complete, the first frames over the STFT's centre padding (n_fft/2 zeros before
// the first sample) and, once the input is finished, the last ones over the same zeros after it.
// The frames are in dB *before* the per-utterance top_db floor, which needs the whole utterance's
// maximum (models/asr_stream.h applies it).
#pragma once

#include <ATen/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "features/fbank.h"

namespace masr::features {

class StreamingFbank {
 public:
  explicit StreamingFbank(const FbankConfig& config);

  // samples: n floats at config.sample_rate.
  void accept(const float* samples, size_t n);
  // No more samples: the frames that reach past the last sample are completed with zeros. An
  // input shorter than one window (25 ms) gives no frames at all (offline it is an error).
  void finish();
  bool finished() const { return finished_; }

  // Every frame complete since the last call, in order: (n, n_mels) float dB without the floor;
  // frames_emitted() counts them. Frame f covers samples [f*hop - n_fft/2, f*hop + n_fft/2).
  at::Tensor take_frames();
  int64_t frames_emitted() const { return next_frame_; }
  // Frames that will be complete once `samples` more samples arrive (input not finished).
  int64_t frames_available() const;
  int64_t samples() const { return samples_; }
  const FbankConfig& config() const { return raw_.config(); }

 private:
  Fbank raw_;                // the same Fbank with top_db 0: no floor
  int64_t hop_ = 0, pad_ = 0, n_fft_ = 0;
  std::vector<float> padded_;  // the padded signal (pad_ zeros, samples, pad_ zeros at the end)
  int64_t padded_start_ = 0;   // index in the padded signal of padded_[0]
  int64_t samples_ = 0;
  int64_t next_frame_ = 0;
  bool finished_ = false;
};

}  // namespace masr::features

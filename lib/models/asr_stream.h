// lib/models/asr_stream.h
// One stream of audio through a causal ConMamba AsrModel, incrementally and exactly: Fbank frames
// as their windows complete, the 80 dB floor, global normalization, the CNN front end (holding back
// the frames its receptive field needs), the input projection and the encoder layers with their
// caches (models/conmamba_stream.h). The model is shared and only read; all state is here.
#pragma once

#include <ATen/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "features/streaming_fbank.h"
#include "models/conmamba_stream.h"

namespace masr::models {

class AsrModel;

// SpeechBrain floors every feature at (the utterance's loudest value - top_db), a maximum over the
// whole utterance. exact: a louder frame that raises the floor above a value already used makes
// the stream replay its stored dB frames through everything after the Fbank, so the final frames
// equal the offline ones (cost: the utterance's dB frames, 32 kB per second, and a replay per new
// loudest frame, mostly in the first syllables). running: each frame is floored at the maximum so
// far (no replay, constant memory; frames before the loudest one differ slightly from offline).
enum class FloorMode { kExact, kRunning };

class AsrStream {
 public:
  // Throws a config error for a model that cannot stream (models/conmamba_stream.h says which),
  // or whose normalization is not global with statistics.
  AsrStream(std::shared_ptr<AsrModel> model, FloorMode floor = FloorMode::kExact);

  // samples: n floats at the model's sample rate.
  void accept(const float* samples, size_t n);
  // No more samples: the last frames are completed as the offline path pads them.
  void finish();
  bool finished() const { return fbank_.finished(); }

  // New encoder frames since the last call: out (n, d_model) for frames [first, first + n). After
  // a replay, first is 0 and every frame so far comes again (an earlier result is superseded).
  struct Frames {
    int64_t first = 0;
    at::Tensor out;
  };
  Frames advance();
  // Whether advance() would produce a frame (or has work left after finish()).
  bool ready() const;

  int64_t encoder_frames() const { return encoded_; }
  int64_t samples() const { return fbank_.samples(); }
  int64_t replays() const { return replays_; }
  int64_t feature_frames() const { return fbank_.frames_emitted(); }

 private:
  // Floor, normalize, front end, encoder over dB frames raw (n, n_mels); finishing: flush the end.
  at::Tensor encode(const at::Tensor& raw, double floor, bool finishing);
  at::Tensor front_end(bool finishing);  // (1, m, 640) newly complete front-end frames
  void restart_encoder();
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();

  std::shared_ptr<AsrModel> model_;
  CausalConmamba parts_;
  features::StreamingFbank fbank_;
  FloorMode floor_mode_;
  double top_db_ = 0.0;
  at::Tensor mean_, std_;  // global normalization statistics (n_mels)
  int64_t stride_ = 1, before_ = 0, after_ = 0;  // front end geometry (nn/conv_frontend.h)

  // Floor bookkeeping: the loudest dB value, the floor the processed frames used, their least
  // raw value, and (exact mode) every raw frame of the utterance.
  double loudest_ = -kInfinity, used_floor_ = -kInfinity, least_used_ = kInfinity;
  std::vector<at::Tensor> history_;

  at::Tensor features_;  // (1, t, n_mels) normalized frames from feature index features_start_
  int64_t features_start_ = 0, features_total_ = 0;
  int64_t front_end_next_ = 0;  // the next front-end output frame
  ConmambaStreamState state_;
  int64_t encoded_ = 0;
  int64_t replays_ = 0;
  bool flushed_ = false;
};

}  // namespace masr::models

// lib/models/asr_stream.cpp
// The stages of AsrModel::encode_audio made incremental; see asr_stream.h for the floor replay.
#include "models/asr_stream.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "core/error.h"
#include "models/asr_model.h"
#include "models/conmamba_encoder.h"
#include "models/transformer_asr.h"
#include "nn/conv_frontend.h"
#include "nn/wrappers.h"

namespace masr::models {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

AsrStream::AsrStream(std::shared_ptr<AsrModel> model, FloorMode floor)
    : model_(std::move(model)),
      parts_(causal_conmamba(model_->transformer())),
      fbank_(model_->fbank().config()),
      floor_mode_(floor),
      top_db_(model_->fbank().config().top_db) {
  const auto& norm = model_->normalize();
  if (norm.config().norm_type != "global") {
    throw_config_error("streaming: the model normalizes features by '" + norm.config().norm_type +
                       "' statistics, which need the whole utterance; only global statistics "
                       "stream (decode it with `mamba-asr decode`)");
  }
  if (!norm.has_statistics()) {
    throw_config_error("streaming: the model's normalization statistics are empty (an untrained "
                       "model); train or load a checkpoint first");
  }
  mean_ = norm.glob_mean().to(at::kFloat);
  std_ = norm.glob_std().to(at::kFloat);
  stride_ = model_->cnn().time_stride();
  before_ = model_->cnn().context_before();
  after_ = model_->cnn().context_after();
  restart_encoder();
}

void AsrStream::restart_encoder() {
  c10::InferenceMode inference;
  features_ = at::empty({1, 0, fbank_.config().n_mels}, at::kFloat);
  features_start_ = features_total_ = front_end_next_ = encoded_ = 0;
  state_ = conmamba_initial_state(*parts_.encoder, 1, at::TensorOptions(model_->device()));
}

void AsrStream::accept(const float* samples, size_t n) {
  if (fbank_.finished()) {
    throw_input_error("streaming: audio given after input_finished(); reset() the stream first");
  }
  fbank_.accept(samples, n);
}

void AsrStream::finish() { fbank_.finish(); }

bool AsrStream::ready() const {
  if (fbank_.finished()) return !flushed_;
  const int64_t frames = fbank_.frames_available();
  // The next encoder frame needs front-end input up to front_end_next_ * stride + after.
  return frames > front_end_next_ * stride_ + after_;
}

at::Tensor AsrStream::front_end(bool finishing) {
  // Less than one window in all: offline this is an error; a stream has nothing to say.
  if (finishing && fbank_.frames_available() == 0) return {};
  const int64_t end = finishing ? model_->cnn()
                                      .output_lengths(at::full({1}, features_total_, at::kLong))
                                      .item<int64_t>()
                                : (features_total_ - 1 - after_ < 0
                                       ? 0
                                       : (features_total_ - 1 - after_) / stride_ + 1);
  const int64_t count = end - front_end_next_;
  if (count <= 0 || features_total_ == 0) return {};
  // A window starting on a multiple of the stride keeps the outputs aligned; the outputs whose
  // receptive field crosses its edges (reflected there) are not taken, except at the utterance's
  // true start and end, where the reflection is the offline one.
  const int64_t start = std::max<int64_t>(0, front_end_next_ - ceil_div(before_, stride_)) * stride_;
  const int64_t stop = finishing ? features_total_ : (end - 1) * stride_ + after_ + 1;
  const at::Tensor window = features_.narrow(1, start - features_start_, stop - start);
  at::Tensor out = model_->cnn().forward(window).narrow(1, front_end_next_ - start / stride_, count);
  front_end_next_ = end;
  const int64_t keep =
      std::max<int64_t>(0, front_end_next_ - ceil_div(before_, stride_)) * stride_;
  features_ = features_.narrow(1, keep - features_start_, features_total_ - keep);
  features_start_ = keep;
  return out.reshape({1, count, out.size(2) * out.size(3)});
}

at::Tensor AsrStream::encode(const at::Tensor& raw, double floor, bool finishing) {
  at::Tensor x = raw;
  if (top_db_ > 0) x = at::clamp_min(x, floor);
  x = ((x - mean_) / std_).unsqueeze(0).to(model_->device());
  features_ = at::cat({features_, x}, 1);
  features_total_ += raw.size(0);
  const at::Tensor front = front_end(finishing);
  if (!front.defined()) return {};
  const at::Tensor out =
      conmamba_stream_forward(*parts_.encoder, parts_.src_linear->forward(front), state_);
  encoded_ += out.size(1);
  return out.squeeze(0);
}

AsrStream::Frames AsrStream::advance() {
  c10::InferenceMode inference;
  const bool finishing = fbank_.finished() && !flushed_;
  const at::Tensor raw = fbank_.take_frames();
  Frames result;
  result.first = encoded_;
  if (raw.size(0) == 0 && !finishing) return result;
  double floor = used_floor_;
  if (top_db_ > 0 && raw.size(0) > 0) {
    if (floor_mode_ == FloorMode::kRunning) {
      // Frame by frame: each at the loudest value up to and including it.
      const at::Tensor peaks = std::get<0>(raw.amax(1).cummax(0)).clamp_min(loudest_);
      loudest_ = peaks[-1].item<double>();
      const at::Tensor floors = (peaks.to(at::kDouble) - top_db_).to(at::kFloat).unsqueeze(1);
      result.out = encode(at::maximum(raw, floors), -kInfinity, finishing);
      flushed_ = finishing;
      return result;
    }
    loudest_ = std::max(loudest_, raw.max().item<double>());
    floor = loudest_ - top_db_;
    history_.push_back(raw);
  }
  if (floor > used_floor_ && least_used_ < floor) {  // a value already used is now floored
    restart_encoder();
    ++replays_;
    result.first = 0;
    result.out = encode(at::cat(history_, 0), floor, finishing);
  } else {
    result.out = encode(raw, floor, finishing);
  }
  used_floor_ = floor;
  if (raw.size(0) > 0) least_used_ = std::min(least_used_, raw.min().item<double>());
  flushed_ = finishing;
  return result;
}

}  // namespace masr::models

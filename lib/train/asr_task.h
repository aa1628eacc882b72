// lib/train/asr_task.h
// The modules of an ASR hparams file (compute_features, normalize, fea_augment, CNN, Transformer,
// ctc_lin, seq_lin, model) and the recipes' forward pass and loss: train_CTC.py for CTC and
// train_S2S.py for S2S (reference §1.1, §2.6).
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "features/augment/interface.h"
#include "features/fbank.h"
#include "features/input_normalization.h"
#include "hparams/hparams.h"
#include "models/transformer_asr.h"
#include "nn/conv_frontend.h"
#include "nn/wrappers.h"
#include "train/cuda_graph_step.h"
#include "train/losses.h"

namespace masr::train {

enum class TaskKind { kCtc, kS2S };

// A padded batch as the recipes' PaddedBatch gives it.
struct AsrBatch {
  std::vector<std::string> ids;
  std::vector<std::string> words;         // reference transcripts
  at::Tensor wav, wav_rel;                // (B, T) float, (B) relative lengths
  at::Tensor tokens, tokens_rel;          // (B, U) int64 padded with 0, (B)
  at::Tensor tokens_bos;                  // (B, U+1): [bos] + tokens
  at::Tensor tokens_eos, tokens_eos_rel;  // (B, U+1): tokens + [eos]
  double audio_seconds = 0.0;
  // CPU copies of the relative lengths, kept by to() so that lengths can be computed and checked
  // on the host without reading the device back in the middle of a step.
  at::Tensor host_wav_rel, host_tokens_rel;
  // The batch on `device`: CPU-to-GPU copies go through pinned memory without stopping the host
  // (features/device_copy.h).
  AsrBatch to(const at::Device& device) const;
  // The tensors in page-locked host memory (LibTorch with CUDA only), so that to() queues their
  // copies to the GPU without first staging them on the calling thread.
  void pin_host_memory();
  // The batch padded further, to `samples` audio samples (zeros) and `tokens` tokens (tokens
  // with `pad`, the BOS/EOS sequences to tokens + 1), relative lengths recomputed: the batch that
  // collate would have made with those padded lengths. Neither may be shorter than the batch's.
  AsrBatch padded_to(int64_t samples, int64_t tokens, int64_t pad) const;
  // host_wav_rel / host_tokens_rel, or CPU copies of wav_rel / tokens_rel when to() did not run.
  at::Tensor wav_rel_on_host() const;
  at::Tensor tokens_rel_on_host() const;
};

struct LossOptions {
  double ctc_weight = 0.3;  // S2S only
  double label_smoothing = 0.0;
  int64_t blank_index = 0;
  int64_t pad_index = 0;
  LossReduction reduction = LossReduction::kBatchMean;
};

struct TrainConfig;
// The loss settings of a training config (ctc_weight, label_smoothing, blank/pad, reduction).
LossOptions loss_options_of(const TrainConfig& config);

struct ForwardResult {
  at::Tensor loss;    // scalar
  at::Tensor p_ctc;   // (B', T'', V) log-probabilities
  at::Tensor p_seq;   // (B', U+1, V), S2S only
  at::Tensor rel;     // (B') relative lengths after augmentation, on the CPU
  at::Tensor source;  // (B') input row of each output row (identity without augmentation), CPU
};

// What a training step's model part reads of a batch, on the model's device: the model's loss
// is a function of these tensors and their shapes alone (no host value of the batch reaches a
// kernel), so a CUDA graph captured for one batch replays for any other of the same shapes
// (train/cuda_graph_step.h).
struct ModelInputs {
  at::Tensor feats;           // (B, T, F) float32: normalized, augmented features
  at::Tensor lengths;         // (2, B) int64: each utterance's feature frames; its CTC targets
  at::Tensor tokens;          // (B, U) int64, the rows picked by the augmentation's row map
  at::Tensor tokens_bos;      // (B, U+1) int64, S2S only
  at::Tensor tokens_eos;      // (B, U+1) int64, S2S only
  at::Tensor tokens_eos_rel;  // (B) relative lengths of tokens_eos, S2S only

  // The defined tensors in this order, and back (a CTC task's list has three).
  std::vector<at::Tensor> list() const;
  static ModelInputs from_list(const std::vector<at::Tensor>& tensors);
  // A list of the given shapes that a step runs on (an InputsLike for CUDA-graph captures):
  // zero features, full lengths, token 1 everywhere, relative lengths 1.
  static std::vector<at::Tensor> like(const std::vector<InputSpec>& specs,
                                      const at::Device& device);
  // The shapes of a list with `frames` feature frames and `tokens` tokens per row, all else as
  // `specs` (a list's shapes) has it.
  static std::vector<InputSpec> resized(std::vector<InputSpec> specs, int64_t frames,
                                        int64_t tokens);
  // The (frames, tokens) of the smallest shape in `held` that a list of shapes `wanted` can be
  // padded into: the same but for at least as many frames and tokens, and at most
  // `max_frames_ratio` times the frames and `max_tokens_ratio` times the BOS/EOS sequences'
  // length (fewest frames first, then fewest tokens). None if no shape qualifies.
  static std::optional<std::pair<int64_t, int64_t>> padding_into(
      const std::vector<InputSpec>& wanted, const std::vector<std::vector<InputSpec>>& held,
      double max_frames_ratio, double max_tokens_ratio);
};

// A batch made ready for the model: ModelInputs, and the host-side lengths and row map.
struct PreparedBatch {
  ModelInputs inputs;
  at::Tensor rel;     // (B') relative lengths of the encoder's frames, on the CPU
  at::Tensor source;  // (B') input row of each output row, CPU
  int64_t enc_frames = 0;  // the encoder's frames for the padded batch (rel's denominator)
};

struct ModelLoss {
  at::Tensor loss;   // scalar
  at::Tensor p_ctc;  // (B', T'', V) log-probabilities
  at::Tensor p_seq;  // (B', U+1, V), S2S only
};

class AsrTask {
 public:
  // Reads the modules from resolved hparams; a missing or mistyped entry is a config error naming
  // the key. S2S when the file has `seq_lin`, CTC otherwise.
  explicit AsrTask(const hparams::Hparams& hp);

  TaskKind kind() const { return kind_; }
  // The module whose state is the model checkpoint (hparams `model`, a ModuleList).
  torch::nn::Module& model() { return *model_; }
  const std::shared_ptr<torch::nn::Module>& model_ptr() const { return model_; }
  features::InputNormalizationImpl& normalizer() { return *normalizer_; }
  std::vector<at::Tensor> parameters() const { return model_->parameters(); }
  void train(bool on);
  void to(const at::Device& device);
  // The training-time augmentations for a run's summary line: "; fea_augment: ..." and
  // "; wav_augment: ..." as each describes itself, empty without them.
  std::string augmentation_summary() const;

  // The training/validation forward pass and loss. `generator` (training only) drives the
  // augmentation; `epoch` gates the normalization statistics (update_until_epoch). Features,
  // normalization and augmentation run on the batch's device in float32 (autocast is suspended
  // for them); lengths are computed on the host, so a CUDA step reads nothing back from the GPU.
  // `optimizer_steps` (the steps done before this batch) holds fea_augment back while it is at
  // most the file's `augment_warmup` (SpeechBrain's recipes: `self.optimizer_step >
  // augment_warmup`); without that key fea_augment runs from the first batch, as in v1.0.0.
  ForwardResult forward(const AsrBatch& batch, bool training, int64_t epoch,
                        at::Generator* generator, const LossOptions& options,
                        int64_t optimizer_steps = std::numeric_limits<int64_t>::max());

  // forward() in two parts. prepare: the augmentation, features, normalization (its
  // statistics update) and lengths, which read host values of the batch and draw on
  // `generator`; model_loss: the CNN, encoder, decoder and losses on the device tensors alone.
  PreparedBatch prepare(const AsrBatch& batch, bool training, int64_t epoch,
                        at::Generator* generator,
                        int64_t optimizer_steps = std::numeric_limits<int64_t>::max());
  ModelLoss model_loss(const ModelInputs& inputs, const LossOptions& options);
  // model_loss's loss as a function of ModelInputs::list() (what GraphedSteps runs).
  std::function<at::Tensor(const std::vector<at::Tensor>&)> loss_of_inputs(
      const LossOptions& options);

  // The shapes of ModelInputs::list() for a batch of `batch` utterances padded to `samples` and
  // `tokens` (AsrBatch::tokens' width), when the training augmentation keeps a batch's rows and
  // length (it has no wav_augment; fea_augment is checked on the actual inputs: AsrTrainTask);
  // empty otherwise.
  std::vector<InputSpec> input_specs(int64_t batch, int64_t samples, int64_t tokens) const;
  // The fewest samples that give `frames` feature frames.
  int64_t samples_for_frames(int64_t frames) const;

  // The file's augment_warmup, or -1 without one.
  int64_t augment_warmup() const { return augment_warmup_; }

  // Greedy CTC decoding (SB's ctc_greedy_decode): per utterance, argmax over the valid frames
  // (rel rounded as SpeechBrain does), repeats collapsed, blanks removed: decode's
  // ctc_greedy_search, the one greedy CTC of the toolkit.
  static std::vector<std::vector<int>> ctc_greedy(const at::Tensor& p_ctc, const at::Tensor& rel,
                                                  int64_t blank);

 private:
  TaskKind kind_ = TaskKind::kCtc;
  std::shared_ptr<features::Fbank> fbank_;
  std::shared_ptr<features::InputNormalizationImpl> normalizer_;
  std::shared_ptr<const features::Augmentation> augment_;      // fea_augment; null: none
  std::shared_ptr<const features::Augmentation> wav_augment_;  // wav_augment; null: none
  int64_t augment_warmup_ = -1;  // augment_warmup; -1: none
  std::shared_ptr<nn::ConvolutionFrontEndImpl> cnn_;
  std::shared_ptr<models::TransformerASRImpl> transformer_;
  std::shared_ptr<nn::SbLinearImpl> ctc_lin_;
  std::shared_ptr<nn::SbLinearImpl> seq_lin_;
  std::shared_ptr<torch::nn::Module> model_;
  at::Device device_ = at::kCPU;
};

}  // namespace masr::train

// lib/models/asr_model.h
// The complete ASR model of a Mamba-ASR recipe (train_CTC.py / train_S2S.py): Fbank, global
// InputNormalization, CNN front end, TransformerASR, CTC head, optional attention-decoder head,
// tokenizer and special ids, as one object that training, decoding and checkpoints share.
#pragma once

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "features/fbank.h"
#include "features/input_normalization.h"
#include "hparams/hparams.h"

namespace torch::nn {
class Module;
}
namespace masr::nn {
struct ConvolutionFrontEndImpl;
struct SbLinearImpl;
}  // namespace masr::nn
namespace masr::text {
class Tokenizer;
}

namespace masr::models {

struct TransformerASRImpl;
struct DecoderState;

// The encoder output of a batch.
struct Encoded {
  at::Tensor out;      // (B, T', d_model) float; frames past `lengths` are unspecified
  at::Tensor lengths;  // (B) int64 valid encoder frames: round(rel_len * T') (torch.round)
};

// hparams keys read by AsrModel::from_hparams (SpeechBrain's names; docs/models.md):
//   compute_features  !new:speechbrain.lobes.features.Fbank              (required)
//   normalize         !new:speechbrain.processing.features.InputNormalization (required)
//   CNN               !new:...convolution.ConvolutionFrontEnd             (required)
//   Transformer       !new:modules.TransformerASR.TransformerASR          (required)
//   ctc_lin           !new:speechbrain.nnet.linear.Linear                  (required)
//   seq_lin           !new:speechbrain.nnet.linear.Linear   (required iff the Transformer has a
//                     decoder; then the model type is "s2s", otherwise "ctc")
//   blank_index (0), bos_index (1), eos_index (2), pad_index (0)          (optional ints)
//   tokenizer         a loaded tokenizer object (e.g. !new:speechbrain.tokenizers.SentencePiece
//                     ...), or
//   tokenizer_file    a path to a SentencePiece .model file               (both optional)
// The modules are shared with the hparams (so hparams' `model` ModuleList sees the same
// parameters), not copied.
//
// A model is shared read-only once loaded: searches keep their own state. The only mutations
// are training (parameters, and normalization statistics through features(update_norm=true)),
// train()/eval(), to(), quantize_int8() and set_tokenizer(), all before the model is shared
// across threads.
class AsrModel {
 public:
  static constexpr const char* kCtc = "ctc";
  static constexpr const char* kS2s = "s2s";

  // Builds from resolved hparams (keys above); throws a config error naming the missing or
  // mistyped key.
  static std::shared_ptr<AsrModel> from_hparams(const hparams::Hparams& hp);
  // Reads a checkpoint written by save() (lib/models/checkpoint.h describes the format); needs
  // no other file. Errors name the path and the reason (missing, truncated, corrupt, version,
  // state dict not matching the hparams).
  static std::shared_ptr<AsrModel> load(const std::string& path);
  // Imports a SpeechBrain / Mamba-ASR checkpoint folder (CKPT+...: model.ckpt, normalizer.ckpt)
  // built with `hparams_file` (with `overrides` applied, e.g. data_folder). The tokenizer comes
  // from `tokenizer_file` when given, else from the folder's tokenizer.ckpt when present, else
  // from the hparams. Unmapped or missing keys are an error listing them (speechbrain_import.cpp).
  static std::shared_ptr<AsrModel> import_speechbrain(
      const std::string& ckpt_folder, const std::string& hparams_file,
      const std::vector<std::pair<std::string, std::string>>& overrides = {},
      const std::string& tokenizer_file = "");

  // Copies the weights of a SpeechBrain / Mamba-ASR `model.ckpt` (the recipe's `model`
  // ModuleList state, as import_speechbrain maps it) into this model, built from `hp`; the
  // normalization statistics stay as they are. For starting a training run from upstream weights.
  void load_speechbrain_weights(const hparams::Hparams& hp, const std::string& model_ckpt);

  // Writes the model to `path` atomically (temp file in the same folder, fsync, rename).
  void save(const std::string& path) const;

  // wavs: (B, S) float waveforms at the Fbank's sample rate, zero-padded; rel_lens: (B) valid
  // fraction of S (undefined: all valid); epoch: SpeechBrain's epoch counter (1-based), used by
  // the normalization's update_until_epoch; update_norm: update the running statistics with this
  // batch (training), else only apply them. Returns normalized features (B, T, n_mels),
  // T = 1 + S / hop, on the model's device.
  at::Tensor features(const at::Tensor& wavs, const at::Tensor& rel_lens = {},
                      std::optional<int64_t> epoch = std::nullopt, bool update_norm = false);
  // feats: (B, T, n_mels); rel_lens: (B) relative lengths (undefined: all valid).
  // CNN then TransformerASR.encode.
  Encoded encode(const at::Tensor& feats, const at::Tensor& rel_lens = {});
  // Features and encoder of a padded batch, each utterance exactly as if it were decoded alone
  // (what decoding uses): wavs (B, S) zero-padded, samples (B) int64 valid samples per utterance
  // (CPU). Its feature frames are 1 + samples / hop with the dB floor over them alone, the front
  // end reflects it at its own end, and its encoder length follows from the convolutions, where
  // encode() rounds relative lengths as SpeechBrain's training does. Evaluation mode only.
  Encoded encode_audio(const at::Tensor& wavs, const at::Tensor& samples);
  // enc: (B, T', d) -> (B, T', V) log-probabilities of ctc_lin (blank = blank_index()).
  at::Tensor ctc_log_probs(const at::Tensor& enc);
  // enc: (B, T', d), enc_lens: (B) int64 or undefined, tokens_bos: (B, U) int64 ([bos] + tokens,
  // padded with pad_index()) -> (B, U, V) log-probabilities of seq_lin over the decoder output.
  // Throws a config error for a CTC model.
  at::Tensor decoder_log_probs(const at::Tensor& enc, const at::Tensor& enc_lens,
                               const at::Tensor& tokens_bos);
  // Incremental decoding (KV caches, recurrent Mamba states) of `beam` rows per utterance of enc.
  std::unique_ptr<DecoderState> start_decoding(const at::Tensor& enc, const at::Tensor& enc_lens,
                                               int64_t beam);
  // tokens: int64 (N) every row's next token (bos first) -> (N, V) log-probabilities of seq_lin,
  // equal to decoder_log_probs at that position.
  at::Tensor decoder_step_log_probs(const at::Tensor& tokens, DecoderState& state);

  // Every trainable parameter (CNN, Transformer, ctc_lin, seq_lin); the normalization has none.
  std::vector<at::Tensor> parameters() const;
  // Parameters and buffers by name: "CNN.*", "Transformer.*", "ctc_lin.*", "seq_lin.*",
  // "normalize.{count,glob_mean,glob_std}" (detached; views of the live tensors).
  std::vector<std::pair<std::string, at::Tensor>> named_state() const;
  // Copies `state` (names as named_state()) into the model. Every key must be present with the
  // same shape (the normalization statistics may be empty before); otherwise a config error
  // names `origin`, the first mismatching key and both shapes, or the missing/unexpected keys.
  void load_state(const std::vector<std::pair<std::string, at::Tensor>>& state,
                  const std::string& origin);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const;  // train(true) is a config error once the model is int8
  void to(const c10::Device& device);  // a config error for a non-CPU device once int8
  c10::Device device() const;

  // Decoding on CPUs with int8 matrix products: quantizes the encoder's Linear layers in place
  // (models/int8_encoder.h: the feed-forwards, Mamba's in_proj / out_proj, the convolution
  // modules' pointwise layers run as LibTorch dynamic int8 layers from now on); the front end,
  // the input projection, the scan, the CTC head and any decoder stay float32, and the float
  // parameters stay as they are. Evaluation mode, on the CPU; call it once, before the model is
  // shared (again: no change). Returns what was quantized, for a log line. Config errors: an
  // encoder other than ConMamba, a model not on the CPU or in training mode, no quantized engine.
  std::string quantize_int8();
  bool is_int8() const { return !int8_summary_.empty(); }

  const std::string& model_type() const { return model_type_; }
  bool is_s2s() const { return model_type_ == kS2s; }
  int64_t blank_index() const { return blank_index_; }
  int64_t bos_index() const { return bos_index_; }
  int64_t eos_index() const { return eos_index_; }
  int64_t pad_index() const { return pad_index_; }
  int64_t vocab_size() const;  // ctc_lin's outputs
  int64_t num_parameters() const;

  // Null when the model has none. set_tokenizer checks that it fits the vocabulary.
  const std::shared_ptr<const text::Tokenizer>& tokenizer() const { return tokenizer_; }
  void set_tokenizer(std::shared_ptr<const text::Tokenizer> tokenizer);

  // The resolved hparams of the model alone (the keys above plus model_type), as YAML that
  // hparams::load_text reads back to the same model.
  const std::string& hparams_yaml() const { return hparams_yaml_; }

  const features::Fbank& fbank() const { return *fbank_; }
  features::InputNormalizationImpl& normalize() const { return *normalize_; }
  nn::ConvolutionFrontEndImpl& cnn() const { return *cnn_; }
  TransformerASRImpl& transformer() const { return *transformer_; }
  nn::SbLinearImpl& ctc_lin() const { return *ctc_lin_; }
  nn::SbLinearImpl* seq_lin() const { return seq_lin_.get(); }  // null for CTC
  // The root module holding normalize, CNN, Transformer, ctc_lin and seq_lin.
  torch::nn::Module& module() const { return *root_; }

 private:
  AsrModel() = default;

  std::string model_type_;
  int64_t blank_index_ = 0, bos_index_ = 1, eos_index_ = 2, pad_index_ = 0;
  std::shared_ptr<features::Fbank> fbank_;
  std::shared_ptr<features::InputNormalizationImpl> normalize_;
  std::shared_ptr<nn::ConvolutionFrontEndImpl> cnn_;
  std::shared_ptr<TransformerASRImpl> transformer_;
  std::shared_ptr<nn::SbLinearImpl> ctc_lin_;
  std::shared_ptr<nn::SbLinearImpl> seq_lin_;
  std::shared_ptr<torch::nn::Module> root_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  std::string hparams_yaml_;
  std::string int8_summary_;  // set by quantize_int8()
};

}  // namespace masr::models

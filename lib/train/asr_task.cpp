// lib/train/asr_task.cpp
// Forward pass and loss of train_CTC.py / train_S2S.py on the hparams modules.
#include "train/asr_task.h"

#include "core/error.h"
#include "features/registration.h"
#include "models/module_object.h"

namespace masr::train {
namespace {

template <typename T>
std::shared_ptr<T> object_at(const hparams::Hparams& hp, const std::string& key, bool required) {
  const hparams::Value* v = hp.find(key);
  if (v == nullptr || v->is_null()) {
    if (required) throw_config_error("hparams " + hp.source() + ": key '" + key + "' is missing");
    return nullptr;
  }
  std::shared_ptr<T> out;
  if (v->type() == hparams::Value::Type::kObject && v->instance()->object) {
    out = std::dynamic_pointer_cast<T>(v->instance()->object);
  }
  if (!out) {
    throw_config_error("hparams " + hp.source() + ": " + v->origin() + " is " + v->describe() +
                       ", not the object the trainer expects there");
  }
  return out;
}

template <typename Impl>
std::shared_ptr<Impl> module_at(const hparams::Hparams& hp, const std::string& key, bool required) {
  const hparams::Value* v = hp.find(key);
  if (v == nullptr) {
    if (required) throw_config_error("hparams " + hp.source() + ": key '" + key + "' is missing");
    return nullptr;
  }
  auto out = std::dynamic_pointer_cast<Impl>(models::module_of(*v));
  if (!out) {
    throw_config_error("hparams " + hp.source() + ": " + v->origin() +
                       " is not the module the trainer expects there");
  }
  return out;
}

at::Tensor abs_lengths(const at::Tensor& rel, int64_t max_len) {
  return (rel.to(torch::kFloat64) * static_cast<double>(max_len)).round().to(torch::kLong);
}

}  // namespace

AsrBatch AsrBatch::to(const at::Device& device) const {
  AsrBatch b = *this;
  for (at::Tensor* t : {&b.wav, &b.wav_rel, &b.tokens, &b.tokens_rel, &b.tokens_bos, &b.tokens_eos,
                        &b.tokens_eos_rel}) {
    if (t->defined()) *t = t->to(device);
  }
  return b;
}

AsrTask::AsrTask(const hparams::Hparams& hp) {
  auto fbank = object_at<features::FbankObject>(hp, "compute_features", true);
  fbank_ = std::shared_ptr<features::Fbank>(fbank, &fbank->fbank);
  normalizer_ = object_at<features::InputNormalizationObject>(hp, "normalize", true)->module.ptr();
  augment_ = object_at<features::Augmentation>(hp, "fea_augment", false);
  cnn_ = module_at<nn::ConvolutionFrontEndImpl>(hp, "CNN", true);
  transformer_ = module_at<models::TransformerASRImpl>(hp, "Transformer", true);
  ctc_lin_ = module_at<nn::SbLinearImpl>(hp, "ctc_lin", true);
  seq_lin_ = module_at<nn::SbLinearImpl>(hp, "seq_lin", false);
  model_ = models::module_of(hp["model"]);
  kind_ = seq_lin_ ? TaskKind::kS2S : TaskKind::kCtc;
  if (kind_ == TaskKind::kS2S && !transformer_->has_decoder()) {
    throw_config_error("hparams " + hp.source() +
                       ": seq_lin is given (S2S) but Transformer has num_decoder_layers 0");
  }
}

void AsrTask::train(bool on) {
  model_->train(on);
  normalizer_->train(on);
}

void AsrTask::to(const at::Device& device) {
  device_ = device;
  model_->to(device);
  normalizer_->to(device);
}

ForwardResult AsrTask::forward(const AsrBatch& batch, bool training, int64_t epoch,
                               at::Generator* generator, const LossOptions& options) {
  ForwardResult r;
  at::Tensor feats = (*fbank_)(batch.wav.cpu()).to(device_);
  feats = normalizer_->forward(feats, batch.wav_rel, epoch);
  r.rel = batch.wav_rel;
  r.source = torch::arange(feats.size(0), torch::TensorOptions().dtype(torch::kLong));
  if (training && augment_ && generator != nullptr) {
    features::AugmentBatch augmented = augment_->apply(feats, batch.wav_rel.cpu(), *generator);
    feats = augmented.x.to(device_);
    r.rel = augmented.lengths.to(device_);
    if (augmented.source.defined()) r.source = augmented.source;
  }
  const at::Tensor source = r.source.to(device_);
  auto pick = [&](const at::Tensor& t) { return t.index_select(0, source); };
  const at::Tensor src = cnn_->forward(feats);
  const at::Tensor enc_lengths = abs_lengths(r.rel, src.size(1));
  at::Tensor enc_out;
  at::Tensor dec_out;
  if (kind_ == TaskKind::kS2S) {
    std::tie(enc_out, dec_out) =
        transformer_->forward(src, pick(batch.tokens_bos), enc_lengths, options.pad_index);
  } else {
    enc_out = transformer_->encode(src, enc_lengths);
  }
  r.p_ctc = torch::log_softmax(ctc_lin_->forward(enc_out), -1);
  const at::Tensor loss_ctc = ctc_loss(r.p_ctc, pick(batch.tokens), r.rel, pick(batch.tokens_rel),
                                       options.blank_index, options.reduction);
  if (kind_ == TaskKind::kCtc) {
    r.loss = loss_ctc;
    return r;
  }
  r.p_seq = torch::log_softmax(seq_lin_->forward(dec_out), -1);
  const at::Tensor loss_seq =
      kldiv_loss(r.p_seq, pick(batch.tokens_eos), pick(batch.tokens_eos_rel),
                 options.label_smoothing, options.pad_index, options.reduction);
  r.loss = options.ctc_weight * loss_ctc + (1.0 - options.ctc_weight) * loss_seq;
  return r;
}

std::vector<std::vector<int>> AsrTask::ctc_greedy(const at::Tensor& p_ctc, const at::Tensor& rel,
                                                  int64_t blank) {
  const at::Tensor best = p_ctc.argmax(-1).cpu();
  const at::Tensor lengths = abs_lengths(rel.cpu(), p_ctc.size(1));
  std::vector<std::vector<int>> out(static_cast<size_t>(best.size(0)));
  for (int64_t b = 0; b < best.size(0); ++b) {
    const at::Tensor row_tensor = best[b].contiguous();
    const auto row = row_tensor.accessor<int64_t, 1>();
    const int64_t length = std::min(lengths[b].item<int64_t>(), row_tensor.size(0));
    int64_t previous = -1;
    for (int64_t t = 0; t < length; ++t) {
      const int64_t token = row[t];
      if (token != previous && token != blank) out[b].push_back(static_cast<int>(token));
      previous = token;
    }
  }
  return out;
}

}  // namespace masr::train

// lib/decode/model_scorers.h
// SequenceScorer adapters for the models: the TransformerASR decoder (Transformer or Mamba) with
// its seq_lin head, and the TransformerLM, each with SpeechBrain's temperature.
#pragma once

#include <ATen/Tensor.h>

#include <functional>

#include "decode/attention_rescoring.h"
#include "decode/sequence_scorer.h"
#include "models/transformer_asr.h"
#include "models/transformer_lm.h"

namespace masr::decode {

// decoder_out: (N, U, d) -> logits (N, U, V); the model's seq_lin.
using OutputHead = std::function<at::Tensor(const at::Tensor&)>;
// memory: (N, T, d), memory_lengths: int64 (N) or undefined, tokens: int64 (N, U) bos first ->
// (N, U, V) logits or log-probabilities of the token after each position (AsrModel's
// decoder_log_probs has this form).
using DecoderFn =
    std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>;
// TransformerASR.decode followed by `head` (pad index 0, as SpeechBrain masks token 0).
DecoderFn transformer_asr_decoder(models::TransformerASR model, OutputHead head);

// Every step re-runs the decoder over the whole prefix, as SpeechBrain's
// S2STransformerBeamSearcher does (reference §2.5): no KV cache and no recurrent Mamba stepping
// yet, so a step costs O(U) decoder positions (O(U^2) attention) and, for the Mamba decoder, a
// scan over the encoder memory per layer. Outputs equal SpeechBrain's up to numerics.
class AsrDecoderScorer : public SequenceScorer {
 public:
  // memory: (B, T, d) encoder output; memory_lengths: int64 (B) valid frames.
  AsrDecoderScorer(DecoderFn decoder, at::Tensor memory, at::Tensor memory_lengths,
                   double temperature = 1.0);
  void start(int64_t batch, int64_t beam) override;
  at::Tensor next_log_probs(const at::Tensor& tokens) override;
  // Teacher-forced scores of one utterance's hypotheses (for attention rescoring).
  TeacherForcedScorer teacher_forced(int64_t utterance) const;

 private:
  DecoderFn decoder_;
  at::Tensor memory_, memory_lengths_;
  at::Tensor beam_memory_, beam_lengths_;  // repeated per hypothesis
  double temperature_;
};

// SpeechBrain's TransformerLMScorer: the whole prefix (bos first) through the LM at every step,
// log_softmax(logits / temperature) of the last position.
class TransformerLmScorer : public SequenceScorer {
 public:
  explicit TransformerLmScorer(models::TransformerLM lm, double temperature = 1.0);
  void start(int64_t, int64_t) override {}
  at::Tensor next_log_probs(const at::Tensor& tokens) override;

 private:
  models::TransformerLM lm_;
  double temperature_;
};

}  // namespace masr::decode

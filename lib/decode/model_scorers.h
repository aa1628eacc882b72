// lib/decode/model_scorers.h
// SequenceScorer adapters for the models: the TransformerASR decoder (Transformer or Mamba) with
// its seq_lin head, and the TransformerLM, each with SpeechBrain's temperature.
#pragma once

#include <ATen/Tensor.h>

#include <functional>
#include <memory>
#include <string>

#include "decode/attention_rescoring.h"
#include "decode/ctc_prefix_beam_search.h"
#include "decode/sequence_scorer.h"
#include "models/encoder.h"
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
// S2STransformerBeamSearcher does (reference §2.5): a step costs O(U) decoder positions (O(U^2)
// attention) and, for the Mamba decoder, a scan over the encoder memory per layer. Outputs equal
// SpeechBrain's up to numerics; IncrementalScorer is the fast equivalent.
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

// A model stepped one token per search step with its own state (KV caches, recurrent Mamba
// states): only each row's last token is fed, the state is reordered with the beams.
// log_softmax(out / temperature) of the step's output is returned.
class IncrementalScorer : public SequenceScorer {
 public:
  // (batch, beam) -> a fresh state for batch * beam rows.
  using StartFn = std::function<std::unique_ptr<models::DecoderState>(int64_t, int64_t)>;
  // (last tokens int64 (N), state) -> logits or log-probabilities (N, V); advances the state.
  using StepFn = std::function<at::Tensor(const at::Tensor&, models::DecoderState&)>;
  IncrementalScorer(std::string name, StartFn start, StepFn step, double temperature = 1.0);
  void start(int64_t batch, int64_t beam) override;
  // tokens (N, U) must extend the previous call's by one column (U = steps so far + 1).
  at::Tensor next_log_probs(const at::Tensor& tokens) override;
  void reorder(const at::Tensor& parents) override;

 private:
  std::string name_;
  StartFn start_fn_;
  StepFn step_fn_;
  double temperature_;
  std::unique_ptr<models::DecoderState> state_;
};

// The TransformerASR decoder (+ head) stepped incrementally over memory (B, T, d).
std::unique_ptr<IncrementalScorer> incremental_asr_decoder(models::TransformerASR model,
                                                           OutputHead head, at::Tensor memory,
                                                           at::Tensor memory_lengths,
                                                           double temperature = 1.0);

// SpeechBrain's TransformerLMScorer: log_softmax(logits / temperature) of the token after the
// prefix (bos first). With `cache` (and an LM that can_step()), the LM is stepped with a
// key/value cache; otherwise the whole prefix is re-run at every step, as SpeechBrain does.
class TransformerLmScorer : public SequenceScorer {
 public:
  explicit TransformerLmScorer(models::TransformerLM lm, double temperature = 1.0,
                               bool cache = true);
  void start(int64_t batch, int64_t beam) override;
  at::Tensor next_log_probs(const at::Tensor& tokens) override;
  void reorder(const at::Tensor& parents) override;

 private:
  models::TransformerLM lm_;
  double temperature_;
  std::unique_ptr<IncrementalScorer> incremental_;
};

// Fusion adds log-probabilities of the same token ids, so an LM must have the ASR model's pieces,
// not just as many: a config error names `lm_name`, the first differing id and both pieces.
void check_same_pieces(const std::vector<std::string>& lm_pieces,
                       const std::vector<std::string>& asr_pieces, const std::string& lm_name);

// The TransformerLM as a PrefixLm for CTC prefix beam search: the prefixes of a call (bos
// prepended, right-padded with pad_index, which the causal mask hides from the real positions)
// are run in one forward, and log_softmax(logits / temperature) taken at each one's last token.
// Prefixes differ in length, which the KV-cached step() cannot batch; CtcPrefixBeamSearch caches
// each prefix's output instead, so a prefix is scored once.
class TransformerLmPrefixScorer : public PrefixLm {
 public:
  TransformerLmPrefixScorer(models::TransformerLM lm, int64_t bos, int64_t eos, int64_t pad,
                            double temperature = 1.0);
  at::Tensor next_log_probs(const std::vector<std::vector<int64_t>>& prefixes) override;
  int64_t eos() const override { return eos_; }

 private:
  models::TransformerLM lm_;
  int64_t bos_, eos_, pad_;
  double temperature_;
};

}  // namespace masr::decode

// lib/decode/batch_decoder.h
// Decoding a padded batch of waveforms with any search, apart from how the model is stored: the
// model is reached through RecognitionModel, so the searches never depend on a model class.
#pragma once

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "decode/attention_rescoring.h"
#include "decode/ctc_prefix_beam_search.h"
#include "decode/s2s_beam_search.h"
#include "decode/sequence_scorer.h"
#include "decode/transcript.h"
#include "runtime/precision.h"

namespace masr::decode {

// What decoding needs from a trained ASR model.
class RecognitionModel {
 public:
  virtual ~RecognitionModel() = default;
  // wavs: float (B, S) zero-padded at sample_rate(); rel_lens: (B) valid fractions. Returns the
  // encoder output (B, T, d) and int64 (B) valid encoder frames.
  virtual std::pair<at::Tensor, at::Tensor> encode(const at::Tensor& wavs,
                                                   const at::Tensor& rel_lens) = 0;
  virtual at::Tensor ctc_log_probs(const at::Tensor& enc) = 0;  // (B, T, V)
  virtual bool has_decoder() const = 0;
  // enc: (N, T, d); enc_lens: int64 (N); tokens: int64 (N, U) bos first -> (N, U, V).
  virtual at::Tensor decoder_log_probs(const at::Tensor& enc, const at::Tensor& enc_lens,
                                       const at::Tensor& tokens) = 0;
  // The decoder stepped incrementally (KV caches, recurrent Mamba states) over enc (B, T, d) for
  // S2S search, with log_softmax(. / temperature); null when the model cannot, and then
  // decoder_log_probs re-runs the whole prefix at every step.
  virtual std::unique_ptr<SequenceScorer> incremental_decoder(const at::Tensor& enc,
                                                              const at::Tensor& enc_lens,
                                                              double temperature) {
    (void)enc, (void)enc_lens, (void)temperature;
    return nullptr;
  }
  virtual std::vector<std::string> pieces() const = 0;  // every token id's text
  virtual std::string detokenize(const std::vector<int64_t>& tokens) const = 0;
  virtual int sample_rate() const { return 16000; }
  virtual at::Device device() const { return at::kCPU; }  // where encode runs
  virtual double frame_seconds() const { return 0.04; }  // encoder frame shift
  // Whether the encoder only looks back (a causal ConMamba). Chunked decoding then keeps no
  // silence before the speech of a stretch: such a model is thrown off by any.
  virtual bool causal() const { return false; }
};

// The searches. A closed set, parsed once where it enters (the CLI, bench settings).
enum class Search {
  kAuto,     // s2s for a model with an attention decoder, else ctc-beam
  kGreedy,   // CTC argmax
  kCtcBeam,  // CTC prefix beam search (+ n-gram / neural LM fusion)
  kS2S,      // joint CTC/attention beam search
  kRescore,  // CTC prefix beam n-best rescored by the attention decoder
};
// "auto", "greedy", "ctc-beam", "s2s", "rescore": a config error listing them otherwise.
Search parse_search(const std::string& name);
const char* search_name(Search search);

struct DecodeConfig {
  Search search = Search::kAuto;
  CtcBeamSearchOptions ctc;
  S2SBeamSearchOptions s2s;
  double decoder_temperature = 1.0;
  bool incremental_decoder = true;  // step the decoder with caches when the model can
  AttentionRescoringOptions rescoring;
  // Seconds word starts are moved earlier (transcript.h); the default was measured for the
  // bundled model (docs/timestamps.md), 0 turns it off.
  double word_start_shift = kCtcWordStartShift;
  // fp32, or bf16 / fp16 autocast for the model's forward passes on CUDA (searches keep fp32
  // scores); on a CPU model everything runs in fp32. int8: the model's encoder was quantized for
  // the CPU (AsrModel::quantize_int8, which `decode --precision int8` calls after loading); the
  // searches themselves run as for fp32, and it is no precision for a CUDA model.
  runtime::Precision precision = runtime::Precision::kFp32;
  void validate() const;  // throws a config error naming the option
};

// The search that `auto` resolves to for this model; an error for s2s/rescore without a decoder.
Search resolve_search(const DecodeConfig& config, const RecognitionModel& model);

// waveforms: one float vector each, at the model's rate. lm: a neural LM for s2s (lm_weight > 0).
// Returns one transcript per waveform (ids empty), in order; words are timed from the CTC
// alignment (the search's own for CTC searches, a forced alignment of the result for s2s).
std::vector<Transcript> decode_batch(RecognitionModel& model,
                                     const std::vector<const std::vector<float>*>& waveforms,
                                     const DecodeConfig& config, SequenceScorer* lm = nullptr);

// The Viterbi CTC alignment of `tokens` to log_probs (T, V) (T valid frames): each token's frames
// and its log-probability at its first frame. Tokens that cannot fit (too many for T) keep no
// frames: then the hypothesis is returned with empty frame vectors.
CtcHypothesis ctc_forced_align(const at::Tensor& log_probs, const std::vector<int64_t>& tokens,
                               int64_t blank = 0);

}  // namespace masr::decode

// lib/decode/model_scorers.cpp
// Decoder and LM scorers over the models: full-prefix recomputation or incremental stepping.
#include "decode/model_scorers.h"

#include <torch/torch.h>

#include "core/error.h"

namespace masr::decode {

DecoderFn transformer_asr_decoder(models::TransformerASR model, OutputHead head) {
  if (!model->has_decoder()) throw_config_error("S2S decoding needs a model with a decoder");
  return [model, head](const at::Tensor& memory, const at::Tensor& lengths,
                       const at::Tensor& tokens) mutable {
    return head(model->decode(tokens.to(memory.device()), memory, lengths));
  };
}

AsrDecoderScorer::AsrDecoderScorer(DecoderFn decoder, at::Tensor memory, at::Tensor memory_lengths,
                                   double temperature)
    : decoder_(std::move(decoder)),
      memory_(std::move(memory)),
      memory_lengths_(std::move(memory_lengths)),
      temperature_(temperature) {
  if (temperature_ <= 0)
    throw_config_error("decoder temperature must be > 0, got " + std::to_string(temperature_));
}

void AsrDecoderScorer::start(int64_t batch, int64_t beam) {
  if (batch != memory_.size(0)) {
    throw_input_error("decoder scorer: search over " + std::to_string(batch) +
                      " utterances but the encoder output has " + std::to_string(memory_.size(0)));
  }
  beam_memory_ = memory_.repeat_interleave(beam, 0);
  beam_lengths_ =
      memory_lengths_.defined() ? memory_lengths_.repeat_interleave(beam, 0) : at::Tensor();
}

at::Tensor AsrDecoderScorer::next_log_probs(const at::Tensor& tokens) {
  torch::NoGradGuard no_grad;
  // log_softmax(log_softmax(x) / T) = log_softmax(x / T): either form of DecoderFn works.
  const at::Tensor out = decoder_(beam_memory_, beam_lengths_, tokens.to(beam_memory_.device()));
  return at::log_softmax(out.select(1, out.size(1) - 1) / temperature_, -1);
}

TeacherForcedScorer AsrDecoderScorer::teacher_forced(int64_t utterance) const {
  return [this, utterance](const at::Tensor& tokens) {
    torch::NoGradGuard no_grad;
    const int64_t k = tokens.size(0);
    const at::Tensor memory = memory_.narrow(0, utterance, 1).expand({k, -1, -1});
    const at::Tensor lengths = memory_lengths_.defined()
                                   ? memory_lengths_.narrow(0, utterance, 1).expand({k})
                                   : at::Tensor();
    return at::log_softmax(decoder_(memory, lengths, tokens.to(memory.device())) / temperature_,
                           -1);
  };
}

IncrementalScorer::IncrementalScorer(std::string name, StartFn start, StepFn step,
                                     double temperature)
    : name_(std::move(name)),
      start_fn_(std::move(start)),
      step_fn_(std::move(step)),
      temperature_(temperature) {
  if (temperature_ <= 0) {
    throw_config_error(name_ + " temperature must be > 0, got " + std::to_string(temperature_));
  }
}

void IncrementalScorer::start(int64_t batch, int64_t beam) { state_ = start_fn_(batch, beam); }

at::Tensor IncrementalScorer::next_log_probs(const at::Tensor& tokens) {
  torch::NoGradGuard no_grad;
  if (!state_) throw_input_error(name_ + ": next_log_probs() before start()");
  if (tokens.dim() != 2 || tokens.size(1) != state_->steps + 1) {
    throw_input_error(name_ + ": expected (rows, " + std::to_string(state_->steps + 1) +
                      ") tokens, one more than the last step, got " +
                      std::to_string(tokens.dim() == 2 ? tokens.size(1) : -1) + " columns");
  }
  const at::Tensor out = step_fn_(tokens.select(1, tokens.size(1) - 1).contiguous(), *state_);
  return at::log_softmax(out / temperature_, -1);
}

void IncrementalScorer::reorder(const at::Tensor& parents) {
  if (state_) state_->reorder(parents);
}

std::unique_ptr<IncrementalScorer> incremental_asr_decoder(models::TransformerASR model,
                                                           OutputHead head, at::Tensor memory,
                                                           at::Tensor memory_lengths,
                                                           double temperature) {
  if (!model->has_decoder()) throw_config_error("S2S decoding needs a model with a decoder");
  auto start = [model, memory, memory_lengths](int64_t batch, int64_t beam) mutable {
    if (batch != memory.size(0)) {
      throw_input_error("decoder scorer: search over " + std::to_string(batch) +
                        " utterances but the encoder output has " + std::to_string(memory.size(0)));
    }
    torch::NoGradGuard no_grad;
    return model->start_decoding(memory, memory_lengths, beam);
  };
  auto step = [model, head, memory](const at::Tensor& tokens, models::DecoderState& state) mutable {
    return head(model->decode_step(tokens.to(memory.device()), state));
  };
  return std::make_unique<IncrementalScorer>("decoder scorer", start, step, temperature);
}

TransformerLmScorer::TransformerLmScorer(models::TransformerLM lm, double temperature, bool cache)
    : lm_(std::move(lm)), temperature_(temperature) {
  if (temperature_ <= 0)
    throw_config_error("LM temperature must be > 0, got " + std::to_string(temperature_));
  if (cache && lm_->can_step()) {
    models::TransformerLM model = lm_;
    incremental_ = std::make_unique<IncrementalScorer>(
        "LM scorer", [model](int64_t, int64_t) { return model->start_state(); },
        [model](const at::Tensor& tokens, models::DecoderState& state) mutable {
          return model->step(tokens.to(model->parameters().front().device()), state);
        },
        temperature_);
  }
}

void TransformerLmScorer::start(int64_t batch, int64_t beam) {
  if (incremental_) incremental_->start(batch, beam);
}

void TransformerLmScorer::reorder(const at::Tensor& parents) {
  if (incremental_) incremental_->reorder(parents);
}

at::Tensor TransformerLmScorer::next_log_probs(const at::Tensor& tokens) {
  if (incremental_) return incremental_->next_log_probs(tokens);
  torch::NoGradGuard no_grad;
  const at::Tensor logits = lm_->forward(tokens.to(lm_->parameters().front().device()));
  return at::log_softmax(logits.select(1, logits.size(1) - 1) / temperature_, -1);
}

void check_same_pieces(const std::vector<std::string>& lm_pieces,
                       const std::vector<std::string>& asr_pieces, const std::string& lm_name) {
  if (lm_pieces.size() != asr_pieces.size()) {
    throw_config_error(lm_name + " has " + std::to_string(lm_pieces.size()) +
                       " tokens but the ASR model has " + std::to_string(asr_pieces.size()));
  }
  for (size_t id = 0; id < lm_pieces.size(); ++id) {
    if (lm_pieces[id] != asr_pieces[id]) {
      throw_config_error(lm_name + " does not share the ASR model's tokenizer: token " +
                         std::to_string(id) + " is '" + lm_pieces[id] + "' for the LM and '" +
                         asr_pieces[id] +
                         "' for the ASR model (train the LM with tokenizer_file: the ASR model)");
    }
  }
}

TransformerLmPrefixScorer::TransformerLmPrefixScorer(models::TransformerLM lm, int64_t bos,
                                                     int64_t eos, int64_t pad, double temperature)
    : lm_(std::move(lm)), bos_(bos), eos_(eos), pad_(pad), temperature_(temperature) {
  if (temperature_ <= 0)
    throw_config_error("LM temperature must be > 0, got " + std::to_string(temperature_));
}

at::Tensor TransformerLmPrefixScorer::next_log_probs(
    const std::vector<std::vector<int64_t>>& prefixes) {
  torch::NoGradGuard no_grad;
  const int64_t rows = static_cast<int64_t>(prefixes.size());
  size_t longest = 0;
  for (const auto& p : prefixes) longest = std::max(longest, p.size());
  at::Tensor tokens = at::full({rows, static_cast<int64_t>(longest) + 1}, pad_, at::kLong);
  at::Tensor last = at::empty({rows}, at::kLong);
  auto t = tokens.accessor<int64_t, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    t[r][0] = bos_;
    for (size_t i = 0; i < prefixes[r].size(); ++i) t[r][i + 1] = prefixes[r][i];
    last[r] = static_cast<int64_t>(prefixes[r].size());
  }
  const c10::Device device = lm_->parameters().front().device();
  const at::Tensor logits = lm_->forward(tokens.to(device), pad_);  // (N, U, V)
  const at::Tensor index = last.to(device).view({rows, 1, 1}).expand({rows, 1, logits.size(2)});
  const at::Tensor at_last = logits.gather(1, index).squeeze(1);
  return at::log_softmax(at_last.to(at::kFloat) / temperature_, -1).to(at::kCPU);
}

}  // namespace masr::decode

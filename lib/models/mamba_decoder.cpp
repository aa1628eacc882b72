// lib/models/mamba_decoder.cpp
// Mamba decoder layers.
#include "models/mamba_decoder.h"

#include "core/error.h"

namespace masr::models {

MambaDecoderLayerImpl::MambaDecoderLayerImpl(const MambaDecoderConfig& c) {
  self_mamba = register_module("self_mamba", nn::Mamba(c.d_model, c.mamba, false));
  cross_mamba = register_module("cross_mamba", nn::Mamba(c.d_model, c.mamba, false));
  register_residuals(c.d_model, c.d_ffn, c.dropout, c.activation, c.normalize_before);
}

// Runs cross_mamba over [memory[:len_b]; tgt] per utterance, packed left so the target follows
// the utterance's last real memory frame, and returns the outputs at the target positions.
at::Tensor MambaDecoderLayerImpl::cross(const at::Tensor& tgt, const at::Tensor& memory,
                                        const at::Tensor& memory_lengths) {
  const int64_t S = memory.size(1), U = tgt.size(1);
  const at::Tensor joined = torch::cat({memory, tgt}, 1);
  if (!memory_lengths.defined()) return cross_mamba->forward(joined).narrow(1, S, U);
  const auto device = memory.device();
  const at::Tensor lens = memory_lengths.to(device).to(torch::kLong).unsqueeze(1);  // (B, 1)
  const at::Tensor p =
      torch::arange(S + U, torch::TensorOptions().dtype(torch::kLong).device(device)).unsqueeze(0);
  // Position p of utterance b holds memory[p] while p < len_b, then tgt[p - len_b].
  const at::Tensor source = torch::where(p < lens, p, (S + p - lens).clamp_max(S + U - 1));
  const auto d = memory.size(2);
  const at::Tensor packed = joined.gather(1, source.unsqueeze(-1).expand({-1, -1, d}));
  const at::Tensor out = cross_mamba->forward(packed, (lens + U).squeeze(1));
  const at::Tensor targets = lens + torch::arange(U, p.options()).unsqueeze(0);  // (B, U)
  return out.gather(1, targets.unsqueeze(-1).expand({-1, -1, d}));
}

at::Tensor MambaDecoderLayerImpl::forward(const at::Tensor& input, const at::Tensor& memory,
                                          const at::Tensor& memory_lengths) {
  return residuals(
      input, [&](const at::Tensor& in) { return self_mamba->forward(in); },
      [&](const at::Tensor& in) { return cross(in, memory, memory_lengths); },
      /*with_dropout=*/true);
}

at::Tensor MambaDecoderLayerImpl::step(const at::Tensor& input, MambaStepState& self,
                                       MambaStepState& cross_state) {
  return residuals(
      input, [&](const at::Tensor& in) { return mamba_step(*self_mamba, in, self); },
      [&](const at::Tensor& in) { return mamba_step(*cross_mamba, in, cross_state); },
      /*with_dropout=*/false);
}

namespace {

struct MambaDecoderState : DecoderState {
  std::vector<MambaStepState> self, cross;  // per layer
  void reorder(const at::Tensor& rows) override {
    for (auto& s : self) s.reorder(rows);
    for (auto& s : cross) s.reorder(rows);
  }
};

}  // namespace

MambaDecoder::MambaDecoder(const MambaDecoderConfig& c) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) layers->push_back(MambaDecoderLayer(c));
  norm = register_module("norm", nn::SbLayerNorm(c.d_model, 1e-6));
}

at::Tensor MambaDecoder::forward(const at::Tensor& tgt, const at::Tensor& /*tgt_padding*/,
                                 const at::Tensor& memory, const at::Tensor& memory_lengths) {
  at::Tensor out = tgt;
  for (const auto& layer : *layers) {
    out = layer->as<MambaDecoderLayerImpl>()->forward(out, memory, memory_lengths);
  }
  return norm->forward(out);
}

std::unique_ptr<DecoderState> MambaDecoder::start(const at::Tensor& memory,
                                                  const at::Tensor& memory_lengths, int64_t beam) {
  if (beam < 1) throw_config_error("MambaDecoder::start: beam must be >= 1");
  auto state = std::make_unique<MambaDecoderState>();
  const int64_t rows = memory.size(0) * beam;
  for (const auto& layer : *layers) {
    auto* l = layer->as<MambaDecoderLayerImpl>();
    state->self.push_back(mamba_initial_state(*l->self_mamba, rows, memory.options()));
    MambaStepState cross = mamba_prefill(*l->cross_mamba, memory, memory_lengths);
    cross.conv = cross.conv.repeat_interleave(beam, 0);
    cross.ssm = cross.ssm.repeat_interleave(beam, 0);
    state->cross.push_back(std::move(cross));
  }
  return state;
}

at::Tensor MambaDecoder::step(const at::Tensor& tgt, const at::Tensor& /*tgt_padding*/,
                              DecoderState& state_base) {
  auto* state = dynamic_cast<MambaDecoderState*>(&state_base);
  if (state == nullptr) throw_input_error("MambaDecoder::step: not a Mamba decoder state");
  at::Tensor out = tgt;
  for (size_t i = 0; i < layers->size(); ++i) {
    out = (*layers)[i]->as<MambaDecoderLayerImpl>()->step(out, state->self[i], state->cross[i]);
  }
  ++state->steps;
  return norm->forward(out);
}

}  // namespace masr::models

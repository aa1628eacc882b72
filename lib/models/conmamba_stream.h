// lib/models/conmamba_stream.h
// A causal ConMamba encoder run chunk by chunk: per layer the Mamba's conv and SSM state
// (models/mamba_step.h) and the convolution module's last kernel-1 inputs, so that streamed chunks
// give the frames the whole sequence gives (streaming recognition, decode/streaming_recognizer.h).
#pragma once

#include <ATen/Tensor.h>

#include <vector>

#include "models/conmamba_encoder.h"

namespace masr::nn {
struct SbLinearImpl;
}

namespace masr::models {

struct TransformerASRImpl;

struct ConmambaStreamState {
  std::vector<ConmambaLayerCache> layers;
  int64_t frames = 0;  // encoder frames consumed so far
};

// The parts of a TransformerASR that a stream runs: the input projection (custom_src_module's
// Linear) and a causal ConMamba encoder. Throws a config error, saying why and pointing at
// `decode`, for anything that needs the whole utterance: a Conformer or Transformer encoder, a
// bidirectional Mamba, a non-causal depthwise conv, an absolute positional encoding.
struct CausalConmamba {
  nn::SbLinearImpl* src_linear = nullptr;
  ConmambaEncoder* encoder = nullptr;
};
CausalConmamba causal_conmamba(TransformerASRImpl& transformer);

// The state before the first frame (zero histories) for `rows` independent streams.
ConmambaStreamState conmamba_initial_state(const ConmambaEncoder& encoder, int64_t rows,
                                           const at::TensorOptions& options);

// x: (N, n, d_model) the next n frames after the input projection -> (N, n, d_model) encoder
// output (final LayerNorm included), equal to the whole sequence's frames at those positions.
// Evaluation mode; advances `state`.
at::Tensor conmamba_stream_forward(ConmambaEncoder& encoder, const at::Tensor& x,
                                   ConmambaStreamState& state);

}  // namespace masr::models

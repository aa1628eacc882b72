// apps/mamba-asr/bundled_model.h
// The model `decode` and `stream` use when no --model is given: $MASR_MODEL, else one of the
// models that ship in the repository's models/ folder, found beside the binary (build/bin/ of a
// build inside the source tree, or an installed <prefix>/bin/ with
// <prefix>/share/mamba-asr/models).
#pragma once

#include <string>

namespace masr::cli {

// The bundled models' names: the offline one (`decode`) and the causal one (`stream`). decode's is
// the S2S model the GPU sessions continue (models/conmamba-s2s-synth-en/README.md): on every set
// measured it beats the CTC model that was the default before (unheard espeak-ng accents 35 %
// against 48 % WER clean, 40 % against 87 % with channel conditions; the reserved voices 86 %
// against 94-102 %).
inline constexpr const char* kDefaultDecodeModel = "conmamba-s2s-synth-en";
inline constexpr const char* kDefaultStreamModel = "conmamba-ctc-causal-synth-en";

// $MASR_MODEL when set (it must exist), else the first of the folders beside the binary that
// holds `name`; logs which one it took. Throws a usage error naming the places it looked.
std::string default_model(const std::string& command, const std::string& name);

}  // namespace masr::cli

// apps/mamba-asr/bundled_model.h
// The model `decode` and `stream` use when no --model is given: $MASR_MODEL, else one of the
// models that ship in the repository's models/ folder, found beside the binary (build/bin/ of a
// build inside the source tree, or an installed <prefix>/bin/ with
// <prefix>/share/mamba-asr/models).
#pragma once

#include <string>

namespace masr::cli {

// The bundled models' names: the offline one (`decode`) and the causal one (`stream`).
inline constexpr const char* kDefaultDecodeModel = "conmamba-ctc-synth-en";
inline constexpr const char* kDefaultStreamModel = "conmamba-ctc-causal-synth-en";

// $MASR_MODEL when set (it must exist), else the first of the folders beside the binary that
// holds `name`; logs which one it took. Throws a usage error naming the places it looked.
std::string default_model(const std::string& command, const std::string& name);

}  // namespace masr::cli

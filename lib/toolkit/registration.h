// lib/toolkit/registration.h
// Wires the whole toolkit together: every hparams class (models::register_all_classes) and every
// `mamba-asr bench` benchmark. Explicit calls (rather than static initialisers) keep the linker
// from dropping them from the static library.
#pragma once

#include "hparams/registry.h"

namespace masr::toolkit {

// Idempotent; call once before loading hparams or listing benchmarks (the CLI does it in main).
void register_all(hparams::Registry& registry = hparams::Registry::global());

}  // namespace masr::toolkit

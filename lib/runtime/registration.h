// lib/runtime/registration.h
// Puts every implemented class into the hparams registry. Each subsystem exposes a
// `register_<subsystem>_classes(Registry&)` function and is listed in registration.cpp; explicit
// calls (rather than static initialisers) keep the linker from dropping them from the static
// library.
#pragma once

#include "hparams/registry.h"

namespace masr::runtime {

// Idempotent; call once before loading hparams (the CLI does it in main).
void register_all_classes(hparams::Registry& registry = hparams::Registry::global());

}  // namespace masr::runtime

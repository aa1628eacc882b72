// lib/models/registration.h
// Puts the hparams classes into the registry: the model builders (front end, TransformerASR,
// TransformerLM, Linear, ModuleList) and, through register_all_classes, every class below them.
// Explicit calls (rather than static initialisers) keep the linker from dropping them from the
// static library.
#pragma once

#include "hparams/registry.h"

namespace masr::models {

void register_model_classes(hparams::Registry& registry);

// Every class an hparams file can name: the `torch.manual_seed` hook, features and augmentation,
// text, models. Idempotent; model loading calls it, so callers need not.
void register_all_classes(hparams::Registry& registry = hparams::Registry::global());

}  // namespace masr::models

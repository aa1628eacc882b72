// lib/models/register.h
// Registers the model builders (front end, TransformerASR, TransformerLM, Linear, ModuleList).
#pragma once

#include "hparams/registry.h"

namespace masr::models {

void register_model_classes(hparams::Registry& registry);

}  // namespace masr::models

// lib/features/augment/registration.h
// Puts the augmentation classes (SpectrogramDrop, Warping, Augmenter, AddNoise) into the hparams
// registry under their SpeechBrain names.
#pragma once

#include "hparams/registry.h"

namespace masr::features {

void register_augment_classes(hparams::Registry& registry);

}  // namespace masr::features

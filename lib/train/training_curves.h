// lib/train/training_curves.h
// Training curves as an SVG image (opens in any browser): train/valid loss, WER (and ACC when
// present) and the learning rate per epoch, one panel each, redrawn every epoch.
#pragma once

#include <string>
#include <vector>

#include "train/train_logger.h"

namespace masr::train {

// The SVG document for `history` (an empty history gives a placeholder text).
std::string training_curves_svg(const std::vector<EpochRecord>& history, const std::string& title);

}  // namespace masr::train

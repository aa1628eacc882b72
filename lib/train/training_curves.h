// lib/train/training_curves.h
// Training curves as an SVG image (opens in any browser, no dependencies): the step-level train
// loss under the per-epoch train/valid loss, WER/CER, token accuracy (when present) and the
// learning rate, one panel each with gridlines and labelled axes, redrawn every epoch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/train_logger.h"

namespace masr::train {

// A "step" record of log.jsonl: the mean train loss of the steps since the previous record.
struct StepLoss {
  int64_t epoch = 0;
  int64_t step = 0;  // optimizer steps since the start of training
  double loss = 0.0;
};

// The step records of a log.jsonl in step order (a step logged twice, by a run resumed after a
// kill, keeps its last record); empty when the file is absent.
std::vector<StepLoss> read_step_losses(const std::string& jsonl_path);

// "conmamba_small.yaml · …/results/conmamba/1234" for the hparams file and the run folder: the
// file name, the folder's last two components, at most `max_chars` characters (cut in the middle).
std::string curves_title(const std::string& hparams_path, const std::string& run_folder,
                         size_t max_chars = 80);

// The SVG document. Panels share the x axis: optimizer steps when every epoch record has its
// step (epoch points sit at their last step), else epochs. An empty history gives placeholders.
std::string training_curves_svg(const std::vector<EpochRecord>& history,
                                const std::vector<StepLoss>& steps, const std::string& title);

// A run's curves, as the trainers draw them: titled curves_title(hparams_path, run_folder), with
// the step losses of RUN_FOLDER/log.jsonl (steps past the last epoch record are left out: they
// belong to an epoch not yet drawn).
std::string run_curves_svg(const std::vector<EpochRecord>& history, const std::string& hparams_path,
                           const std::string& run_folder);

}  // namespace masr::train

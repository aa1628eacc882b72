// lib/toolkit/encoder_length_plot.h
// The plot of `bench encoder --lengths`: encoder forward time and peak memory against audio
// length on log-log axes, one line per encoder, as a self-contained SVG document.
#pragma once

#include <string>
#include <vector>

namespace masr::toolkit {

// One length of one encoder, measured or skipped.
struct LengthPoint {
  double length_s = 0.0;
  bool measured = false;
  double median_s = 0.0, p10_s = 0.0, p90_s = 0.0;  // forward time
  double peak_bytes = 0.0;                          // peak memory growth over the forwards
  std::string reason;                               // why it was skipped
};

struct LengthCurve {
  std::string name;   // short, for notes: "ConMamba"
  std::string label;  // the legend's text, e.g. "ConMamba: conmamba_small, ..., 10.05 M params"
  std::vector<LengthPoint> points;
};

// Two panels over a shared logarithmic x axis (audio length, s): the median forward time (s) with
// its p10-p90 spread, and `memory_label` (e.g. "peak RSS growth") in MiB. Skipped lengths are
// marked with a cross on the panel's top edge and listed under the legend with their reason.
// Dashed guides in the time panel show slopes 1 (linear) and 2 (quadratic) from the first curve's
// first point. `title` and `subtitle` head the document.
std::string encoder_length_svg(const std::vector<LengthCurve>& curves, const std::string& title,
                               const std::string& subtitle, const std::string& memory_label);

}  // namespace masr::toolkit

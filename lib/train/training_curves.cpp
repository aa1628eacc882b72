// lib/train/training_curves.cpp
// A small SVG plotter, no dependencies: panels with "nice" ticks (1, 2, 5 x 10^k), gridlines,
// axis titles with units, a legend on the panel's header row, step losses under epoch curves.
#include "train/training_curves.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/xml_escape.h"

namespace masr::train {
namespace {

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (x, value)
  bool detail = false;  // the step-level line: thin, drawn under the epoch curves, no markers
};

struct Panel {
  std::string title;
  std::string y_label;  // with the unit
  std::vector<Series> series;
};

// Layout (pixels): the plot area of a panel sits inside these margins.
constexpr int kWidth = 640, kPanelHeight = 250, kLeft = 76, kRight = 20, kTop = 30, kBottom = 44;
constexpr int kHeader = 34;          // the document title's band
constexpr size_t kMaxPoints = 2000;  // step losses beyond this are averaged in buckets

std::string num(double v, const char* format = "%.1f") {
  char b[32];
  std::snprintf(b, sizeof(b), format, v);
  return b;
}

// A round distance (1, 2 or 5 times a power of ten) giving about `target` ticks over [lo, hi].
double tick_step(double lo, double hi, int target = 5) {
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * magnitude * (1 + 1e-9)) return m * magnitude;
  }
  return 10.0 * magnitude;
}

// The multiples of `step` within [lo, hi].
std::vector<double> ticks(double lo, double hi, double step) {
  std::vector<double> out;
  for (long long k = std::llround(std::ceil(lo / step - 1e-9));
       static_cast<double>(k) * step <= hi + step * 1e-9; ++k) {
    out.push_back(static_cast<double>(k) * step);
  }
  return out;
}

std::string tick_label(double v, double step) {
  if (v == 0) return "0";
  if (step < 1e-3 || step >= 1e6) return num(v, "%.1e");
  if (step >= 1) return num(v, "%.0f");
  static const char* const kFormats[] = {"%.0f", "%.1f", "%.2f", "%.3f"};
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 3);
  return num(v, kFormats[decimals]);
}

struct Range {
  double x0 = std::numeric_limits<double>::max(), x1 = -x0, y0 = x0, y1 = -x0;
  bool empty() const { return x0 > x1; }
};

Range range_of(const std::vector<Series>& series) {
  Range r;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(y) || !std::isfinite(x)) continue;
      r.x0 = std::min(r.x0, x), r.x1 = std::max(r.x1, x);
      r.y0 = std::min(r.y0, y), r.y1 = std::max(r.y1, y);
    }
  }
  if (r.empty()) return r;
  if (r.x1 == r.x0) r.x0 -= 0.5, r.x1 += 0.5;
  if (r.y1 == r.y0) {
    const double pad = r.y0 == 0 ? 1.0 : std::fabs(r.y0) * 0.1;
    r.y0 -= pad, r.y1 += pad;
  }
  return r;
}

// A panel's plot area: data coordinates to pixels (y axis widened to its outer ticks, so the
// gridlines frame the data).
struct Axes {
  static constexpr double w = kWidth - kLeft - kRight, h = kPanelHeight - kTop - kBottom;
  Range r;
  double xstep, ystep;

  explicit Axes(Range range) : r(range) {
    ystep = tick_step(r.y0, r.y1), xstep = tick_step(r.x0, r.x1);
    r.y0 = std::floor(r.y0 / ystep + 1e-9) * ystep;
    r.y1 = std::ceil(r.y1 / ystep - 1e-9) * ystep;
  }
  double px(double x) const { return kLeft + (x - r.x0) / (r.x1 - r.x0) * w; }
  double py(double y) const { return kTop + h - (y - r.y0) / (r.y1 - r.y0) * h; }
};

// Gridlines, frame, tick labels and axis titles.
void draw_axes(std::ostringstream& svg, const Axes& a, const std::string& x_label,
               const std::string& y_label) {
  const std::vector<double> yt = ticks(a.r.y0, a.r.y1, a.ystep);
  const std::vector<double> xt = ticks(a.r.x0, a.r.x1, a.xstep);
  svg << "<g stroke=\"#e4e4e4\">\n";
  for (const double t : yt) {
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + a.w << "\" y1=\"" << num(a.py(t))
        << "\" y2=\"" << num(a.py(t)) << "\"/>\n";
  }
  for (const double t : xt) {
    svg << "<line x1=\"" << num(a.px(t)) << "\" x2=\"" << num(a.px(t)) << "\" y1=\"" << kTop
        << "\" y2=\"" << kTop + a.h << "\"/>\n";
  }
  svg << "</g>\n<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << a.w << "\" height=\""
      << a.h << "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (const double t : yt) {
    svg << "<text x=\"" << kLeft - 5 << "\" y=\"" << num(a.py(t) + 4) << "\" text-anchor=\"end\">"
        << tick_label(t, a.ystep) << "</text>\n";
  }
  for (const double t : xt) {
    svg << "<text x=\"" << num(a.px(t)) << "\" y=\"" << kTop + a.h + 15
        << "\" text-anchor=\"middle\">" << tick_label(t, a.xstep) << "</text>\n";
  }
  svg << "<text x=\"" << num(kLeft + a.w / 2) << "\" y=\"" << kTop + a.h + 34
      << "\" text-anchor=\"middle\" fill=\"#444\">" << xml_escape(x_label) << "</text>\n"
      << "<text transform=\"translate(14," << num(kTop + a.h / 2)
      << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#444\">" << xml_escape(y_label)
      << "</text>\n";
}

// The legend on the header row (right-aligned) and the lines: detail lines first, so the epoch
// curves (with a dot per epoch) lie on top.
void draw_series(std::ostringstream& svg, const Axes& a, const std::vector<Series>& series) {
  int legend_x = kWidth - kRight;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    if (it->points.empty()) continue;
    svg << "<text x=\"" << legend_x << "\" y=\"18\" text-anchor=\"end\" fill=\"" << it->color
        << "\">" << xml_escape(it->name) << "</text>\n";
    legend_x -= 12 + static_cast<int>(6.5 * static_cast<double>(it->name.size()));
  }
  for (const bool detail : {true, false}) {
    for (const Series& s : series) {
      if (s.detail != detail || s.points.empty()) continue;
      svg << "<polyline" << (detail ? " class=\"steps\"" : "") << " fill=\"none\" stroke-width=\""
          << (detail ? 1 : 2) << "\" stroke=\"" << s.color << "\" points=\"";
      for (const auto& [x, y] : s.points)
        if (std::isfinite(y)) svg << num(a.px(x)) << "," << num(a.py(y)) << " ";
      svg << "\"/>\n";
      if (detail) continue;
      svg << "<g fill=\"" << s.color << "\">";
      for (const auto& [x, y] : s.points) {
        if (std::isfinite(y))
          svg << "<circle cx=\"" << num(a.px(x)) << "\" cy=\"" << num(a.py(y)) << "\" r=\"2.5\"/>";
      }
      svg << "</g>\n";
    }
  }
}

// `x` holds the x range every panel shares (its y range is ignored).
void draw_panel(std::ostringstream& svg, int top, const Panel& panel, const std::string& x_label,
                const Range& x) {
  svg << "<g transform=\"translate(0," << top << ")\">\n"
      << "<text x=\"" << kLeft << "\" y=\"18\" font-weight=\"bold\">" << xml_escape(panel.title)
      << "</text>\n";
  Range r = range_of(panel.series);
  if (r.empty()) {
    svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << Axes::w << "\" height=\""
        << Axes::h << "\" fill=\"none\" stroke=\"#888\"/>\n<text x=\"" << kLeft + Axes::w / 2
        << "\" y=\"" << kTop + Axes::h / 2
        << "\" text-anchor=\"middle\" fill=\"#666\">no data yet</text>\n</g>\n";
    return;
  }
  r.x0 = x.x0, r.x1 = x.x1;
  const Axes axes(r);
  draw_axes(svg, axes, x_label, panel.y_label);
  draw_series(svg, axes, panel.series);
  svg << "</g>\n";
}

// x of an epoch record: its last step, or the epoch number.
double epoch_x(const EpochRecord& r, bool by_step) {
  return by_step ? static_cast<double>(r.step) : static_cast<double>(r.epoch);
}

Series collect(const std::vector<EpochRecord>& history, bool by_step, const std::string& name,
               const std::string& color, const std::string& key, double scale = 1.0) {
  Series s{name, color, {}, false};
  for (const auto& r : history) {
    std::optional<double> v;
    if (key == "train_loss")
      v = r.train_loss;
    else if (key == "lr")
      v = r.lr;
    else if (auto it = r.valid.find(key); it != r.valid.end())
      v = it->second;
    if (v) s.points.emplace_back(epoch_x(r, by_step), *v * scale);
  }
  return s;
}

// The step losses, averaged in buckets when there are more than kMaxPoints.
Series step_series(const std::vector<StepLoss>& steps) {
  Series s{"train (steps)", "#9ecae1", {}, true};
  const size_t bucket = (steps.size() + kMaxPoints - 1) / kMaxPoints;
  for (size_t i = 0; i < steps.size(); i += std::max<size_t>(bucket, 1)) {
    double x = 0, y = 0;
    size_t n = 0;
    for (size_t k = i; k < std::min(steps.size(), i + std::max<size_t>(bucket, 1)); ++k) {
      if (!std::isfinite(steps[k].loss)) continue;
      x += static_cast<double>(steps[k].step), y += steps[k].loss, ++n;
    }
    if (n > 0) s.points.emplace_back(x / static_cast<double>(n), y / static_cast<double>(n));
  }
  return s;
}

std::string cut_middle(const std::string& text, size_t max_chars) {
  // Counted in code points; the ellipsis is one.
  std::vector<size_t> starts;  // byte offset of each code point
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  if (starts.size() <= max_chars || max_chars < 5) return text;
  const size_t head = (max_chars - 1) / 2, tail = max_chars - 1 - head;
  return text.substr(0, starts[head]) + "\xe2\x80\xa6" + text.substr(starts[starts.size() - tail]);
}

}  // namespace

std::vector<StepLoss> read_step_losses(const std::string& jsonl_path) {
  std::map<int64_t, StepLoss> by_step;
  std::ifstream in(jsonl_path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || j.value("kind", "") != "step") continue;
    const auto loss = j.find("train_loss");
    if (loss == j.end() || !loss->is_number()) continue;
    StepLoss s;
    s.epoch = j.value("epoch", int64_t{0});
    s.step = j.value("step", int64_t{0});
    s.loss = loss->get<double>();
    by_step[s.step] = s;
  }
  std::vector<StepLoss> out;
  for (const auto& [step, record] : by_step) out.push_back(record);
  return out;
}

std::string curves_title(const std::string& hparams_path, const std::string& run_folder,
                         size_t max_chars) {
  namespace fs = std::filesystem;
  const std::string file = fs::path(hparams_path).filename().string();
  std::vector<std::string> parts;
  for (const auto& part : fs::path(run_folder).lexically_normal())
    if (!part.empty() && part != "/" && part != ".") parts.push_back(part.string());
  std::string folder;
  if (parts.size() > 2) folder = "\xe2\x80\xa6/";
  for (size_t i = parts.size() > 2 ? parts.size() - 2 : 0; i < parts.size(); ++i)
    folder += parts[i] + (i + 1 < parts.size() ? "/" : "");
  if (folder.empty()) folder = run_folder;
  const std::string title = file.empty()     ? folder
                            : folder.empty() ? file
                                             : file + " \xc2\xb7 " + folder;
  return cut_middle(title, max_chars);
}

std::string training_curves_svg(const std::vector<EpochRecord>& history,
                                const std::vector<StepLoss>& steps, const std::string& title) {
  const bool by_step =
      !history.empty() &&
      std::all_of(history.begin(), history.end(), [](const EpochRecord& r) { return r.step > 0; });
  std::vector<Panel> panels;
  Panel loss{"loss", "loss (nats)", {}};
  if (by_step && !steps.empty()) loss.series.push_back(step_series(steps));
  loss.series.push_back(collect(history, by_step, "train (epoch)", "#1f77b4", "train_loss"));
  loss.series.push_back(collect(history, by_step, "valid", "#d62728", "valid_loss"));
  panels.push_back(loss);
  panels.push_back({"error rate",
                    "error rate (%)",
                    {collect(history, by_step, "WER", "#2ca02c", "WER"),
                     collect(history, by_step, "CER", "#9467bd", "CER")}});
  const Series acc = collect(history, by_step, "valid ACC", "#ff7f0e", "ACC", 100.0);
  if (!acc.points.empty()) panels.push_back({"token accuracy", "accuracy (%)", {acc}});
  panels.push_back(
      {"learning rate", "learning rate", {collect(history, by_step, "lr", "#17becf", "lr")}});
  const std::string x_label = by_step ? "optimizer step (points: end of each epoch)" : "epoch";
  std::vector<Series> all;
  for (const Panel& panel : panels) all.insert(all.end(), panel.series.begin(), panel.series.end());
  Range x = range_of(all);  // shared by the panels; steps count from 0
  if (by_step && !x.empty()) x.x0 = 0;
  std::ostringstream svg;
  const int height = kHeader + kPanelHeight * static_cast<int>(panels.size());
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kWidth << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n<title>" << xml_escape(title)
      << "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" "
         "font-size=\"14\" font-weight=\"bold\">"
      << xml_escape(title) << "</text>\n";
  int top = kHeader;
  for (const Panel& panel : panels) {
    draw_panel(svg, top, panel, x_label, x);
    top += kPanelHeight;
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string run_curves_svg(const std::vector<EpochRecord>& history, const std::string& hparams,
                           const std::string& folder) {
  std::vector<StepLoss> steps =
      read_step_losses((std::filesystem::path(folder) / "log.jsonl").string());
  if (!history.empty() && history.back().step > 0) {
    const int64_t last = history.back().step;
    steps.erase(std::remove_if(steps.begin(), steps.end(),
                               [&](const StepLoss& s) { return s.step > last; }),
                steps.end());
  }
  return training_curves_svg(history, steps, curves_title(hparams, folder));
}

}  // namespace masr::train

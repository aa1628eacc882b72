// lib/train/training_curves.cpp
// A small SVG plotter: polylines with min/max axis labels, no dependencies.
#include "train/training_curves.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>

namespace masr::train {
namespace {

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (epoch, value)
};

constexpr int kWidth = 480, kHeight = 220, kMargin = 50;

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.3g", v);
  return b;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

void panel(std::ostringstream& svg, int top, const std::string& title,
           const std::vector<Series>& series) {
  double x0 = std::numeric_limits<double>::max(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  svg << "<g transform=\"translate(0," << top << ")\">\n<text x=\"" << kMargin
      << "\" y=\"16\" font-weight=\"bold\">" << escape(title) << "</text>\n";
  svg << "<rect x=\"" << kMargin << "\" y=\"24\" width=\"" << kWidth - 2 * kMargin << "\" height=\""
      << kHeight - 60 << "\" fill=\"none\" stroke=\"#888\"/>\n";
  if (x0 > x1) {
    svg << "<text x=\"" << kWidth / 2
        << "\" y=\"100\" text-anchor=\"middle\">no data yet</text></g>\n";
    return;
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + (y0 == 0 ? 1 : std::fabs(y0) * 0.1);
  const double w = kWidth - 2 * kMargin, h = kHeight - 60;
  auto px = [&](double x) { return kMargin + (x - x0) / (x1 - x0) * w; };
  auto py = [&](double y) { return 24 + h - (y - y0) / (y1 - y0) * h; };
  svg << "<text x=\"" << kMargin - 4 << "\" y=\"30\" text-anchor=\"end\">" << fmt(y1) << "</text>\n"
      << "<text x=\"" << kMargin - 4 << "\" y=\"" << 24 + h << "\" text-anchor=\"end\">" << fmt(y0)
      << "</text>\n<text x=\"" << kMargin << "\" y=\"" << 40 + h << "\">epoch " << fmt(x0)
      << "</text>\n<text x=\"" << kWidth - kMargin << "\" y=\"" << 40 + h
      << "\" text-anchor=\"end\">" << fmt(x1) << "</text>\n";
  int legend = 0;
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    svg << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << s.color << "\" points=\"";
    for (auto [x, y] : s.points) {
      if (std::isfinite(y)) svg << px(x) << "," << py(y) << " ";
    }
    svg << "\"/>\n<text x=\"" << kWidth - kMargin - 4 << "\" y=\"" << 40 + 14 * legend++
        << "\" text-anchor=\"end\" fill=\"" << s.color << "\">" << escape(s.name) << "</text>\n";
  }
  svg << "</g>\n";
}

Series collect(const std::vector<EpochRecord>& history, const std::string& name,
               const std::string& color, const std::string& key) {
  Series s{name, color, {}};
  for (const auto& r : history) {
    std::optional<double> v;
    if (key == "train_loss")
      v = r.train_loss;
    else if (key == "lr")
      v = r.lr;
    else if (auto it = r.valid.find(key); it != r.valid.end())
      v = it->second;
    if (v) s.points.emplace_back(static_cast<double>(r.epoch), *v);
  }
  return s;
}

}  // namespace

std::string training_curves_svg(const std::vector<EpochRecord>& history, const std::string& title) {
  std::vector<std::pair<std::string, std::vector<Series>>> panels;
  panels.push_back({"loss",
                    {collect(history, "train", "#1f77b4", "train_loss"),
                     collect(history, "valid", "#d62728", "valid_loss")}});
  panels.push_back(
      {"error rate (%)",
       {collect(history, "WER", "#2ca02c", "WER"), collect(history, "CER", "#9467bd", "CER")}});
  const Series acc = collect(history, "ACC", "#ff7f0e", "ACC");
  if (!acc.points.empty()) panels.push_back({"token accuracy", {acc}});
  panels.push_back({"learning rate", {collect(history, "lr", "#17becf", "lr")}});
  std::ostringstream svg;
  const int height = 30 + kHeight * static_cast<int>(panels.size());
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" "
         "fill=\"white\"/>\n<text x=\"8\" y=\"18\" font-size=\"13\">"
      << escape(title) << "</text>\n";
  int top = 30;
  for (const auto& [name, series] : panels) {
    panel(svg, top, name, series);
    top += kHeight;
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace masr::train

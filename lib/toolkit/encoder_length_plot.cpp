// lib/toolkit/encoder_length_plot.cpp
// Log-log panels drawn by hand: gridlines at 1, 2, 5 x 10^k (labelled at every one over short
// spans, at the decades over long ones), a line and dots per curve, p10-p90 whiskers, crosses for
// skipped lengths, a legend and footnotes below the panels.
#include "toolkit/encoder_length_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>

#include "core/xml_escape.h"

namespace masr::toolkit {
namespace {

constexpr int kWidth = 720, kLeft = 80, kRight = 150, kHeader = 52;
constexpr int kPanelHeight = 280, kTop = 14, kBottom = 46, kLine = 16;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kPanelHeight - kTop - kBottom;
const char* const kColors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f", v);
  return b;
}

// A tick value as people write it: 0.005, 0.1, 2, 500, 2000, 1e+05.
std::string tick_text(double v) {
  char b[32];
  if (v >= 1e5 || v < 1e-3) {
    std::snprintf(b, sizeof(b), "%.0e", v);
  } else {
    std::snprintf(b, sizeof(b), "%g", v);
  }
  return b;
}

// A logarithmic axis over [lo, hi] (positive), widened by a margin so end points are not on the
// frame; maps values to [0, 1].
struct LogAxis {
  double lo = 0, hi = 1;  // log10 of the ends

  static LogAxis over(double min_value, double max_value) {
    LogAxis a;
    a.lo = std::log10(min_value), a.hi = std::log10(max_value);
    if (a.hi - a.lo < 0.5) {
      const double mid = (a.lo + a.hi) / 2;
      a.lo = mid - 0.25, a.hi = mid + 0.25;
    }
    const double margin = 0.06 * (a.hi - a.lo);
    a.lo -= margin, a.hi += margin;
    return a;
  }
  double frac(double v) const { return (std::log10(v) - lo) / (hi - lo); }
  // m x 10^k within the axis (m = 1...9 over spans of about a decade, else 1, 2, 5), with whether
  // each gets a label (all of them over up to three decades, else the decades).
  std::vector<std::pair<double, bool>> ticks() const {
    std::vector<std::pair<double, bool>> out;
    const bool label_all = hi - lo <= 3.2;
    const std::vector<double> mantissas = hi - lo <= 1.2
                                              ? std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}
                                              : std::vector<double>{1, 2, 5};
    for (int k = static_cast<int>(std::floor(lo)); k <= static_cast<int>(std::ceil(hi)); ++k) {
      for (const double m : mantissas) {
        const double v = m * std::pow(10.0, k);
        const double l = std::log10(v);
        if (l >= lo && l <= hi) out.emplace_back(v, label_all || m == 1.0);
      }
    }
    return out;
  }
};

struct Panel {
  std::string y_label;
  std::function<double(const LengthPoint&)> value;  // <= 0: not drawn
  bool whiskers = false;
  bool guides = false;
};

double px(const LogAxis& x, double v) { return kLeft + x.frac(v) * kPlotW; }
double py(const LogAxis& y, double v) { return kTop + (1.0 - y.frac(v)) * kPlotH; }

void draw_grid(std::ostringstream& svg, const LogAxis& x, const LogAxis& y, const Panel& panel) {
  svg << "<g stroke=\"#e4e4e4\">\n";
  for (const auto& [v, labelled] : x.ticks()) {
    svg << "<line x1=\"" << num(px(x, v)) << "\" x2=\"" << num(px(x, v)) << "\" y1=\"" << kTop
        << "\" y2=\"" << kTop + kPlotH << "\"" << (labelled ? "" : " stroke-dasharray=\"2,3\"")
        << "/>\n";
  }
  for (const auto& [v, labelled] : y.ticks()) {
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotW << "\" y1=\"" << num(py(y, v))
        << "\" y2=\"" << num(py(y, v)) << "\"" << (labelled ? "" : " stroke-dasharray=\"2,3\"")
        << "/>\n";
  }
  svg << "</g>\n<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotW
      << "\" height=\"" << kPlotH << "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (const auto& [v, labelled] : x.ticks()) {
    if (!labelled) continue;
    svg << "<text x=\"" << num(px(x, v)) << "\" y=\"" << kTop + kPlotH + 15
        << "\" text-anchor=\"middle\">" << tick_text(v) << "</text>\n";
  }
  for (const auto& [v, labelled] : y.ticks()) {
    if (!labelled) continue;
    svg << "<text x=\"" << kLeft - 5 << "\" y=\"" << num(py(y, v) + 4) << "\" text-anchor=\"end\">"
        << tick_text(v) << "</text>\n";
  }
  svg << "<text x=\"" << num(kLeft + kPlotW / 2) << "\" y=\"" << kTop + kPlotH + 34
      << "\" text-anchor=\"middle\" fill=\"#444\">audio length (s, log scale)</text>\n"
      << "<text transform=\"translate(16," << num(kTop + kPlotH / 2)
      << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#444\">" << xml_escape(panel.y_label)
      << "</text>\n";
}

// Slopes 1 and 2 through the first drawable point of the first curve, clipped to the plot.
void draw_guides(std::ostringstream& svg, const LogAxis& x, const LogAxis& y, const Panel& panel,
                 const std::vector<LengthCurve>& curves, int clip_id) {
  if (curves.empty()) return;
  const LengthPoint* anchor = nullptr;
  for (const auto& p : curves.front().points) {
    if (p.measured && panel.value(p) > 0) {
      anchor = &p;
      break;
    }
  }
  if (anchor == nullptr) return;
  const double x0 = anchor->length_s, y0 = panel.value(*anchor);
  const double x1 = std::pow(10.0, x.hi);
  svg << "<g clip-path=\"url(#plot" << clip_id << ")\" stroke=\"#999\" stroke-dasharray=\"5,4\" "
      << "fill=\"#777\">\n";
  for (const int slope : {1, 2}) {
    const double y1 = y0 * std::pow(x1 / x0, slope);
    svg << "<line x1=\"" << num(px(x, x0)) << "\" y1=\"" << num(py(y, y0)) << "\" x2=\""
        << num(px(x, x1)) << "\" y2=\"" << num(py(y, y1)) << "\"/>\n";
  }
  svg << "</g>\n";
  // Labels where the guides leave the plot on the right, if they do there.
  for (const int slope : {1, 2}) {
    const double y1 = y0 * std::pow(x1 / x0, slope);
    if (y.frac(y1) < 0 || y.frac(y1) > 1) continue;
    svg << "<text x=\"" << num(kLeft + kPlotW + 4) << "\" y=\"" << num(py(y, y1) + 4)
        << "\" fill=\"#777\">"
        << (slope == 1 ? "\xe2\x88\x9d length" : "\xe2\x88\x9d length\xc2\xb2") << "</text>\n";
  }
}

void draw_curves(std::ostringstream& svg, const LogAxis& x, const LogAxis& y, const Panel& panel,
                 const std::vector<LengthCurve>& curves) {
  for (size_t c = 0; c < curves.size(); ++c) {
    const std::string color = kColors[c % (sizeof(kColors) / sizeof(kColors[0]))];
    std::ostringstream line, dots;
    for (const auto& p : curves[c].points) {
      if (!p.measured) {  // a cross on the top edge
        const double cx = px(x, p.length_s), cy = kTop + 4.0 * static_cast<double>(c) + 2;
        dots << "<path d=\"M" << num(cx - 4) << "," << num(cy - 4) << "l8,8m0,-8l-8,8\" stroke=\""
             << color << "\" stroke-width=\"2\"/>";
        continue;
      }
      const double v = panel.value(p);
      if (!(v > 0)) continue;
      line << num(px(x, p.length_s)) << "," << num(py(y, v)) << " ";
      dots << "<circle cx=\"" << num(px(x, p.length_s)) << "\" cy=\"" << num(py(y, v))
           << "\" r=\"3\" fill=\"" << color << "\"/>";
      if (panel.whiskers && p.p10_s > 0 && p.p90_s > p.p10_s) {
        dots << "<line x1=\"" << num(px(x, p.length_s)) << "\" x2=\"" << num(px(x, p.length_s))
             << "\" y1=\"" << num(py(y, p.p10_s)) << "\" y2=\"" << num(py(y, p.p90_s))
             << "\" stroke=\"" << color << "\"/>";
      }
    }
    svg << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << color << "\" points=\""
        << line.str() << "\"/>\n<g>" << dots.str() << "</g>\n";
  }
}

void draw_panel(std::ostringstream& svg, int top, const Panel& panel, const LogAxis& x,
                const std::vector<LengthCurve>& curves, int clip_id) {
  double lo = std::numeric_limits<double>::max(), hi = 0;
  for (const auto& curve : curves) {
    for (const auto& p : curve.points) {
      if (!p.measured || !(panel.value(p) > 0)) continue;
      lo = std::min(lo, panel.whiskers && p.p10_s > 0 ? p.p10_s : panel.value(p));
      hi = std::max(hi, panel.whiskers ? std::max(p.p90_s, panel.value(p)) : panel.value(p));
    }
  }
  svg << "<g transform=\"translate(0," << top << ")\">\n<clipPath id=\"plot" << clip_id
      << "\"><rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotW << "\" height=\""
      << kPlotH << "\"/></clipPath>\n";
  if (hi <= 0) {
    svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotW << "\" height=\""
        << kPlotH << "\" fill=\"none\" stroke=\"#888\"/>\n<text x=\"" << num(kLeft + kPlotW / 2)
        << "\" y=\"" << num(kTop + kPlotH / 2) << "\" text-anchor=\"middle\" fill=\"#666\">"
        << "nothing measured</text>\n</g>\n";
    return;
  }
  const LogAxis y = LogAxis::over(lo, hi);
  draw_grid(svg, x, y, panel);
  if (panel.guides) draw_guides(svg, x, y, panel, curves, clip_id);
  draw_curves(svg, x, y, panel, curves);
  svg << "</g>\n";
}

}  // namespace

std::string encoder_length_svg(const std::vector<LengthCurve>& curves, const std::string& title,
                               const std::string& subtitle, const std::string& memory_label) {
  double x_lo = std::numeric_limits<double>::max(), x_hi = 0;
  std::vector<std::string> notes;
  for (const auto& curve : curves) {
    for (const auto& p : curve.points) {
      if (!(p.length_s > 0)) continue;
      x_lo = std::min(x_lo, p.length_s), x_hi = std::max(x_hi, p.length_s);
      if (!p.measured)
        notes.push_back(curve.name + ", " + tick_text(p.length_s) + " s: " + p.reason);
    }
  }
  if (x_hi <= 0) x_lo = 1, x_hi = 10;
  const LogAxis x = LogAxis::over(x_lo, x_hi);
  const std::vector<Panel> panels = {
      {"encoder forward time (s)", [](const LengthPoint& p) { return p.median_s; }, true, true},
      {memory_label + " (MiB)",
       [](const LengthPoint& p) { return p.peak_bytes / (1024.0 * 1024.0); }, false, false}};
  const int legend_top = kHeader + kPanelHeight * static_cast<int>(panels.size()) + 8;
  const int height =
      legend_top +
      kLine * static_cast<int>(curves.size() + notes.size() + (notes.empty() ? 0 : 1)) + 12;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kWidth << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n<title>" << xml_escape(title)
      << "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(title)
      << "</text>\n<text x=\"10\" y=\"38\" fill=\"#444\">" << xml_escape(subtitle) << "</text>\n";
  int top = kHeader;
  for (size_t i = 0; i < panels.size(); ++i) {
    draw_panel(svg, top, panels[i], x, curves, static_cast<int>(i));
    top += kPanelHeight;
  }
  int row = legend_top;
  for (size_t c = 0; c < curves.size(); ++c, row += kLine) {
    const char* color = kColors[c % (sizeof(kColors) / sizeof(kColors[0]))];
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + 24 << "\" y1=\"" << row + 8 << "\" y2=\""
        << row + 8 << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>"
        << "<circle cx=\"" << kLeft + 12 << "\" cy=\"" << row + 8 << "\" r=\"3\" fill=\"" << color
        << "\"/><text x=\"" << kLeft + 32 << "\" y=\"" << row + 12 << "\">"
        << xml_escape(curves[c].label) << "</text>\n";
  }
  if (!notes.empty()) {
    svg << "<text x=\"" << kLeft << "\" y=\"" << row + 12 << "\" fill=\"#444\">"
        << "\xc3\x97 on a panel's top edge: not run</text>\n";
    row += kLine;
  }
  for (const auto& note : notes) {
    svg << "<text x=\"" << kLeft + 12 << "\" y=\"" << row + 12 << "\" fill=\"#444\">"
        << xml_escape(note) << "</text>\n";
    row += kLine;
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace masr::toolkit

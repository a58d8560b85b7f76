#include "common/eval/svg_plots.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vfsynth {
namespace {

constexpr char kFirstColour[] = "#1f77b4";
constexpr char kSecondColour[] = "#ff7f0e";

std::string Truncate(const std::string& text, size_t limit) {
  return text.size() <= limit ? text : text.substr(0, limit - 1) + "…";
}

// Linear blend between two RGB colours.
std::string Blend(int r0, int g0, int b0, int r1, int g1, int b1, double t) {
  t = std::clamp(t, 0.0, 1.0);
  return absl::StrFormat("rgb(%d,%d,%d)", static_cast<int>(r0 + (r1 - r0) * t),
                         static_cast<int>(g0 + (g1 - g0) * t),
                         static_cast<int>(b0 + (b1 - b0) * t));
}

std::string HeatColour(double v, double lo, double hi) {
  if (std::isnan(v)) return "#cccccc";
  if (lo < 0) {  // diverging around 0
    return v < 0 ? Blend(255, 255, 255, 33, 102, 172, v / lo)
                 : Blend(255, 255, 255, 178, 24, 43, v / hi);
  }
  return Blend(255, 255, 255, 178, 24, 43, (v - lo) / (hi - lo));
}

}  // namespace

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string SvgGroupedBars(absl::string_view title, const std::vector<std::string>& labels,
                           const std::vector<double>& first, const std::vector<double>& second,
                           absl::string_view first_name, absl::string_view second_name) {
  const int n = static_cast<int>(labels.size());
  const double left = 40, top = 28, plot_h = 140, label_h = 70;
  const double group_w = std::max(12.0, std::min(40.0, 420.0 / std::max(1, n)));
  const double width = left + group_w * n + 20, height = top + plot_h + label_h;
  double max_value = 0;
  for (double v : first) max_value = std::max(max_value, v);
  for (double v : second) max_value = std::max(max_value, v);
  if (max_value <= 0) max_value = 1;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\">",
      std::max(width, 260.0), height, std::max(width, 260.0), height);
  absl::StrAppend(&svg, "<text x=\"4\" y=\"14\" font-size=\"12\" font-weight=\"bold\">",
                  HtmlEscape(title), "</text>");
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%.0f\" y=\"18\" width=\"8\" height=\"8\" fill=\"%s\"/>"
                        "<text x=\"%.0f\" y=\"26\" font-size=\"10\">%s</text>"
                        "<rect x=\"%.0f\" y=\"18\" width=\"8\" height=\"8\" fill=\"%s\"/>"
                        "<text x=\"%.0f\" y=\"26\" font-size=\"10\">%s</text>",
                        left, kFirstColour, left + 11, HtmlEscape(first_name), left + 80,
                        kSecondColour, left + 91, HtmlEscape(second_name));
  const double base = top + plot_h;
  absl::StrAppendFormat(
      &svg,
      "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
      "<text x=\"%.0f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"end\">%.2f</text>",
      left, base, left + group_w * n, base, left - 3, top + 8, max_value);
  for (int i = 0; i < n; ++i) {
    const double x = left + group_w * i;
    const double bar_w = group_w * 0.4;
    const double h1 =
        plot_h * 0.9 * (i < static_cast<int>(first.size()) ? first[i] : 0) / max_value;
    const double h2 =
        plot_h * 0.9 * (i < static_cast<int>(second.size()) ? second[i] : 0) / max_value;
    absl::StrAppendFormat(
        &svg,
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>"
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>",
        x + group_w * 0.1, base - h1, bar_w, h1, kFirstColour, x + group_w * 0.5, base - h2, bar_w,
        h2, kSecondColour);
    const double lx = x + group_w / 2, ly = base + 8;
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"8\" text-anchor=\"end\" "
                          "transform=\"rotate(-45 %.1f %.1f)\">%s</text>",
                          lx, ly, lx, ly, HtmlEscape(Truncate(labels[i], 14)));
  }
  return svg + "</svg>";
}

std::string SvgHeatmap(absl::string_view title, const std::vector<std::string>& labels,
                       const std::vector<double>& matrix, double lo, double hi) {
  const int n = static_cast<int>(labels.size());
  const double cell = 18, left = 100, top = 24 + 100;
  const double legend_x = left + cell * n + 12;  // a colour bar from lo (bottom) to hi (top)
  const double size_w = legend_x + 50, size_h = top + std::max(cell * n, 100.0) + 10;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\">",
      size_w, size_h, size_w, size_h);
  absl::StrAppend(&svg, "<text x=\"4\" y=\"14\" font-size=\"12\" font-weight=\"bold\">",
                  HtmlEscape(title), "</text>");
  for (int i = 0; i < n; ++i) {
    const std::string label = HtmlEscape(Truncate(labels[i], 16));
    absl::StrAppendFormat(
        &svg, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"end\">%s</text>", left - 3,
        top + cell * i + cell * 0.7, label);
    const double x = left + cell * i + cell * 0.6, y = top - 4;
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" "
                          "transform=\"rotate(-60 %.1f %.1f)\">%s</text>",
                          x, y, x, y, label);
    for (int j = 0; j < n; ++j) {
      const double v = matrix[i * n + j];
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                            "fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>%s / %s: "
                            "%.3f</title></rect>",
                            left + cell * j, top + cell * i, cell, cell, HeatColour(v, lo, hi),
                            HtmlEscape(labels[i]), HtmlEscape(labels[j]), v);
    }
  }
  constexpr int kStops = 10;
  const double stop_h = 10;
  svg += "<g class=\"legend\">";
  for (int k = 0; k < kStops; ++k) {
    const double v = hi - (hi - lo) * (k + 0.5) / kStops;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"%.1f\" fill=\"%s\"/>",
                          legend_x, top + stop_h * k, stop_h, HeatColour(v, lo, hi));
  }
  for (const auto& [value, y] :
       {std::pair{hi, top + 8}, std::pair{(lo + hi) / 2, top + stop_h * kStops / 2 + 3},
        std::pair{lo, top + stop_h * kStops}}) {
    absl::StrAppendFormat(&svg, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\">%g</text>",
                          legend_x + 15, y, value);
  }
  return svg + "</g></svg>";
}

}  // namespace vfsynth

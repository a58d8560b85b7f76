#ifndef VFSYNTH_COMMON_EVAL_SVG_PLOTS_H_
#define VFSYNTH_COMMON_EVAL_SVG_PLOTS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace vfsynth {

// Inline-SVG charts for the self-contained HTML report (no scripts, no network).

std::string HtmlEscape(absl::string_view text);

// Two series of bars side by side per label (e.g. real vs synthetic frequencies).
std::string SvgGroupedBars(absl::string_view title, const std::vector<std::string>& labels,
                           const std::vector<double>& first, const std::vector<double>& second,
                           absl::string_view first_name, absl::string_view second_name);

// Square heatmap of an n x n row-major matrix; colours map [lo, hi] onto
// blue-white-red when lo < 0, else white-red. NaN cells are grey.
std::string SvgHeatmap(absl::string_view title, const std::vector<std::string>& labels,
                       const std::vector<double>& matrix, double lo, double hi);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_SVG_PLOTS_H_

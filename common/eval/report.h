#ifndef VFSYNTH_COMMON_EVAL_REPORT_H_
#define VFSYNTH_COMMON_EVAL_REPORT_H_

#include <string>

#include "common/eval/evaluate.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// The self-contained report.html (inline CSS and SVG, no scripts, no network):
// summary, per-column marginals real vs synthetic, association heatmaps (real,
// synthetic, |difference|), utility table, DCR histogram.
std::string RenderReportHtml(const EvalResult& result, const v1::Schema& schema);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_REPORT_H_

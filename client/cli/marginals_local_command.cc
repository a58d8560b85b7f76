#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/command_registry.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/csv.h"
#include "common/gan/model_factory.h"
#include "common/gan/reference_trainer.h"
#include "common/gan/stream_purposes.h"
#include "common/marginals/central_measurement.h"
#include "common/marginals/marginal_fit.h"
#include "common/privacy/measurement_plan.h"
#include "common/privacy/privacy_plan.h"
#include "common/random/random_tensors.h"

ABSL_DECLARE_FLAG(std::string, config);
ABSL_DECLARE_FLAG(std::string, output);
ABSL_DECLARE_FLAG(int64_t, rows);
ABSL_DECLARE_FLAG(double, epsilon);
ABSL_DECLARE_FLAG(double, delta);
ABSL_DECLARE_FLAG(int64_t, steps);
ABSL_DECLARE_FLAG(int64_t, batch_size);
ABSL_FLAG(int64_t, pair_cells, -1,
          "marginals-local: privacy.measurement.max_pair_cells (-1: the default)");
ABSL_FLAG(double, pair_weight, -1, "marginals-local: privacy.measurement.pair_weight");
ABSL_FLAG(double, label_pair_weight, -1,
          "marginals-local: privacy.measurement.label_pair_weight");
ABSL_FLAG(int, pair_bins, 0, "marginals-local: privacy.measurement.pair_bins (0: the default)");
ABSL_FLAG(double, fit_lr, 1e-3, "marginals-local: Adam learning rate of the fit");
ABSL_FLAG(bool, label_full, false, "marginals-local (experiment): label pairs unmerged");
ABSL_FLAG(int, consistency, 0, "marginals-local (experiment): consistency rounds of the counts");
ABSL_FLAG(double, select_kd, 0,
          "marginals-local (experiment): two-phase selection of ceil(kd x columns) non-label pairs "
          "(0: off)");
ABSL_FLAG(double, select_share, 0.25,
          "marginals-local (experiment): phase 1's share of the non-label pairs' rho");
ABSL_FLAG(bool, select_keep_rest, false,
          "marginals-local (experiment): unselected pairs keep their phase-1 counts in the fit");

namespace vfsynth {
namespace {

absl::Status RunMarginalsLocalCommand(const std::vector<std::string>& /*args*/) {
  if (absl::GetFlag(FLAGS_config).empty() || absl::GetFlag(FLAGS_output).empty()) {
    return absl::InvalidArgumentError("marginals-local needs --config and --output");
  }
  ASSIGN_OR_RETURN(v1::LocalRunConfig config, LoadLocalRunConfig(absl::GetFlag(FLAGS_config)));
  ASSIGN_OR_RETURN(auto reference, ReferenceTrainer::Create(config));
  std::vector<const TableEncoder*> encoders;
  std::vector<torch::Tensor> tables;
  for (const ReferenceTrainer::Party& party : reference->parties()) {
    encoders.push_back(&party.data.encoder);
    tables.push_back(party.table);
  }
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::marginals);
  privacy.set_epsilon(absl::GetFlag(FLAGS_epsilon));
  if (absl::GetFlag(FLAGS_delta) > 0) privacy.set_delta(absl::GetFlag(FLAGS_delta));
  v1::MeasurementConfig* settings = privacy.mutable_measurement();
  if (absl::GetFlag(FLAGS_pair_cells) >= 0) settings->set_max_pair_cells(absl::GetFlag(FLAGS_pair_cells));
  if (absl::GetFlag(FLAGS_pair_weight) >= 0) settings->set_pair_weight(absl::GetFlag(FLAGS_pair_weight));
  if (absl::GetFlag(FLAGS_label_pair_weight) >= 0)
    settings->set_label_pair_weight(absl::GetFlag(FLAGS_label_pair_weight));
  if (absl::GetFlag(FLAGS_pair_bins) > 0) settings->set_pair_bins(absl::GetFlag(FLAGS_pair_bins));
  RETURN_IF_ERROR(ResolvePrivacyConfig(&privacy));
  const marginals::MeasuredLayout layout =
      marginals::LayoutOf(encoders, config.training().label_column(), privacy.measurement());
  ASSIGN_OR_RETURN(const v1::PrivacyPlan plan,
                   ResolveMarginalsPlan(privacy, config.training(), layout.columns,
                                        static_cast<int>(encoders.size()),
                                        reference->aligned_rows()));
  int cross = 0;
  for (const v1::MeasuredHistogram& m : plan.measurements()) cross += m.cross_party() ? 1 : 0;
  spdlog::info("epsilon {} (delta {}): {} histograms ({} across parties), 1-way sigma {:.1f}",
               plan.guarantees(0).epsilon_planned(), plan.privacy().delta(),
               plan.measurements_size(), cross, plan.measurements(0).sigma());
  const bool label_full = absl::GetFlag(FLAGS_label_full);
  ASSIGN_OR_RETURN(const MarginalTarget shape,
                   marginals::ReleaseShape(layout.blocks, plan, label_full));
  ASSIGN_OR_RETURN(SecureRandom noise, SecureRandom::FromOsEntropy());
  const int64_t records = reference->aligned_rows();
  ASSIGN_OR_RETURN(const std::vector<torch::Tensor> exact,
                   marginals::MeasureCounts(torch::cat(tables, 1), shape, plan, nullptr));
  const int columns = plan.columns_size();
  auto holders = [&](int k) { return plan.measurements(k).cross_party() ? 2.0 : 1.0; };
  auto is_label_pair = [&](int k) {
    const auto& c = plan.measurements(k).columns();
    return c.size() == 2 && (plan.columns(c[0]).label() || plan.columns(c[1]).label());
  };
  std::vector<torch::Tensor> counts;
  std::vector<double> variances;
  std::vector<bool> keep(plan.measurements_size(), true);
  for (int k = 0; k < plan.measurements_size(); ++k) {
    const double v = plan.measurements(k).sigma() * plan.measurements(k).sigma() * holders(k);
    counts.push_back(exact[k] + GaussianTensor(noise, exact[k].sizes(), std::sqrt(v), torch::kDouble));
    variances.push_back(v);
  }
  const double kd = absl::GetFlag(FLAGS_select_kd);
  double spent = 0;
  if (kd > 0) {
    std::vector<int> candidates;
    double pair_rho = 0;
    for (int k = columns; k < plan.measurements_size(); ++k) {
      if (is_label_pair(k)) continue;
      candidates.push_back(k);
      pair_rho += 1.0 / (plan.measurements(k).sigma() * plan.measurements(k).sigma());
    }
    const double share = absl::GetFlag(FLAGS_select_share);
    const int chosen = std::min<int>(static_cast<int>(std::ceil(kd * columns)), candidates.size());
    const double sigma1 = std::sqrt(candidates.size() / (share * pair_rho));
    const double sigma2 = std::sqrt(chosen / ((1 - share) * pair_rho));
    std::vector<std::pair<double, int>> scores;
    for (const int k : candidates) {
      const double v1 = sigma1 * sigma1 * holders(k);
      counts[k] = exact[k] + GaussianTensor(noise, exact[k].sizes(), std::sqrt(v1), torch::kDouble);
      variances[k] = v1;
      spent += 1.0 / (sigma1 * sigma1);
      // Noisy L1 distance from independence (post-processing of the phase-1 counts), less
      // its expected value under pure noise.
      const auto& c = plan.measurements(k).columns();
      const int64_t cells = counts[k].size(0);
      const int64_t rows_a = plan.columns(c[0]).pair_width() > 0 ? plan.columns(c[0]).pair_width()
                                                                 : plan.columns(c[0]).width();
      const torch::Tensor table = counts[k].reshape({rows_a, cells / rows_a});
      const double n = static_cast<double>(records);
      const torch::Tensor r = table.sum(1).clamp_min(0), col = table.sum(0).clamp_min(0);
      const torch::Tensor indep = r.unsqueeze(1) * col.unsqueeze(0) /
                                  std::max(1.0, r.sum().item<double>()) *
                                  (n / std::max(1.0, col.sum().item<double>()));
      const double l1 = (table - indep).abs().sum().item<double>() -
                        cells * std::sqrt(v1) * std::sqrt(2.0 / M_PI);
      scores.push_back({l1, k});
    }
    std::sort(scores.rbegin(), scores.rend());
    std::vector<std::string> names;
    for (const auto& column : plan.columns()) names.push_back(column.name());
    for (size_t i = 0; i < scores.size(); ++i) {
      const int k = scores[i].second;
      if (static_cast<int>(i) < chosen) {
        const double v2 = sigma2 * sigma2 * holders(k);
        const torch::Tensor y2 =
            exact[k] + GaussianTensor(noise, exact[k].sizes(), std::sqrt(v2), torch::kDouble);
        const double v1 = variances[k];
        counts[k] = (counts[k] / v1 + y2 / v2) / (1 / v1 + 1 / v2);
        variances[k] = 1 / (1 / v1 + 1 / v2);
        spent += 1.0 / (sigma2 * sigma2);
        spdlog::info("selected {} (score {:.0f})", privacy::MeasurementName(
            {{plan.measurements(k).columns(0), plan.measurements(k).columns(1)}}, names),
            scores[i].first);
      } else if (!absl::GetFlag(FLAGS_select_keep_rest)) {
        keep[k] = false;
      }
    }
    spdlog::info("two-phase: {} candidates, {} chosen, sigma1 {:.1f} sigma2 {:.1f}; pairs rho {:.5f} "
                 "spent {:.5f}", candidates.size(), chosen, sigma1, sigma2, pair_rho, spent);
  }
  v1::PrivacyPlan kept_plan = plan;
  kept_plan.clear_measurements();
  std::vector<torch::Tensor> kept_counts;
  std::vector<double> kept_variances;
  for (int k = 0; k < plan.measurements_size(); ++k) {
    if (!keep[k]) continue;
    *kept_plan.add_measurements() = plan.measurements(k);
    kept_counts.push_back(counts[k]);
    kept_variances.push_back(variances[k]);
  }
  ASSIGN_OR_RETURN(const MarginalTarget kept_shape,
                   marginals::ReleaseShape(layout.blocks, kept_plan, label_full));
  ASSIGN_OR_RETURN(const MarginalTarget target,
                   marginals::TargetFromCounts(kept_shape, kept_counts, records, kept_variances,
                                               absl::GetFlag(FLAGS_consistency)));
  Generator generator = MakeGenerator(config.model(), config.training(), encoders);
  auto optimizer =
      MakeAdam(generator->parameters(), absl::GetFlag(FLAGS_fit_lr), config.training());
  marginals::FitOptions fit;
  fit.steps = absl::GetFlag(FLAGS_steps) > 0 ? absl::GetFlag(FLAGS_steps) : 2000;
  fit.batch_size = absl::GetFlag(FLAGS_batch_size);
  fit.learning_rate = absl::GetFlag(FLAGS_fit_lr);
  fit.reverse_weight = config.training().experimental().marginal_reverse_weight();
  fit.stream_key = CuratorStreamKey(config.training().seed());
  RETURN_IF_ERROR(marginals::FitGenerator(
      generator, *optimizer, target, fit, 0, 200, [](const marginals::FitProgress& p) {
        spdlog::info("fit step {}/{}: loss {:.4f}", p.step, p.steps, p.loss);
      }));
  const int64_t rows =
      absl::GetFlag(FLAGS_rows) > 0 ? absl::GetFlag(FLAGS_rows) : reference->aligned_rows();
  generator->eval();
  const CsvTable synthetic =
      DecodeJoint(SampleSynthetic(generator, config.training().seed(), rows), encoders);
  RETURN_IF_ERROR(WriteCsv(absl::GetFlag(FLAGS_output), synthetic));
  spdlog::info("wrote {} rows to {}", rows, absl::GetFlag(FLAGS_output));
  return absl::OkStatus();
}

const CommandRegistration kRegistration(
    "marginals-local",
    {"marginals-local --config C.json --epsilon E [--delta D] [--steps N] [--batch_size B] "
     "--output F.csv",
     &RunMarginalsLocalCommand});

}  // namespace
}  // namespace vfsynth

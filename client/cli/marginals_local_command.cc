#include <spdlog/spdlog.h>

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
#include "common/privacy/privacy_plan.h"

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
ABSL_FLAG(int, consistency, 0,
          "marginals-local (experiment): rounds making the noised counts consistent before the "
          "fit (docs/decisions/measured-marginals.md)");
ABSL_FLAG(bool, label_full, false,
          "marginals-local (experiment): label pairs measured at the numeric columns' full bins");

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
  ASSIGN_OR_RETURN(const MarginalTarget shape,
                   marginals::ReleaseShape(layout.blocks, plan, absl::GetFlag(FLAGS_label_full)));
  ASSIGN_OR_RETURN(SecureRandom noise, SecureRandom::FromOsEntropy());
  ASSIGN_OR_RETURN(const std::vector<torch::Tensor> counts,
                   marginals::MeasureCounts(torch::cat(tables, 1), shape, plan, &noise));
  ASSIGN_OR_RETURN(const MarginalTarget target,
                   marginals::TargetFromCounts(shape, counts, reference->aligned_rows(),
                                               marginals::ReleaseVariances(plan),
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
      SampleSyntheticTable(generator, config.training().seed(), rows, encoders);
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

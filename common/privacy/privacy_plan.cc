#include "common/privacy/privacy_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/privacy/accountant.h"
#include "common/privacy/calibrator.h"
#include "common/privacy/measurement_plan.h"
#include "common/privacy/rdp.h"
#include "common/secure/discrete_gaussian.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "common/privacy/measurement_plan.h"
#include "common/privacy/calibrator.h"
#include "google/protobuf/message.h"

namespace vfsynth {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// ε of the plan's releases over the first `rounds` rounds, with `shape`, as `view` sees them.
absl::StatusOr<double> PlanEpsilon(const v1::PrivacyPlan& plan, const privacy::RunShape& shape,
                                   int64_t rounds, privacy::View view) {
  RETURN_IF_ERROR(privacy::ValidateMode(plan.privacy().mode()));
  ASSIGN_OR_RETURN(const privacy::Conversion conversion,
                   privacy::ConversionOf(plan.privacy().experimental().conversion()));
  ASSIGN_OR_RETURN(const privacy::EpsilonAndOrder epsilon,
                   privacy::RunEpsilon(plan.privacy().mode(), plan.noise_multiplier(), shape,
                                       rounds, view, plan.privacy().delta(), conversion));
  return epsilon.epsilon;
}

// The one-off releases every party makes (charged first) before round 0: the marginals,
// and with them the label pairs (the accountant's marginal mechanism carries both).
bool HasOneOffReleases(const v1::PrivacyPlan& plan) { return plan.marginal_noise_multiplier() > 0; }

bool IsHorizontal(const v1::PrivacyPlan& plan) {
  return privacy::IsHorizontalMode(plan.privacy().mode());
}

// What every vertical plan states first: the settings (without the party-local ledger
// path), the parties, records, batch, rounds and label column.
v1::PrivacyPlan PlanHeader(const v1::PrivacyConfig& privacy, const v1::TrainingConfig& training,
                           int parties, int64_t records) {
  v1::PrivacyPlan plan;
  *plan.mutable_privacy() = privacy;
  plan.mutable_privacy()->clear_ledger();
  plan.set_parties(parties);
  plan.set_records(records);
  plan.set_batch_size(training.batch_size());
  plan.set_rounds(training.rounds());
  plan.set_label_column(training.label_column());
  return plan;
}

bool IsMeasured(const v1::PrivacyPlan& plan) { return IsMeasuredMode(plan.privacy().mode()); }

// The Gaussian noise multiplier whose one release costs the zCDP ρ of `histograms`: each
// histogram's replace-one sensitivity is √2, so ρ = Σ 2/(2σ²), and one Gaussian of
// multiplier z costs 1/(2z²).
absl::StatusOr<double> MeasurementsNoiseMultiplier(
    const google::protobuf::RepeatedPtrField<v1::MeasuredHistogram>& histograms) {
  double rho = 0;
  for (const v1::MeasuredHistogram& histogram : histograms) {
    if (!(histogram.sigma() > 0) || !std::isfinite(histogram.sigma())) {
      return absl::InvalidArgumentError(
          absl::StrCat("a measured histogram's noise must be > 0, got ", histogram.sigma()));
    }
    rho += 1.0 / (histogram.sigma() * histogram.sigma());
  }
  if (!(rho > 0)) return absl::InvalidArgumentError("the plan measures nothing");
  return 1.0 / std::sqrt(2 * rho);
}

// ε of every measurement of a measured-marginals plan, composed (all of them, once:
// no sampling, so no amplification for any observer).
absl::StatusOr<double> MeasurementsEpsilon(const v1::PrivacyPlan& plan) {
  ASSIGN_OR_RETURN(const double z, MeasurementsNoiseMultiplier(plan.measurements()));
  ASSIGN_OR_RETURN(const privacy::Conversion conversion,
                   privacy::ConversionOf(plan.privacy().experimental().conversion()));
  privacy::StepMechanism mechanism;
  mechanism.noise_multipliers = {z};
  ASSIGN_OR_RETURN(const privacy::EpsilonAndOrder epsilon,
                   privacy::ComputeEpsilon(mechanism, 1, plan.privacy().delta(), conversion));
  return epsilon.epsilon;
}

// signds: a user answers at most participation_cap rounds, each pure ε_r-LDP (the answer
// is a function of nothing but the user's rows, the broadcast model and the party's coins),
// so after `rounds` rounds the worst-off user has spent min(rounds, cap) · ε_r against
// everyone: sequential composition, no amplification claimed.
// dpfedavg: every round releases, about a user, one Poisson-subsampled Gaussian: its
// party's noised sum, in which the user is with probability q = users_per_round / users,
// drawn from the party's secret. The run publishes its user counts, so the adjacency is
// replace-one: the noise is z times the sum's sensitivity 2C (DpFedAvgSensitivity).
// Nobody but that party learns who was drawn, so the amplified ε holds against every
// observer, the curator and other parties included.
absl::StatusOr<double> HorizontalEpsilonAfter(const v1::PrivacyPlan& plan, int64_t rounds) {
  if (plan.privacy().mode() == v1::PrivacyConfig::signds) {
    return static_cast<double>(std::min<int64_t>(rounds, plan.horizontal().participation_cap())) *
           EpsilonPerAnswer(plan);
  }
  if (rounds == 0) return 0.0;
  ASSIGN_OR_RETURN(const privacy::EpsilonAndOrder epsilon,
                   privacy::ComputeEpsilon(DpFedAvgMechanism(plan), rounds, plan.privacy().delta(),
                                           privacy::Conversion::kImproved));
  return epsilon.epsilon;
}

absl::StatusOr<std::optional<double>> ViewEpsilon(const v1::PrivacyPlan& plan, Observer observer,
                                                  int64_t rounds) {
  if (IsHorizontal(plan)) {
    ASSIGN_OR_RETURN(const double epsilon, HorizontalEpsilonAfter(plan, rounds));
    return epsilon;
  }
  const privacy::ModeTraits::View& view = privacy::TraitsOf(plan.privacy().mode()).view(observer);
  if (view.protection == privacy::Protection::kNotDp) return std::nullopt;
  // Measured before the first fit step; the fit is post-processing.
  if (view.protection == privacy::Protection::kMeasured) return MeasurementsEpsilon(plan);
  if (rounds == 0 && !HasOneOffReleases(plan)) return 0.0;
  ASSIGN_OR_RETURN(const double epsilon,
                   PlanEpsilon(plan, PlanShape(plan), rounds,
                               view.protection == privacy::Protection::kAmplified
                                   ? privacy::View::kJoint
                                   : privacy::View::kAgainstParties));
  return epsilon;
}

std::string Number(double value) { return absl::StrFormat("%.10g", value); }

std::string ScalarText(const Message& message, const FieldDescriptor* field, int index) {
  const Reflection* r = message.GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrFormat("%.17g", repeated ? r->GetRepeatedDouble(message, field, index)
                                               : r->GetDouble(message, field));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrFormat("%.9g", repeated ? r->GetRepeatedFloat(message, field, index)
                                              : r->GetFloat(message, field));
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(repeated ? r->GetRepeatedInt32(message, field, index)
                                   : r->GetInt32(message, field));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(repeated ? r->GetRepeatedInt64(message, field, index)
                                   : r->GetInt64(message, field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(repeated ? r->GetRepeatedUInt32(message, field, index)
                                   : r->GetUInt32(message, field));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(repeated ? r->GetRepeatedUInt64(message, field, index)
                                   : r->GetUInt64(message, field));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field))
                 ? "true"
                 : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return (repeated ? r->GetRepeatedEnum(message, field, index) : r->GetEnum(message, field))
          ->name();
    case FieldDescriptor::CPPTYPE_STRING:
      return absl::StrCat(
          "'",
          repeated ? r->GetRepeatedString(message, field, index) : r->GetString(message, field),
          "'");
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "(message)";
}

// Doubles print with as many digits as tell the two apart.
void ShortenNumbers(std::string* ours, std::string* theirs) {
  double a = 0, b = 0;
  if (std::sscanf(ours->c_str(), "%lf", &a) != 1 || std::sscanf(theirs->c_str(), "%lf", &b) != 1)
    return;
  if (Number(a) != Number(b)) {
    *ours = Number(a);
    *theirs = Number(b);
  }
}

struct Difference {
  std::string path;
  std::string ours;
  std::string theirs;
};

std::optional<Difference> FirstDifference(const Message& ours, const Message& theirs,
                                          const std::string& prefix) {
  const google::protobuf::Descriptor* descriptor = ours.GetDescriptor();
  const Reflection* r = ours.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    const std::string path = absl::StrCat(prefix, field->name());
    const bool message = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (field->is_repeated()) {
      const int n = r->FieldSize(ours, field);
      const int m = r->FieldSize(theirs, field);
      for (int j = 0; j < std::min(n, m); ++j) {
        const std::string item = absl::StrCat(path, "[", j, "]");
        if (message) {
          auto difference = FirstDifference(r->GetRepeatedMessage(ours, field, j),
                                            r->GetRepeatedMessage(theirs, field, j), item + ".");
          if (difference.has_value()) return difference;
        } else if (ScalarText(ours, field, j) != ScalarText(theirs, field, j)) {
          return Difference{item, ScalarText(ours, field, j), ScalarText(theirs, field, j)};
        }
      }
      if (n != m) return Difference{path, absl::StrCat(n, " entries"), absl::StrCat(m, " entries")};
      continue;
    }
    const bool has_ours = !field->has_presence() || r->HasField(ours, field);
    const bool has_theirs = !field->has_presence() || r->HasField(theirs, field);
    if (has_ours != has_theirs) {
      return Difference{path, has_ours ? (message ? "set" : ScalarText(ours, field, -1)) : "unset",
                        has_theirs ? (message ? "set" : ScalarText(theirs, field, -1)) : "unset"};
    }
    if (!has_ours) continue;
    if (message) {
      auto difference =
          FirstDifference(r->GetMessage(ours, field), r->GetMessage(theirs, field), path + ".");
      if (difference.has_value()) return difference;
    } else if (ScalarText(ours, field, -1) != ScalarText(theirs, field, -1)) {
      return Difference{path, ScalarText(ours, field, -1), ScalarText(theirs, field, -1)};
    }
  }
  return std::nullopt;
}

}  // namespace

std::string ObserverName(Observer observer) {
  switch (observer) {
    case Observer::kPublished:
      return "published";
    case Observer::kCurator:
      return "curator";
    case Observer::kOtherParty:
      return "other_party";
    case Observer::kCuratorWithParty:
      return "curator_with_party";
  }
  return "unknown";
}

privacy::RunShape PlanShape(const v1::PrivacyPlan& plan) {
  privacy::RunShape shape;
  shape.parties = plan.parties();
  shape.records = plan.records();
  shape.batch_size = plan.batch_size();
  shape.n_critic = plan.n_critic();
  shape.critic_steps = plan.rounds() * plan.n_critic();
  const v1::EnsembleConfig& ensemble = plan.privacy().ensemble();
  shape.ensemble = privacy::MakeEnsembleShape(plan.privacy().mode(), ensemble.shards(),
                                              ensemble.experimental().vote_aggregation(),
                                              ensemble.experimental().projection_dim());
  shape.marginal_noise_multiplier = plan.marginal_noise_multiplier();
  shape.label_epsilon = plan.label_epsilon();
  shape.shared_critic_share = plan.privacy().experimental().shared_critic_budget_share();
  return shape;
}

namespace {

// zCDP's ρ of an (ε, δ) budget (Bun & Steinke's conversion, solved for ρ): a scale for
// the one-off releases' shares only; the run's ε is still composed exactly from RDP
// (run_accounting.h).
double BudgetRho(const v1::PrivacyConfig& privacy) {
  const double log_inverse_delta = std::log(1.0 / privacy.delta());
  const double root =
      std::sqrt(log_inverse_delta + privacy.epsilon()) - std::sqrt(log_inverse_delta);
  return root * root;
}

}  // namespace

double MarginalNoiseMultiplier(const v1::PrivacyConfig& privacy, const v1::TrainingConfig& training,
                               int parties) {
  if (training.marginal_weight() <= 0) return 0;
  if (privacy.has_marginal_noise_multiplier()) return privacy.marginal_noise_multiplier();
  if (!privacy.has_epsilon() || parties < 1) return 30.0;
  // With label pairs the K - 1 parties without the label release their tables too.
  const int releases = parties + (training.label_column().empty() ? 0 : parties - 1);
  return std::sqrt(releases / (2.0 * privacy.marginal_budget_share() * BudgetRho(privacy)));
}

double LabelEpsilon(const v1::PrivacyConfig& privacy, const v1::TrainingConfig& training) {
  if (training.label_column().empty() || training.marginal_weight() <= 0) return 0;
  if (!privacy::TraitsOf(privacy.mode()).may_release_label_pairs) return 0;
  if (privacy.has_label_epsilon()) return privacy.label_epsilon();
  if (!privacy.has_epsilon()) return kLabelEpsilonWithoutBudget;
  const double share = privacy.experimental().label_budget_share();
  const double rho = BudgetRho(privacy);
  // ρ-zCDP converts to (ε, δ) best at this order; the run's composition ends up near it.
  const double order = 1.0 + std::sqrt(std::log(1.0 / privacy.delta()) / rho);
  return privacy::RandomizedResponseEpsilonForRdp(order * share * rho, order);
}

absl::StatusOr<v1::PrivacyPlan> ResolvePrivacyPlan(const v1::PrivacyConfig& privacy,
                                                   const v1::TrainingConfig& training, int parties,
                                                   int64_t records) {
  if (parties < 1 || records < training.batch_size() || training.batch_size() < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot plan privacy for ", parties, " parties, ", records,
                     " records and batch size ", training.batch_size()));
  }
  const privacy::Mode mode = privacy.mode();
  RETURN_IF_ERROR(privacy::ValidateMode(mode));
  if (IsMeasuredMode(mode)) {
    return absl::InvalidArgumentError(
        "privacy mode 'marginals' is planned from the parties' columns (its histograms and their "
        "noise depend on them): ResolveMarginalsPlan; beforehand `vfsynth privacy plan --mode "
        "marginals --schema S --parties P` shows it");
  }
  v1::PrivacyPlan plan = PlanHeader(privacy, training, parties, records);
  plan.set_n_critic(training.n_critic());
  if (privacy::TraitsOf(mode).ledger != privacy::Ledger::kNone) {
    plan.set_marginal_noise_multiplier(MarginalNoiseMultiplier(privacy, training, parties));
    plan.set_label_epsilon(LabelEpsilon(privacy, training));
    const privacy::RunShape shape = PlanShape(plan);
    double z = privacy.noise_multiplier();
    if (!privacy.has_noise_multiplier()) {
      ASSIGN_OR_RETURN(const privacy::Conversion conversion,
                       privacy::ConversionOf(privacy.experimental().conversion()));
      ASSIGN_OR_RETURN(z, privacy::CalibrateRunNoise(mode, privacy.epsilon(), privacy.delta(),
                                                     conversion, shape));
    }
    const privacy::ReleaseNoise split = privacy::SplitReleaseNoise(mode, z, shape);
    plan.set_noise_multiplier(z);
    plan.set_party_noise_multiplier(split.party);
    if (privacy::TraitsOf(mode).curator_releases_per_step > 0) {
      plan.set_shared_critic_noise_multiplier(split.shared_critic);
    }
  }
  for (Observer observer : kObservers) {
    v1::ObserverGuarantee* guarantee = plan.add_guarantees();
    guarantee->set_observer(ObserverName(observer));
    ASSIGN_OR_RETURN(const std::optional<double> epsilon,
                     ViewEpsilon(plan, observer, plan.rounds()));
    if (epsilon.has_value()) {
      guarantee->set_epsilon_planned(*epsilon);
    } else {
      guarantee->set_not_dp(privacy::TraitsOf(mode).view(observer).not_dp);
    }
  }
  return plan;
}

bool IsMeasuredMode(privacy::Mode mode) {
  return privacy::TraitsOf(mode).ledger == privacy::Ledger::kMeasurements;
}

absl::StatusOr<v1::PrivacyPlan> ResolveMarginalsPlan(const v1::PrivacyConfig& privacy,
                                                     const v1::TrainingConfig& training,
                                                     std::vector<v1::PlannedColumn> columns,
                                                     int parties, int64_t records) {
  if (!IsMeasuredMode(privacy.mode())) {
    return absl::InvalidArgumentError(absl::StrCat("a measured-marginals plan needs privacy mode "
                                                   "'marginals', not '",
                                                   privacy::ModeName(privacy.mode()), "'"));
  }
  if (parties < 1 || records < 1 || !(privacy.epsilon() > 0) || !(privacy.delta() > 0)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot plan measured marginals for ", parties, " parties, ", records,
        " records, epsilon ", privacy.epsilon(), " and delta ", privacy.delta()));
  }
  std::vector<privacy::PlannedBlock> blocks;
  for (const v1::PlannedColumn& column : columns) {
    if (column.party() < 0 || column.party() >= parties) {
      return absl::InvalidArgumentError(absl::StrCat("column '", column.name(), "' names party ",
                                                     column.party(), " of ", parties));
    }
    blocks.push_back(
        {column.party(), column.width(), column.cells(), column.label(), column.pair_width()});
  }
  ASSIGN_OR_RETURN(const privacy::Conversion conversion,
                   privacy::ConversionOf(privacy.experimental().conversion()));
  privacy::CalibrationTarget budget;
  budget.epsilon = privacy.epsilon();
  budget.delta = privacy.delta();
  budget.sample_rate = 1;
  budget.steps = 1;
  budget.conversion = conversion;
  ASSIGN_OR_RETURN(const double z, privacy::CalibrateNoiseMultiplier(budget));
  privacy::PlanOptions options;
  options.rho = 1.0 / (2 * z * z);
  options.max_pair_cells = privacy.measurement().max_pair_cells();
  options.pair_weight = privacy.measurement().pair_weight();
  options.label_pair_weight = privacy.measurement().label_pair_weight();
  ASSIGN_OR_RETURN(const std::vector<privacy::Measurement> measurements,
                   privacy::PlanMeasurements(blocks, options));

  v1::PrivacyPlan plan = PlanHeader(privacy, training, parties, records);
  plan.set_noise_multiplier(z);
  for (v1::PlannedColumn& column : columns) *plan.add_columns() = std::move(column);
  for (const privacy::Measurement& measurement : measurements) {
    // Refused here, before any party charges it, rather than by the sampler afterwards.
    if (measurement.sigma > secure::kMaxDiscreteGaussianSigma) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the plan would noise a histogram with sigma ", measurement.sigma, " > ",
          secure::kMaxDiscreteGaussianSigma,
          ": raise privacy.epsilon or measure fewer histograms (privacy.measurement)"));
    }
    v1::MeasuredHistogram* histogram = plan.add_measurements();
    for (const int block : measurement.blocks) histogram->add_columns(block);
    histogram->set_cells(measurement.cells);
    histogram->set_cross_party(measurement.cross_party);
    histogram->set_sigma(measurement.sigma);
  }
  ASSIGN_OR_RETURN(const double epsilon, MeasurementsEpsilon(plan));
  for (Observer observer : kObservers) {
    v1::ObserverGuarantee* guarantee = plan.add_guarantees();
    guarantee->set_observer(ObserverName(observer));
    guarantee->set_epsilon_planned(epsilon);
  }
  return plan;
}

absl::StatusOr<v1::PrivacyPlan> ResolveHorizontalPlan(const v1::PrivacyConfig& privacy,
                                                      const v1::HorizontalConfig& horizontal,
                                                      const v1::TrainingConfig& training,
                                                      int parties, int64_t users) {
  if (!privacy::IsHorizontalMode(privacy.mode()) || !(privacy.epsilon() > 0)) {
    return absl::InvalidArgumentError(
        "a horizontal plan needs privacy mode 'signds' or 'dpfedavg' and an epsilon");
  }
  const bool sign_ds = privacy.mode() == v1::PrivacyConfig::signds;
  const int64_t n = horizontal.users_per_round();
  const int64_t cap = sign_ds ? horizontal.participation_cap() : 1;
  if (parties < 1 || n < 1 || cap < 1 || users < 1) {
    return absl::FailedPreconditionError(absl::StrCat("cannot plan a horizontal run of ", parties,
                                                      " parties, ", users, " users and ", n,
                                                      " users per round"));
  }
  if (!sign_ds && n > users) {
    return absl::FailedPreconditionError(absl::StrCat(
        "horizontal.users_per_round ", n, " exceeds the run's ", users,
        " users: each user's sampling rate would be above 1; set it to at most ", users));
  }
  // signds: as many rounds as the caps allow. dpfedavg: FedAdam's steps, each user drawn
  // at rate n / users in every one (docs/decisions/horizontal-optimisers.md).
  constexpr int64_t kDpFedAvgRounds = 300;
  const int64_t answers = users * cap;
  const int64_t rounds = training.rounds() > 0 ? training.rounds()
                         : sign_ds             ? answers / n
                                               : kDpFedAvgRounds;
  if (rounds < 1 || (sign_ds && rounds * n > answers)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the run asks for ", rounds, " rounds of ", n, " users, but the parties' ", users,
        " users answer at most ", cap, " round(s) each (", answers,
        " answers in all): lower training.rounds or horizontal.users_per_round, or raise "
        "horizontal.participation_cap"));
  }
  v1::PrivacyPlan plan;
  *plan.mutable_privacy() = privacy;
  plan.mutable_privacy()->clear_ledger();
  plan.set_parties(parties);
  plan.set_records(users);
  plan.set_batch_size(n);
  plan.set_rounds(rounds);
  *plan.mutable_horizontal() = horizontal;
  if (!sign_ds) {
    if (privacy.has_noise_multiplier()) {
      plan.set_noise_multiplier(privacy.noise_multiplier());
    } else {
      privacy::CalibrationTarget target;
      target.epsilon = privacy.epsilon();
      target.delta = privacy.delta();
      target.sample_rate = DpFedAvgMechanism(plan).sample_rate;
      target.steps = rounds;
      target.conversion = privacy::Conversion::kImproved;
      target.sampler = privacy::Sampler::kPoisson;
      ASSIGN_OR_RETURN(const double z, privacy::CalibrateNoiseMultiplier(target));
      plan.set_noise_multiplier(z);
    }
  }
  ASSIGN_OR_RETURN(const double epsilon, HorizontalEpsilonAfter(plan, rounds));
  for (Observer observer : kObservers) {
    v1::ObserverGuarantee* guarantee = plan.add_guarantees();
    guarantee->set_observer(ObserverName(observer));
    guarantee->set_epsilon_planned(epsilon);
  }
  return plan;
}

privacy::StepMechanism DpFedAvgMechanism(const v1::PrivacyPlan& plan) {
  privacy::StepMechanism mechanism;
  mechanism.noise_multipliers = {plan.noise_multiplier()};
  mechanism.sample_rate = static_cast<double>(plan.batch_size()) /
                          static_cast<double>(std::max<int64_t>(1, plan.records()));
  mechanism.sampler = privacy::Sampler::kPoisson;
  return mechanism;
}

double EpsilonPerAnswer(const v1::PrivacyPlan& plan) {
  return plan.privacy().epsilon() /
         static_cast<double>(std::max(1, plan.horizontal().participation_cap()));
}

const v1::ObserverGuarantee& Guarantee(const v1::PrivacyPlan& plan, Observer observer) {
  return plan.guarantees(static_cast<int>(observer));
}

absl::StatusOr<std::optional<double>> EpsilonAfter(const v1::PrivacyPlan& plan, Observer observer,
                                                   int64_t rounds) {
  if (!IsHorizontal(plan)) RETURN_IF_ERROR(privacy::ValidateMode(plan.privacy().mode()));
  return ViewEpsilon(plan, observer, rounds);
}

absl::StatusOr<std::optional<EpsilonBreakdown>> PublishedEpsilonBreakdown(
    const v1::PrivacyPlan& plan) {
  if (IsHorizontal(plan) || IsMeasured(plan) || !Guarantee(plan, Observer::kPublished).has_epsilon_planned())
    return std::nullopt;
  privacy::RunShape shape = PlanShape(plan);
  EpsilonBreakdown breakdown;
  if (HasOneOffReleases(plan)) {
    ASSIGN_OR_RETURN(breakdown.one_off,
                     PlanEpsilon(plan, shape, /*rounds=*/0, privacy::View::kJoint));
  }
  shape.marginal_noise_multiplier = 0;  // the critic releases alone
  ASSIGN_OR_RETURN(breakdown.critic,
                   PlanEpsilon(plan, shape, plan.rounds(), privacy::View::kJoint));
  return breakdown;
}

std::string DescribeEpsilonBreakdown(const v1::PrivacyPlan& plan) {
  const absl::StatusOr<std::optional<EpsilonBreakdown>> breakdown = PublishedEpsilonBreakdown(plan);
  if (!breakdown.ok() || !breakdown->has_value() || (*breakdown)->one_off <= 0) return "";
  return absl::StrFormat(
      "of the published epsilon %.3g, the one-off releases alone (marginals%s) come to %.3g and "
      "the %d rounds' "
      "critic releases alone to %.3g; composed, not added",
      Guarantee(plan, Observer::kPublished).epsilon_planned(),
      plan.label_epsilon() > 0 ? ", labels" : "", (*breakdown)->one_off, plan.rounds(),
      (*breakdown)->critic);
}

absl::StatusOr<std::optional<double>> OwnReleasesEpsilonAfter(const v1::PrivacyPlan& plan,
                                                              int64_t rounds) {
  if (!Guarantee(plan, Observer::kPublished).has_epsilon_planned()) return std::nullopt;
  if (IsHorizontal(plan)) {
    ASSIGN_OR_RETURN(const double epsilon, HorizontalEpsilonAfter(plan, rounds));
    return epsilon;
  }
  // Every party charges the whole measurement: each histogram is about the same people.
  if (IsMeasured(plan)) return MeasurementsEpsilon(plan);
  if (rounds == 0 && !HasOneOffReleases(plan)) return 0.0;
  ASSIGN_OR_RETURN(const double epsilon,
                   PlanEpsilon(plan, PlanShape(plan), rounds, privacy::View::kParty));
  return epsilon;
}

absl::Status CheckPlanBudgets(const v1::PrivacyPlan& plan) {
  const v1::PrivacyConfig& p = plan.privacy();
  const v1::ObserverGuarantee& published = Guarantee(plan, Observer::kPublished);
  // Relative slack: a calibrated z lands on the budget up to the calibrator's tolerance.
  constexpr double kSlack = 1 + 1e-6;
  if (p.has_epsilon() && published.has_epsilon_planned() &&
      published.epsilon_planned() > p.epsilon() * kSlack) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the run would spend joint epsilon ", published.epsilon_planned(), " > privacy.epsilon ",
        p.epsilon(), " (raise privacy.noise_multiplier, or lower training.rounds or ",
        IsHorizontal(plan) ? "horizontal.users_per_round" : "training.batch_size", ")"));
  }
  if (!p.has_epsilon_budget_against_parties()) return absl::OkStatus();
  const v1::ObserverGuarantee& parties = Guarantee(plan, Observer::kOtherParty);
  if (!parties.has_epsilon_planned()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "privacy.epsilon_budget_against_parties is ", p.epsilon_budget_against_parties(),
        " but mode '", privacy::ModeName(p.mode()), "' gives no guarantee against other parties (",
        parties.not_dp(), "): use strict, gswgan or pate"));
  }
  if (parties.epsilon_planned() > p.epsilon_budget_against_parties() * kSlack) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the run would spend epsilon ", parties.epsilon_planned(),
        " against other parties (they draw the same batches, so sampling does not amplify) > "
        "privacy.epsilon_budget_against_parties ",
        p.epsilon_budget_against_parties(),
        " (lower privacy.epsilon, rounds or batch_size, or raise the budget)"));
  }
  return absl::OkStatus();
}

std::string PlanDigest(const v1::PrivacyPlan& plan) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    plan.SerializeToCodedStream(&coded);
  }
  return Sha256Hex(bytes);
}

absl::Status CheckSamePlan(const v1::PrivacyPlan& ours, absl::string_view our_name,
                           const v1::PrivacyPlan& theirs, absl::string_view their_name) {
  std::optional<Difference> difference = FirstDifference(ours, theirs, "");
  if (!difference.has_value()) return absl::OkStatus();
  ShortenNumbers(&difference->ours, &difference->theirs);
  return absl::FailedPreconditionError(absl::StrCat(
      their_name, " plans ", difference->path, " = ", difference->theirs, " but ", our_name,
      " plans ", difference->ours,
      ": every daemon of a run must hold the same privacy plan (the joint epsilon assumes one)"));
}

std::string PrivacyStatementPath(const std::string& table_path) {
  return std::filesystem::path(table_path).replace_extension(".privacy.json").string();
}

absl::Status WritePrivacyStatement(const std::string& table_path, const v1::PrivacyPlan& plan) {
  ASSIGN_OR_RETURN(const std::string json, ToJson(plan));
  return WriteFileAtomically(PrivacyStatementPath(table_path), json);
}

std::string DescribeGuarantee(const v1::ObserverGuarantee& guarantee, double delta) {
  if (!guarantee.has_epsilon_planned())
    return absl::StrCat(guarantee.observer(), ": not DP (", guarantee.not_dp(), ")");
  auto epsilon = [](double value) { return absl::StrFormat("%.4g", value); };
  std::string text = absl::StrCat(guarantee.observer(), ": epsilon ");
  if (guarantee.has_epsilon_spent())
    absl::StrAppend(&text, epsilon(guarantee.epsilon_spent()), " spent of ");
  absl::StrAppend(&text, epsilon(guarantee.epsilon_planned()), " at delta ",
                  absl::StrFormat("%g", delta));
  return text;
}

}  // namespace vfsynth

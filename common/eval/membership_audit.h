#ifndef VFSYNTH_COMMON_EVAL_MEMBERSHIP_AUDIT_H_
#define VFSYNTH_COMMON_EVAL_MEMBERSHIP_AUDIT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "common/eval/clopper_pearson.h"
#include "common/eval/eval_table.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// Trains a generator on `training` with `seed` and returns its synthetic table.
using SyntheticSampler =
    std::function<absl::StatusOr<CsvTable>(const CsvTable& training, uint64_t seed)>;

// The neighbouring training set the target is compared with: D with the target replaced
// by a typical record of D (the adjacency the modes' noise is calibrated for), or D
// without it.
enum class AuditNeighbour { kReplace, kRemove };
const char* AuditNeighbourName(AuditNeighbour neighbour);  // "replace", "remove"
absl::StatusOr<AuditNeighbour> ParseAuditNeighbour(absl::string_view name);

struct AuditOptions {
  int shadow_models = 10;       // M generators with and M without the target
  AuditNeighbour neighbour = AuditNeighbour::kReplace;
  double train_fraction = 0.7;  // of each side, for the attack classifier (rest: test)
  int64_t target_row = -1;      // row of the data; -1: largest nearest-neighbour distance
  // Non-empty: a record (in the data's header order, e.g. CanaryRecord) that joins the
  // data as the last row and is the target; target_row must then be -1.
  std::vector<std::string> canary;
  double delta = 1e-5;
  double alpha = 0.05;  // Clopper–Pearson level
  int attack_trees = 200;
  int threads = 2;
  uint64_t seed = 0;
};

struct AuditResult {
  int64_t target_row = 0;
  bool canary = false;                     // the target is AuditOptions::canary
  AuditNeighbour neighbour = AuditNeighbour::kReplace;
  int64_t replacement_row = -1;            // kReplace: the typical record standing in for it
  std::vector<std::string> target_record;  // the schema columns of the target
  int64_t training_rows = 0;
  int shadow_models = 0;
  int test_in = 0, test_out = 0;  // held-out synthetic sets per side
  int false_negatives = 0, false_positives = 0;
  double accuracy = 0;
  double auc = 0;
  EpsilonBound epsilon;
  double attainable_epsilon = 0;  // AttainableEpsilonBound of the held-out sets
  double seconds = 0;
  double seconds_per_model = 0;
};

// Shadow-model membership inference in the leave-one-out setting (VFLGAN ASSD,
// Stadler et al.): M synthetic sets from D and M from D \ {x*}, each featurised by
// AuditFeatures, a random forest trained on `train_fraction` of the sets of each side
// and tested on the rest; error counts give ε lower bounds via Clopper–Pearson.
absl::StatusOr<AuditResult> RunMembershipAudit(const CsvTable& data, const v1::Schema& schema,
                                               const SyntheticSampler& sampler,
                                               const AuditOptions& options);

// Synthetic sets per side the attack is tested on (the rest train it).
int HeldOutPerSide(const AuditOptions& options);
// The largest ε lower bound an audit with `options` can report, whatever the attack:
// with the default 10 models per side, 0.
double AttainableEpsilonBound(const AuditOptions& options);

// Features of one synthetic set for the attack: per numeric column mean, median and
// variance (range-scaled), per categorical column the category frequencies, the
// Pearson correlation of every numeric pair, and the target's closeness: its DCR to
// the set and the shares of synthetic rows within DCR 0.05 / 0.1 of it.
std::vector<double> AuditFeatures(const EvalTable& synthetic, const EvalTable& target,
                                  const std::vector<double>& ranges);

// What the audited training claims for what it publishes (docs/privacy.md, the
// "published" observer): ε at the audit's δ, or no DP claim and why.
struct PublishedClaim {
  std::string mode = "none";
  std::optional<double> epsilon;
  std::string not_dp;  // why there is no ε (epsilon unset)
};

std::string AuditJson(const AuditResult& result, const PublishedClaim& claim);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_MEMBERSHIP_AUDIT_H_

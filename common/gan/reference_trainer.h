#ifndef VFSYNTH_COMMON_GAN_REFERENCE_TRAINER_H_
#define VFSYNTH_COMMON_GAN_REFERENCE_TRAINER_H_

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "common/data/party_data.h"
#include "common/gan/cross_party_independence.h"
#include "common/gan/marginal_target.h"
#include "common/nn/generator_average.h"
#include "common/nn/networks.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

struct RoundStats {
  int round = 0;  // generator rounds completed
  int total_rounds = 0;
  double critic_loss = 0;  // shared + local critic losses of the last critic step
  double generator_loss = 0;
  double rounds_per_second = 0;
  double eta_seconds = 0;
};

// The single-process reference trainer: the exact split architecture of docs/architecture.md
// (global G, per-party feat_k + head_k, shared critic D_s) held in one process and
// trained with one joint autograd graph. The distributed system is tested against it
// (same seeds, same batches, same parameters after N rounds).
class ReferenceTrainer {
 public:
  struct Party {
    std::string name;
    PartyData data;
    torch::Tensor table;  // aligned encoded rows, N x d_k
    int offset = 0;       // first column of this party's slice in G's output
    FeatureNet feat{nullptr};
    ScoreNet head{nullptr};
    std::unique_ptr<torch::optim::Adam> optimizer;
    std::optional<MarginalTarget> marginals;  // training.marginal_weight > 0: exact (no DP here)
  };

  // Loads and aligns the party tables (HMAC tokens, canonical order) and builds the
  // networks. `config` must already have its defaults resolved.
  static absl::StatusOr<std::unique_ptr<ReferenceTrainer>> Create(const v1::LocalRunConfig& config);

  // One critic step at global critic-step counter `step`; returns its total loss.
  double CriticStep(int64_t step);
  // One generator step for generator round `round`; returns the generator loss.
  double GeneratorStep(int64_t round);

  // Runs all configured rounds, logging progress and calling `progress` (if set)
  // after every generator round.
  absl::Status Train(const std::function<void(const RoundStats&)>& progress = nullptr);

  // Samples `rows` synthetic records and decodes them to the joint columns
  // (every party's columns, party order).
  absl::StatusOr<CsvTable> Synthesize(int64_t rows);

  int64_t aligned_rows() const { return rows_; }
  std::vector<Party>& parties() { return parties_; }
  Generator& generator() { return generator_; }
  // The weight average (null unless training.experimental.generator_average_decay > 0).
  GeneratorAverage* generator_average() { return average_.get(); }
  ScoreNet& shared_critic() { return shared_critic_; }

 private:
  explicit ReferenceTrainer(v1::LocalRunConfig config) : config_(std::move(config)) {}
  absl::Status Build();
  torch::Tensor SampleRealIndices(int64_t step) const;

  v1::LocalRunConfig config_;
  std::vector<Party> parties_;
  int64_t rows_ = 0;
  int total_width_ = 0;
  std::map<int, double> publication_temperature_;  // output.label_temperature by block offset
  Generator generator_{nullptr};
  std::optional<CrossPartyIndependence>
      independence_;  // training.experimental.cross_party_independence_weight > 0
  ScoreNet shared_critic_{nullptr};
  std::unique_ptr<torch::optim::Adam> generator_optimizer_;
  std::unique_ptr<GeneratorAverage> average_;
  std::unique_ptr<torch::optim::Adam> shared_optimizer_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_REFERENCE_TRAINER_H_

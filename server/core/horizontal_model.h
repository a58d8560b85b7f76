#ifndef VFSYNTH_SERVER_CORE_HORIZONTAL_MODEL_H_
#define VFSYNTH_SERVER_CORE_HORIZONTAL_MODEL_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "common/federated/dp_fedavg.h"
#include "common/nn/wae.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// The curator's global autoencoder in the horizontal topology: one flat parameter vector,
// the coordinates the parties' SignDS reports name, stepped by every round's reports.
class HorizontalModel {
 public:
  // The model TrainHorizontalReference starts from: Wae(architecture) initialised after
  // torch::manual_seed(seed).
  HorizontalModel(const WaeOptions& architecture, double gamma, uint64_t seed);

  int64_t parameters() const { return flat_.numel(); }
  const torch::Tensor& flat() const { return flat_; }
  void ToWire(v1::Tensor* out) const;
  // The round's step from every party's answer: each report moves its coordinate by
  // ±gamma/n, n the reports of the round (no step without any). Answers must have passed
  // CheckSignDsReports.
  void Step(const std::vector<v1::SignDsReports>& answers);
  // A dpfedavg round's step: the parties' noised sums averaged over users_per_round
  // (FedAvgAverage), then FedAdam at learning rate gamma. Each sum must have passed
  // ValidateTensor (d finite values).
  void StepSums(const std::vector<v1::UpdateSum>& answers, int64_t users_per_round);
  // The curator's state, the model and FedAdam's moments once it has stepped (a
  // checkpoint's payload, HorizontalCuratorState), and back; Restore refuses, changing
  // nothing, bytes that are not this model's state.
  std::string Save() const;
  absl::Status Restore(const std::string& bytes);
  // The publishable part, the flat vector alone (a generator artefact's payload), and back.
  std::string SavePublished() const;
  absl::Status RestorePublished(const std::string& bytes);
  // `rows` rows from the decoder (SampleWaeTable), decoded by `encoder`.
  CsvTable Sample(const TableEncoder& encoder, int64_t rows, uint64_t seed) const;

 private:
  // `tensor` as this model's flat parameters, if it is `parameters()` finite values (within
  // a message of `bytes`).
  absl::StatusOr<torch::Tensor> ModelFromWire(const v1::Tensor& tensor, int64_t bytes) const;

  const WaeOptions architecture_;
  const double gamma_;
  torch::Tensor flat_;
  FedAdam fed_adam_;
};

// INVALID_ARGUMENT naming the problem if a party's answer does not fit the round: more
// reports than the `asked` users, indices and signs of different lengths, or an index
// outside a model of `parameters` coordinates.
absl::Status CheckSignDsReports(const v1::SignDsReports& reports, int64_t asked,
                                int64_t parameters);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_HORIZONTAL_MODEL_H_

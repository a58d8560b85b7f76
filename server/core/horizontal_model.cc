#include "server/core/horizontal_model.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/federated/dp_fedavg.h"
#include "common/federated/wae_round.h"
#include "common/federated/wae_table.h"
#include "common/nn/wire_tensor.h"
#include "common/protocol/tensor_codec.h"
#include "vfsynth/v1/checkpoint.pb.h"

namespace vfsynth {

namespace {

torch::Tensor InitialParameters(const WaeOptions& architecture, uint64_t seed) {
  torch::manual_seed(seed);
  Wae model(architecture);
  return FlatParameters(*model);
}

}  // namespace

HorizontalModel::HorizontalModel(const WaeOptions& architecture, double gamma, uint64_t seed)
    : architecture_(architecture),
      gamma_(gamma),
      flat_(InitialParameters(architecture, seed)),
      fed_adam_(flat_.numel(), gamma) {}

void HorizontalModel::ToWire(v1::Tensor* out) const { vfsynth::ToWire(flat_, out); }

void HorizontalModel::Step(const std::vector<v1::SignDsReports>& answers) {
  std::vector<SignDsReport> reports;
  for (const v1::SignDsReports& answer : answers) {
    for (int i = 0; i < answer.indices_size(); ++i)
      reports.push_back({answer.indices(i), answer.positive(i)});
  }
  // The answers passed CheckSignDsReports: every index is inside the model.
  ApplySignDsReports(reports, gamma_, flat_).IgnoreError();
}

void HorizontalModel::StepSums(const std::vector<v1::UpdateSum>& answers, int64_t users_per_round) {
  std::vector<torch::Tensor> sums;
  for (const v1::UpdateSum& answer : answers) sums.push_back(FromWire(answer.sum()));
  // Each sum passed ValidateTensor: one finite vector of the model's size.
  const absl::StatusOr<torch::Tensor> average = FedAvgAverage(sums, users_per_round);
  if (average.ok()) fed_adam_.Step(*average, flat_);
}

std::string HorizontalModel::Save() const {
  v1::HorizontalCuratorState state;
  ToWire(state.mutable_model());
  const FedAdam::State& adam = fed_adam_.state();
  if (adam.steps > 0) {
    vfsynth::ToWire(adam.first_moment, state.mutable_adam_first_moment());
    vfsynth::ToWire(adam.second_moment, state.mutable_adam_second_moment());
    state.set_adam_steps(adam.steps);
  }
  return state.SerializeAsString();
}

absl::Status HorizontalModel::Restore(const std::string& bytes) {
  v1::HorizontalCuratorState state;
  if (!state.ParseFromString(bytes))
    return absl::DataLossError("the horizontal curator's state does not parse");
  const int64_t limit = static_cast<int64_t>(bytes.size());
  ASSIGN_OR_RETURN(torch::Tensor model, ModelFromWire(state.model(), limit));
  FedAdam::State adam{torch::zeros({parameters()}), torch::zeros({parameters()}),
                      state.adam_steps()};
  if (state.adam_steps() != 0) {
    RETURN_IF_ERROR(
        ValidateTensor(state.adam_first_moment(), {parameters()}, "Adam's first moment", limit));
    RETURN_IF_ERROR(
        ValidateTensor(state.adam_second_moment(), {parameters()}, "Adam's second moment", limit));
    adam.first_moment = FromWire(state.adam_first_moment());
    adam.second_moment = FromWire(state.adam_second_moment());
  }
  RETURN_IF_ERROR(fed_adam_.Restore(std::move(adam)));
  flat_ = std::move(model);
  return absl::OkStatus();
}

std::string HorizontalModel::SavePublished() const {
  v1::Tensor tensor;
  ToWire(&tensor);
  return tensor.SerializeAsString();
}

absl::Status HorizontalModel::RestorePublished(const std::string& bytes) {
  v1::Tensor tensor;
  if (!tensor.ParseFromString(bytes))
    return absl::DataLossError("the horizontal model's bytes do not parse");
  ASSIGN_OR_RETURN(flat_, ModelFromWire(tensor, static_cast<int64_t>(bytes.size())));
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> HorizontalModel::ModelFromWire(const v1::Tensor& tensor,
                                                             int64_t bytes) const {
  RETURN_IF_ERROR(ValidateTensor(tensor, {parameters()}, "horizontal model", bytes));
  return FromWire(tensor);
}

CsvTable HorizontalModel::Sample(const TableEncoder& encoder, int64_t rows, uint64_t seed) const {
  Wae model(architecture_);
  AssignFlatParameters(*model, flat_).IgnoreError();  // flat_ always has the model's size
  return SampleWaeTable(model, encoder, rows, seed);
}

absl::Status CheckSignDsReports(const v1::SignDsReports& reports, int64_t asked,
                                int64_t parameters) {
  if (reports.indices_size() != reports.positive_size()) {
    return absl::InvalidArgumentError(absl::StrCat("sign_ds_reports has ", reports.indices_size(),
                                                   " indices but ", reports.positive_size(),
                                                   " signs"));
  }
  if (reports.indices_size() > asked) {
    return absl::InvalidArgumentError(absl::StrCat("sign_ds_reports has ", reports.indices_size(),
                                                   " reports for ", asked, " users asked"));
  }
  for (int64_t index : reports.indices()) {
    if (index < 0 || index >= parameters) {
      return absl::InvalidArgumentError(
          absl::StrCat("sign_ds_reports names coordinate ", index, " of a model of ", parameters));
    }
  }
  return absl::OkStatus();
}

}  // namespace vfsynth

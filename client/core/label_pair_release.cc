#include "client/core/label_pair_release.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/format_header.h"
#include "common/base/status_macros.h"
#include "common/dp/dp_sgd.h"
#include "common/gan/label_pairs.h"
#include "common/gan/marginal_target.h"
#include "common/nn/wire_tensor.h"

namespace vfsynth {
namespace {

// A kept release file: its format header, then the release message.
constexpr FileFormat kFormat{"RELEASE", "kept label release", 1};

absl::Status WriteKept(const std::string& path, const google::protobuf::Message& release) {
  return WriteFileAtomically(path, FormatHeader(kFormat) + release.SerializeAsString());
}

// The release kept at `path` for this run, if any.
template <typename Message>
absl::StatusOr<std::optional<Message>> ReadKept(const std::string& path,
                                                const std::string& run_id) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  ASSIGN_OR_RETURN(const std::string file, ReadFile(path));
  ASSIGN_OR_RETURN(const absl::string_view bytes, BodyAfterHeader(kFormat, path, file));
  Message kept;
  if (!kept.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(path, " is damaged (not a label release)"));
  }
  if (kept.run_id() != run_id) return std::nullopt;
  return kept;
}

}  // namespace

absl::StatusOr<v1::ShareLabelsRequest> HolderLabelRelease(
    const std::string& path, const std::string& run_id, const std::string& party,
    const torch::Tensor& table, const OutputBlock& label, double epsilon) {
  ASSIGN_OR_RETURN(std::optional<v1::ShareLabelsRequest> kept,
                   ReadKept<v1::ShareLabelsRequest>(path, run_id));
  if (kept.has_value()) {
    if (kept->labels_size() != table.size(0) || kept->epsilon() != epsilon) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " holds this run's label release for other records or another epsilon"));
    }
    spdlog::info("label pairs: sending the label release kept in {}", path);
    return *kept;
  }
  if (!(epsilon > 0 && std::isfinite(epsilon))) {
    return absl::InternalError("the label release needs a finite epsilon > 0");
  }
  ASSIGN_OR_RETURN(SecureRandom noise, SecureRandom::FromOsEntropy());
  const torch::Tensor labels =
      RandomizedLabels(table.narrow(1, label.offset, label.width), epsilon, noise);
  v1::ShareLabelsRequest release;
  release.set_run_id(run_id);
  release.set_party(party);
  release.set_epsilon(epsilon);
  const auto values = labels.accessor<int64_t, 1>();
  for (int64_t r = 0; r < values.size(0); ++r) release.add_labels(static_cast<int32_t>(values[r]));
  RETURN_IF_ERROR(WriteKept(path, release));
  spdlog::info(
      "label pairs: released {} labels by randomized response, epsilon {:.3f} (keeps a label with "
      "probability {:.3f})",
      release.labels_size(), epsilon, LabelKeepProbability(epsilon, label.width));
  return release;
}

absl::StatusOr<v1::LabelPairsRequest> LabelPairRelease(
    const std::string& path, const std::string& run_id, const std::string& party,
    const v1::ShareLabelsResponse& labels, const torch::Tensor& table,
    const std::vector<OutputBlock>& blocks, double noise_multiplier) {
  if (labels.labels_size() != table.size(0)) {
    return absl::InvalidArgumentError(absl::StrCat("the curator sent ", labels.labels_size(),
                                                   " labels for ", table.size(0),
                                                   " aligned records"));
  }
  const std::vector<int32_t> values(labels.labels().begin(), labels.labels().end());
  const std::string digest = LabelsDigest(values);
  ASSIGN_OR_RETURN(std::optional<v1::LabelPairsRequest> kept,
                   ReadKept<v1::LabelPairsRequest>(path, run_id));
  if (kept.has_value()) {
    if (kept->labels_sha256() != digest) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the label holder's labels changed since this party released its label pairs (", path,
          "); a second release would not be accounted"));
    }
    spdlog::info("label pairs: sending the tables kept in {}", path);
    return *kept;
  }
  if (!(noise_multiplier > 0)) return absl::InternalError("the label-pair release needs noise");
  ASSIGN_OR_RETURN(SecureRandom noise, SecureRandom::FromOsEntropy());
  const torch::Tensor label_tensor =
      torch::tensor(std::vector<int64_t>(values.begin(), values.end()), torch::kLong);
  const std::vector<OutputBlock> one_hot = OneHotBlocks(blocks);
  ASSIGN_OR_RETURN(
      const torch::Tensor counts,
      LabelPairCounts(label_tensor, labels.categories(), table, one_hot, noise_multiplier, &noise));
  v1::LabelPairsRequest release;
  release.set_run_id(run_id);
  release.set_party(party);
  release.set_labels_sha256(digest);
  ToWire(counts.to(torch::kFloat32), release.mutable_counts());
  RETURN_IF_ERROR(WriteKept(path, release));
  spdlog::info(
      "label pairs: released {} tables of the labels against this party's one-hot blocks, noise "
      "multiplier {:.3f}",
      one_hot.size(), noise_multiplier);
  return release;
}

}  // namespace vfsynth

#include "client/core/record_alignment.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/data/alignment.h"
#include "common/protocol/protocol_version.h"

namespace vfsynth {
namespace {

v1::AlignRequest AlignRequestOf(const std::string& run_id, const std::string& party, uint32_t hop,
                                const std::vector<std::string>& elements) {
  v1::AlignRequest request;
  request.set_run_id(run_id);
  request.set_party(party);
  request.set_hop(hop);
  request.mutable_elements()->Reserve(static_cast<int>(elements.size()));
  for (const std::string& element : elements) request.add_elements(element);
  return request;
}

}  // namespace

RecordAlignment::RecordAlignment(std::string party, std::vector<std::string> ids,
                                 std::vector<std::string> tokens)
    : party_(std::move(party)), ids_(std::move(ids)), tokens_(std::move(tokens)) {}

absl::StatusOr<v1::AlignRequest> RecordAlignment::FirstRequest(const std::string& run_id,
                                                               const std::string& party_secret) {
  if (!psi_.has_value()) {
    ASSIGN_OR_RETURN(psi_, PsiParty::Create(party_secret, ids_));
  }
  return AlignRequestOf(run_id, party_, 0, psi_->own_list());
}

absl::StatusOr<std::optional<v1::AlignRequest>> RecordAlignment::Answer(
    const std::string& run_id, const v1::AlignResponse& response, int parties) {
  switch (response.next_case()) {
    case v1::AlignResponse::kAligned:
      RETURN_IF_ERROR(AcceptPositions(response.aligned()));
      return std::nullopt;
    case v1::AlignResponse::kBlind: {
      if (!psi_.has_value()) {
        return absl::FailedPreconditionError(
            "the curator handed out a list to blind before this party sent its own");
      }
      const v1::BlindingTask& task = response.blind();
      if (task.hop() == 0 || task.hop() >= static_cast<uint32_t>(parties)) {
        return absl::InvalidArgumentError(absl::StrCat("the curator's alignment hop ", task.hop(),
                                                       " is not one of 1 to ", parties - 1));
      }
      if (task.elements().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("the curator handed out an empty list for hop ", task.hop()));
      }
      ASSIGN_OR_RETURN(
          const std::vector<std::string> blinded,
          psi_->Blind(std::vector<std::string>(task.elements().begin(), task.elements().end())));
      return AlignRequestOf(run_id, party_, task.hop(), blinded);
    }
    case v1::AlignResponse::NEXT_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "the curator's Align answer has neither a list to blind nor positions");
}

absl::StatusOr<AlignedRows> RecordAlignment::RowsOf(const v1::AlignedPositions& positions) const {
  ASSIGN_OR_RETURN(AlignedRows rows, Accept(positions));
  if (aligned_.has_value() && rows.digest != aligned_->digest) {
    return absl::FailedPreconditionError(
        "after reconnecting, the curator aligned a different set of records");
  }
  return rows;
}

absl::Status RecordAlignment::AcceptPositions(const v1::AlignedPositions& positions) {
  ASSIGN_OR_RETURN(AlignedRows rows, RowsOf(positions));
  aligned_ = std::move(rows);
  return absl::OkStatus();
}

absl::StatusOr<AlignedRows> RecordAlignment::Accept(const v1::AlignedPositions& aligned) const {
  if (!psi_.has_value())
    return absl::FailedPreconditionError("aligned positions before this party sent its list");
  if (aligned.records() != aligned.positions_size()) {
    return absl::InvalidArgumentError(absl::StrCat("the curator names ", aligned.positions_size(),
                                                   " aligned positions for ", aligned.records(),
                                                   " records"));
  }
  ASSIGN_OR_RETURN(
      const std::vector<int64_t> rows,
      psi_->Rows(std::vector<int64_t>(aligned.positions().begin(), aligned.positions().end())));
  // The canonical order is the alignment tokens' (every party's and the reference
  // trainer's); the tokens never leave the parties.
  std::vector<std::string> common;
  common.reserve(rows.size());
  for (const int64_t row : rows) common.push_back(tokens_[static_cast<size_t>(row)]);
  std::sort(common.begin(), common.end());
  Sha256Builder digest;
  for (const std::string& token : common) digest.Add(token);
  AlignedRows result;
  result.digest = digest.Hex();
  ASSIGN_OR_RETURN(result.order, RowOrder(tokens_, common));
  return result;
}

v1::RegisterRequest VerticalRegisterRequest(const v1::PartyConfig& config, const v1::Schema& schema,
                                            int64_t rows) {
  v1::RegisterRequest request;
  request.set_party(config.name());
  request.set_protocol_version(kProtocolVersion);
  *request.mutable_schema() = schema;
  request.mutable_schema()->clear_id_column();  // the curator has no use for it
  request.set_rows(rows);
  request.set_topology(v1::Topology::vertical);
  const v1::PrivacyConfig& privacy = config.privacy();
  v1::PrivacyDeclaration* declared = request.mutable_privacy();
  declared->set_mode(privacy.mode());
  declared->set_noise_multiplier(privacy.noise_multiplier());
  declared->set_clip_norm(privacy.clip_norm());
  declared->set_feature_clip_norm(privacy.feature_clip_norm());
  declared->set_delta(privacy.delta());
  declared->set_epsilon_budget(privacy.epsilon());
  declared->set_shared_critic_budget_share(privacy.experimental().shared_critic_budget_share());
  return request;
}

}  // namespace vfsynth

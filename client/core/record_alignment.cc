#include "client/core/record_alignment.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/data/alignment.h"
#include "common/protocol/protocol_version.h"

namespace vfsynth {
namespace {

v1::AlignRequest AlignRequestOf(const std::string& run_id, const std::string& party, uint32_t hop,
                                const std::vector<std::string>& elements, std::string mac) {
  v1::AlignRequest request;
  request.set_chain_mac(std::move(mac));
  request.set_run_id(run_id);
  request.set_party(party);
  request.set_hop(hop);
  request.mutable_elements()->Reserve(static_cast<int>(elements.size()));
  for (const std::string& element : elements) request.add_elements(element);
  return request;
}

// A failure of this party's own files, which names local paths: logged here in full, and
// what may reach the curator (a refusal) only says what failed.
absl::Status LocalFailure(const absl::Status& status, absl::string_view what) {
  if (status.ok()) return status;
  spdlog::error("{}: {}", std::string(what), status.ToString());
  return absl::Status(status.code(), absl::StrCat(what, " (details in the party's log)"));
}

}  // namespace

RecordAlignment::RecordAlignment(std::string party, std::vector<std::string> ids,
                                 std::vector<std::string> tokens, std::string alignment_key,
                                 std::string answered_hops)
    : party_(std::move(party)),
      ids_(std::move(ids)),
      tokens_(std::move(tokens)),
      alignment_key_(std::move(alignment_key)),
      answered_hops_path_(std::move(answered_hops)) {}

absl::StatusOr<v1::AlignRequest> RecordAlignment::FirstRequest(
    const std::string& run_id, const std::vector<std::string>& roster,
    const std::string& party_secret) {
  if (!chain_.has_value()) {
    run_id_ = run_id;
    ASSIGN_OR_RETURN(chain_, AlignmentChain::Create(alignment_key_, run_id, roster, party_));
    absl::StatusOr<AnsweredHops> answered = AnsweredHops::Load(answered_hops_path_, run_id);
    RETURN_IF_ERROR(LocalFailure(answered.status(), "cannot read the alignment hops it answered"));
    answered_ = *std::move(answered);
  }
  if (!psi_.has_value()) {
    ASSIGN_OR_RETURN(psi_, PsiParty::Create(party_secret, ids_));
  }
  ASSIGN_OR_RETURN(std::string mac, chain_->Mac(0, psi_->own_list()));
  return AlignRequestOf(run_id, party_, 0, psi_->own_list(), std::move(mac));
}

absl::StatusOr<std::optional<v1::AlignRequest>> RecordAlignment::Answer(
    const v1::AlignResponse& response) {
  switch (response.next_case()) {
    case v1::AlignResponse::kAligned:
      RETURN_IF_ERROR(AcceptPositions(response.aligned()));
      return std::nullopt;
    case v1::AlignResponse::kBlind:
      return Blind(response.blind());
    case v1::AlignResponse::NEXT_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "the curator's Align answer has neither a list to blind nor positions");
}

absl::StatusOr<v1::AlignRequest> RecordAlignment::Blind(const v1::BlindingTask& task) {
  if (!psi_.has_value() || !chain_.has_value()) {
    return absl::FailedPreconditionError(
        "the curator handed out a list to blind before this party sent its own");
  }
  const int hop = static_cast<int>(std::min<uint32_t>(task.hop(), 1u << 30));
  if (task.elements().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the curator handed out an empty list for hop ", hop));
  }
  const std::vector<std::string> elements(task.elements().begin(), task.elements().end());
  // Nothing is blinded before the list is known to be the one, and the only one, of this
  // hop: otherwise the curator could add H(id) of guessed ids and learn who holds them.
  RETURN_IF_ERROR(chain_->Verify(hop, elements, task.chain_mac()));
  const std::string digest = Sha256Hex(task.chain_mac());  // the MAC names the list
  if (absl::Status second = answered_->Check(hop, digest); !second.ok()) {
    spdlog::error("{} (the hops it answered: {})", std::string(second.message()),
                  answered_hops_path_);
    return second;
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> blinded, psi_->Blind(elements));
  ASSIGN_OR_RETURN(std::string mac, chain_->Mac(hop, blinded));
  RETURN_IF_ERROR(LocalFailure(answered_->Record(hop, digest),
                               absl::StrCat("cannot record alignment hop ", hop, " as answered")));
  return AlignRequestOf(run_id_, party_, static_cast<uint32_t>(hop), blinded, std::move(mac));
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

std::string AnsweredHopsPath(const v1::PartyConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "alignment.hops").string();
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

#include "client/core/plan_attestation.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/status_macros.h"
#include "common/privacy/privacy_plan.h"
#include "common/secure/authenticated_list.h"
#include "common/secure/length_prefixed.h"

namespace vfsynth {
namespace {

constexpr absl::string_view kMagic = "vfsynth-plan-statement-v1";
constexpr char kPurpose[] = "plan-statement";

// What a statement's signature binds besides the statement: the run and its sender, to
// every party (no receiver).
secure::ListHeader HeaderOf(const std::string& run_id, const std::string& party) {
  return {run_id, party, "", kPurpose, 0};
}

absl::Status SecretsDiffer(const std::string& party, const std::string& self,
                           absl::string_view secret) {
  return absl::FailedPreconditionError(absl::StrCat(
      "party '", party, "' holds another ", secret, " than party '", self,
      "': the parties' secrets files differ, so each would order and sample the records its "
      "own way and the run would learn noise; give every party the same secrets file"));
}

}  // namespace

std::string EncodePlanStatement(const PlanStatement& statement) {
  std::string out(kMagic);
  secure::PutString(out, statement.run_id);
  secure::PutString(out, statement.run_nonce);
  secure::PutString(out, statement.party);
  secure::PutString(out, statement.plan_digest);
  secure::PutString(out, statement.sampling_check);
  secure::PutString(out, statement.alignment_check);
  return out;
}

absl::StatusOr<PlanStatement> DecodePlanStatement(absl::string_view encoded) {
  PlanStatement statement;
  const bool ok = absl::ConsumePrefix(&encoded, kMagic) &&
                  secure::GetString(encoded, statement.run_id) &&
                  secure::GetString(encoded, statement.run_nonce) &&
                  secure::GetString(encoded, statement.party) &&
                  secure::GetString(encoded, statement.plan_digest) &&
                  secure::GetString(encoded, statement.sampling_check) &&
                  secure::GetString(encoded, statement.alignment_check) && encoded.empty();
  if (!ok) return absl::InvalidArgumentError("not a plan statement (truncated or malformed)");
  return statement;
}

PlanAttestation::PlanAttestation(std::string party, ListIdentity identity,
                                 std::optional<SharedSecrets> secrets)
    : identity_(std::move(identity)), secrets_(std::move(secrets)) {
  own_.party = std::move(party);
}

absl::Status PlanAttestation::State(const std::string& run_id, const std::string& run_nonce,
                                    const v1::PrivacyPlan& plan) {
  PlanStatement own = own_;
  own.run_id = run_id;
  own.run_nonce = run_nonce;
  own.plan_digest = PlanDigest(plan);
  if (secrets_.has_value()) {
    ASSIGN_OR_RETURN(own.sampling_check,
                     secure::KeyCheckValue(secrets_->sampling_secret, "sampling_secret", run_id));
    ASSIGN_OR_RETURN(own.alignment_check,
                     secure::KeyCheckValue(secrets_->alignment_key, "alignment_key", run_id));
  }
  const std::string encoded = EncodePlanStatement(own);
  std::string signed_statement = encoded;
  if (identity_.signer.has_value()) {
    ASSIGN_OR_RETURN(signed_statement,
                     identity_.signer->Sign(HeaderOf(run_id, own.party), encoded));
  }
  own_ = std::move(own);
  signed_ = std::move(signed_statement);
  return absl::OkStatus();
}

absl::Status PlanAttestation::CheckOthers(
    const std::vector<std::string>& roster,
    const google::protobuf::RepeatedPtrField<v1::PartyStatement>& statements) const {
  if (signed_.empty()) return absl::FailedPreconditionError("plan statements before the plan");
  std::map<std::string, const std::string*> by_party;
  for (const v1::PartyStatement& statement : statements) {
    if (std::find(roster.begin(), roster.end(), statement.party()) == roster.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the curator relays a plan statement of '", statement.party(),
                       "', which is not a party of run '", own_.run_id, "'"));
    }
    if (!by_party.emplace(statement.party(), &statement.statement()).second) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the curator relays two plan statements of party '", statement.party(), "'"));
    }
  }
  for (const std::string& party : roster) {
    if (party == own_.party) continue;
    const auto it = by_party.find(party);
    if (it == by_party.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the curator relays no plan statement of party '", party,
          "': this party releases nothing until every party's signed plan and secrets are "
          "known to match its own"));
    }
    RETURN_IF_ERROR(CheckOne(party, *it->second));
  }
  return absl::OkStatus();
}

absl::Status PlanAttestation::CheckOne(const std::string& party,
                                       const std::string& statement) const {
  absl::StatusOr<std::string> encoded = statement;
  if (identity_.verifier.has_value()) {
    encoded = identity_.verifier->Verify(HeaderOf(own_.run_id, party), PartyIdentityUri(party),
                                         statement);
  }
  if (!encoded.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the plan statement the curator relays as party '", party,
        "''s is refused (not signed by '", party,
        "' for this run and party: forged, altered, replayed from another run or relayed "
        "as another party's): ",
        encoded.status().message()));
  }
  absl::StatusOr<PlanStatement> theirs = DecodePlanStatement(*encoded);
  if (!theirs.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", party, "''s plan statement: ", theirs.status().message()));
  }
  if (theirs->run_id != own_.run_id || theirs->party != party) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the plan statement relayed as party '", party, "''s is party '", theirs->party,
        "''s in run '", theirs->run_id, "', not this run '", own_.run_id, "' (a replay)"));
  }
  if (theirs->run_nonce != own_.run_nonce) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", party, "''s plan statement is of another start of run '", own_.run_id,
        "' (a replay from an earlier start)"));
  }
  if (theirs->plan_digest != own_.plan_digest) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", party, "' signed privacy plan ", theirs->plan_digest.substr(0, 16),
                     " but party '", own_.party, "' plans ", own_.plan_digest.substr(0, 16),
                     ": the curator admitted a party with other settings"));
  }
  if (theirs->sampling_check != own_.sampling_check)
    return SecretsDiffer(party, own_.party, "sampling_secret");
  if (theirs->alignment_check != own_.alignment_check)
    return SecretsDiffer(party, own_.party, "alignment_key");
  return absl::OkStatus();
}

}  // namespace vfsynth

#ifndef VFSYNTH_CLIENT_CORE_PLAN_ATTESTATION_H_
#define VFSYNTH_CLIENT_CORE_PLAN_ATTESTATION_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/core/list_identity.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth {

// The parties' attestation of the run to one another (docs/privacy.md, "Trust model").
// The curator checks each party's privacy plan against its own, but a curator that lies
// could admit a party with other settings, and it cannot tell whether the parties share
// their secrets. So each party signs a statement of what it runs under with its mTLS key;
// the curator relays every party's statement to every party; and a party releases nothing
// until each other party of the roster signed the same run, plan and secrets as its own.

// What a party states. The check values are secure::KeyCheckValue of its shared secrets
// for the run: equal exactly when the secrets are, and of no use to the curator.
struct PlanStatement {
  std::string run_id;
  std::string run_nonce;  // the curator's start of the run (common/checkpoint/run_nonce.h)
  std::string party;
  std::string plan_digest;      // PlanDigest (common/privacy/privacy_plan.h)
  std::string sampling_check;   // empty where the topology has no shared secrets
  std::string alignment_check;  // likewise
};

// The encoding a statement is signed in: a magic and each field length-prefixed.
std::string EncodePlanStatement(const PlanStatement& statement);
absl::StatusOr<PlanStatement> DecodePlanStatement(absl::string_view encoded);

// The secrets every party of a vertical run shares (the secrets file); none in the
// horizontal topology.
struct SharedSecrets {
  std::string sampling_secret;
  std::string alignment_key;
};

class PlanAttestation {
 public:
  PlanAttestation(std::string party, ListIdentity identity, std::optional<SharedSecrets> secrets);

  // Once this party's plan is resolved in run `run_id`, started as `run_nonce`: states it
  // and signs the statement (unsigned without a TLS identity).
  absl::Status State(const std::string& run_id, const std::string& run_nonce,
                     const v1::PrivacyPlan& plan);
  // What State signed, for AttestPlanRequest.statement (empty before).
  const std::string& statement() const { return signed_; }

  // OK if `statements` (the curator's AttestPlanResponse) hold, for every party of
  // `roster` but this one, exactly one statement, signed under a certificate of the run's
  // CA naming that party, that states this run and start, that party, and this party's plan digest
  // and check values; otherwise an error naming the party and what differs (a signature
  // PERMISSION_DENIED, the rest FAILED_PRECONDITION). A statement of a party not in the
  // roster, or two of one party, are refused. After State.
  absl::Status CheckOthers(
      const std::vector<std::string>& roster,
      const google::protobuf::RepeatedPtrField<v1::PartyStatement>& statements) const;

 private:
  absl::Status CheckOne(const std::string& party, const std::string& statement) const;

  ListIdentity identity_;
  std::optional<SharedSecrets> secrets_;
  PlanStatement own_;
  std::string signed_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_PLAN_ATTESTATION_H_

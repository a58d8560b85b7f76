#ifndef VFSYNTH_TESTS_UNIT_NET_HONEST_ATTEST_ANSWER_H_
#define VFSYNTH_TESTS_UNIT_NET_HONEST_ATTEST_ANSWER_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/core/list_identity.h"
#include "client/core/plan_attestation.h"
#include "common/base/status_macros.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// The curator's start of the run in tests that answer Register by hand.
inline const std::string kTestRunNonce(64, 'a');

// For tests that play the curator by hand: its AttestPlan answer to a party's `request` in
// a run of `roster` (started as kTestRunNonce) where every party plans and holds what the
// requester does. The plan
// is the request's; each other party's statement is made for it with `secrets` and
// signed with `identity_of(party)`.
inline absl::StatusOr<v1::AttestPlanResponse> HonestAttestAnswer(
    const v1::AttestPlanRequest& request, const std::vector<std::string>& roster,
    const std::optional<SharedSecrets>& secrets,
    const std::function<absl::StatusOr<ListIdentity>(const std::string&)>& identity_of) {
  v1::AttestPlanResponse response;
  *response.mutable_plan() = request.plan();
  for (const std::string& party : roster) {
    v1::PartyStatement* relayed = response.add_statements();
    relayed->set_party(party);
    if (party == request.party()) {
      relayed->set_statement(request.statement());
      continue;
    }
    ASSIGN_OR_RETURN(ListIdentity identity, identity_of(party));
    PlanAttestation attestation(party, std::move(identity), secrets);
    RETURN_IF_ERROR(attestation.State(request.run_id(), kTestRunNonce, request.plan()));
    relayed->set_statement(attestation.statement());
  }
  return response;
}

}  // namespace vfsynth

#endif  // VFSYNTH_TESTS_UNIT_NET_HONEST_ATTEST_ANSWER_H_

#include "common/net/peer_identity.h"

#include <grpc/grpc_security_constants.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/net/tls.h"

namespace vfsynth {

absl::StatusOr<std::string> PartyFromIdentities(const std::vector<std::string>& identities,
                                                const std::vector<std::string>& roster) {
  std::vector<std::string> matches;
  for (const std::string& party : roster) {
    if (std::find(identities.begin(), identities.end(), PartyIdentity(party)) != identities.end()) {
      matches.push_back(party);
    }
  }
  if (matches.size() == 1) return matches[0];
  if (matches.empty()) {
    return absl::PermissionDeniedError(absl::StrCat("certificate identities [",
                                                    absl::StrJoin(identities, ", "),
                                                    "] name no party of the roster"));
  }
  return absl::PermissionDeniedError(
      absl::StrCat("certificate names several parties: ", absl::StrJoin(matches, ", ")));
}

namespace {

constexpr char kOperatorIdentity[] = "spiffe://vfsynth/operator";

// The verified client certificate's SAN URIs. Only SAN URIs: gRPC's peer identity falls
// back to the subject CN, which a certificate could set to a party's URI without
// carrying it as its identity.
absl::StatusOr<std::vector<std::string>> CertificateUris(const grpc::ServerContext& context) {
  const auto auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) {
    return absl::UnauthenticatedError("no verified client certificate");
  }
  std::vector<std::string> identities;
  for (const auto& value : auth->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
    identities.emplace_back(value.data(), value.size());
  }
  if (identities.empty()) {
    return absl::PermissionDeniedError(
        "the client certificate has no SAN URI: a party is identified by the SAN URI "
        "spiffe://vfsynth/party/<name> only, never by its subject CN");
  }
  return identities;
}

}  // namespace

absl::StatusOr<std::string> AuthenticatedStatusReader(const grpc::ServerContext& context,
                                                      const std::vector<std::string>& roster,
                                                      bool plaintext) {
  if (plaintext) return std::string("operator");
  auto identities = CertificateUris(context);
  if (!identities.ok()) return identities.status();
  if (std::find(identities->begin(), identities->end(), kOperatorIdentity) != identities->end()) {
    return std::string("operator");
  }
  auto party = PartyFromIdentities(*identities, roster);
  if (!party.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        party.status().message(), "; the status is for the operator (SAN URI ",
        kOperatorIdentity, ") and the run's parties"));
  }
  return party;
}

absl::StatusOr<std::string> AuthenticatedParty(const grpc::ServerContext& context,
                                               const std::vector<std::string>& roster,
                                               bool plaintext, const std::string& claimed) {
  std::string party;
  if (plaintext) {
    if (std::find(roster.begin(), roster.end(), claimed) == roster.end()) {
      return absl::PermissionDeniedError(absl::StrCat("'", claimed, "' is not in the roster"));
    }
    party = claimed;
  } else {
    auto identities = CertificateUris(context);
    if (!identities.ok()) return identities.status();
    auto matched = PartyFromIdentities(*identities, roster);
    if (!matched.ok()) return matched.status();
    party = *matched;
  }
  if (!claimed.empty() && claimed != party) {
    return absl::PermissionDeniedError(absl::StrCat(
        "authenticated as party '", party, "' but the message claims to be '", claimed, "'"));
  }
  return party;
}

}  // namespace vfsynth

#ifndef VFSYNTH_COMMON_NET_PEER_IDENTITY_H_
#define VFSYNTH_COMMON_NET_PEER_IDENTITY_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vfsynth {

// Maps a peer's certificate identities (every SAN) to exactly one roster party via
// the URI spiffe://vfsynth/party/<name>. PERMISSION_DENIED if none or several match.
absl::StatusOr<std::string> PartyFromIdentities(const std::vector<std::string>& identities,
                                                const std::vector<std::string>& roster);

// The authenticated party behind a call. With `plaintext` (tests only) there is no
// certificate; the caller's claimed name is then trusted.
absl::StatusOr<std::string> AuthenticatedParty(const grpc::ServerContext& context,
                                               const std::vector<std::string>& roster,
                                               bool plaintext, const std::string& claimed);

// Who may read the run's status (GetStatus): the operator, by the SAN URI
// spiffe://vfsynth/operator that deploy/gen-certs.sh gives its certificate, or a roster
// party by its own. Returns "operator" or the party's name; with `plaintext` (loopback
// tests only) "operator".
absl::StatusOr<std::string> AuthenticatedStatusReader(const grpc::ServerContext& context,
                                                      const std::vector<std::string>& roster,
                                                      bool plaintext);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NET_PEER_IDENTITY_H_

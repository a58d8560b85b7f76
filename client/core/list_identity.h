#ifndef VFSYNTH_CLIENT_CORE_LIST_IDENTITY_H_
#define VFSYNTH_CLIENT_CORE_LIST_IDENTITY_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/secure/signed_list.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// What a party signs with and checks the other parties' signatures against, beyond TLS:
// its mTLS key and certificate sign what it sends through the curator, the run's CA
// checks what the others sent. Both absent in a plaintext loopback test config (no TLS
// files): there the parties' messages carry no signature.
struct ListIdentity {
  std::optional<secure::ListSigner> signer;
  std::optional<secure::ListVerifier> verifier;
};

// From the config's tls.key, tls.cert and tls.ca; an error names the file that is wrong.
absl::StatusOr<ListIdentity> LoadListIdentity(const v1::TlsConfig& tls);

// The SAN URI a party's certificate carries (as PartyIdentity in common/net/tls.h): what
// `party` sends must be signed under a certificate naming it.
std::string PartyIdentityUri(const std::string& party);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_LIST_IDENTITY_H_

#include "client/core/list_identity.h"

#include <openssl/crypto.h>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace vfsynth {

absl::StatusOr<ListIdentity> LoadListIdentity(const v1::TlsConfig& tls) {
  ListIdentity identity;
  if (tls.ca().empty() || tls.cert().empty() || tls.key().empty()) {
    return identity;
  }
  ASSIGN_OR_RETURN(std::string key, ReadFile(tls.key()));
  ASSIGN_OR_RETURN(const std::string cert, ReadFile(tls.cert()));
  absl::StatusOr<secure::ListSigner> signer = secure::ListSigner::FromPem(key, cert);
  OPENSSL_cleanse(key.data(), key.size());
  if (!signer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls.key and tls.cert (", tls.cert(),
                     ") as this party's signer: ", signer.status().message()));
  }
  identity.signer = *std::move(signer);
  ASSIGN_OR_RETURN(const std::string ca, ReadFile(tls.ca()));
  absl::StatusOr<secure::ListVerifier> verifier = secure::ListVerifier::FromCaPem(ca);
  if (!verifier.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls.ca ", tls.ca(), ": ", verifier.status().message()));
  }
  identity.verifier = *std::move(verifier);
  return identity;
}

std::string PartyIdentityUri(const std::string& party) {
  return absl::StrCat("spiffe://vfsynth/party/", party);
}

}  // namespace vfsynth

#ifndef VFSYNTH_COMMON_SECURE_SIGNED_LIST_H_
#define VFSYNTH_COMMON_SECURE_SIGNED_LIST_H_

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/secure/authenticated_list.h"

namespace vfsynth::secure {

// Per-sender authentication of a relayed list. The MAC of authenticated_list.h is under a
// key every party shares, so with three or more parties one of them (with the curator)
// could forge a list "from" another. A signed list also carries its sender's certificate
// and a signature by that certificate's key over the header (run, sender, receiver,
// purpose with its binding, index) and the payload's SHA-256: only the sender's own key
// makes one.

struct EvpPkeyDeleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct X509Deleter {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct X509StoreDeleter {
  void operator()(X509_STORE* store) const { X509_STORE_free(store); }
};

// A party's signing identity: its mTLS private key and certificate.
class ListSigner {
 public:
  // Refuses a key that is not the certificate's.
  static absl::StatusOr<ListSigner> FromPem(absl::string_view key_pem, absl::string_view cert_pem);

  // The payload with the signer's certificate and signature, to be sealed (Seal) as the
  // list's payload under `header`.
  absl::StatusOr<std::string> Sign(const ListHeader& header, absl::string_view payload) const;

 private:
  ListSigner(std::shared_ptr<EVP_PKEY> key, std::string cert_der)
      : key_(std::move(key)), cert_der_(std::move(cert_der)) {}
  std::shared_ptr<EVP_PKEY> key_;
  std::string cert_der_;
};

// Checks signed lists against the run's CA.
class ListVerifier {
 public:
  static absl::StatusOr<ListVerifier> FromCaPem(absl::string_view ca_pem);

  // The payload of `signed_payload` (what Open returned) if its certificate chains to the
  // CA, has the SAN URI `sender_identity` (and names no other party), and its signature
  // over `header` and the payload verifies; PERMISSION_DENIED naming what failed otherwise.
  absl::StatusOr<std::string> Verify(const ListHeader& header, absl::string_view sender_identity,
                                     absl::string_view signed_payload) const;

 private:
  explicit ListVerifier(std::shared_ptr<X509_STORE> store) : store_(std::move(store)) {}
  std::shared_ptr<X509_STORE> store_;
};

}  // namespace vfsynth::secure

#endif  // VFSYNTH_COMMON_SECURE_SIGNED_LIST_H_

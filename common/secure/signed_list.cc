#include "common/secure/signed_list.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/secure/length_prefixed.h"

namespace vfsynth::secure {
namespace {

constexpr absl::string_view kSignedMagic = "vfsynth-signed-list-v1";
// What the signature covers starts with this, so it signs nothing else the key signs (the
// key's TLS handshakes sign other, fixed-prefix structures).
constexpr absl::string_view kSignatureContext = "vfsynth-list-signature-v1";

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
struct StoreCtxDeleter {
  void operator()(X509_STORE_CTX* ctx) const { X509_STORE_CTX_free(ctx); }
};
struct GeneralNamesDeleter {
  void operator()(GENERAL_NAMES* names) const { GENERAL_NAMES_free(names); }
};

std::unique_ptr<BIO, BioDeleter> MemoryBio(absl::string_view pem) {
  return std::unique_ptr<BIO, BioDeleter>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::string OpenSslErrors() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    absl::StrAppend(&out, out.empty() ? "" : "; ", buffer);
  }
  return out.empty() ? "no OpenSSL error" : out;
}

// The context, the header as the MAC encodes it, and the payload's SHA-256.
std::string SignedMessage(const ListHeader& header, absl::string_view payload) {
  std::string message(kSignatureContext);
  message += EncodeListHeader(header, payload.size());
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), digest);
  message.append(reinterpret_cast<const char*>(digest), sizeof(digest));
  return message;
}

// Ed25519 and Ed448 sign the message itself; every other key type a SHA-256 digest.
const EVP_MD* DigestFor(EVP_PKEY* key) {
  return EVP_PKEY_is_a(key, "ED25519") || EVP_PKEY_is_a(key, "ED448") ? nullptr : EVP_sha256();
}

absl::Status Denied(absl::string_view why) {
  return absl::PermissionDeniedError(absl::StrCat("the list's sender signature: ", why));
}

// The URI SANs of `cert`.
std::vector<std::string> UriNames(X509* cert) {
  std::vector<std::string> uris;
  std::unique_ptr<GENERAL_NAMES, GeneralNamesDeleter> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (names == nullptr) return uris;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
    uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                      ASN1_STRING_length(uri));
  }
  return uris;
}

}  // namespace

absl::StatusOr<ListSigner> ListSigner::FromPem(absl::string_view key_pem,
                                               absl::string_view cert_pem) {
  auto key_bio = MemoryBio(key_pem);
  std::shared_ptr<EVP_PKEY> key(
      key_bio == nullptr ? nullptr : PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr),
      EvpPkeyDeleter());
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a PEM private key (unencrypted): ", OpenSslErrors()));
  }
  auto cert_bio = MemoryBio(cert_pem);
  std::unique_ptr<X509, X509Deleter> cert(
      cert_bio == nullptr ? nullptr : PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("not a PEM certificate: ", OpenSslErrors()));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the private key is not the certificate's");
  }
  unsigned char* der = nullptr;
  const int length = i2d_X509(cert.get(), &der);
  if (length <= 0) return absl::InternalError("OpenSSL failed to encode a certificate");
  std::string cert_der(reinterpret_cast<const char*>(der), length);
  OPENSSL_free(der);
  return ListSigner(std::move(key), std::move(cert_der));
}

absl::StatusOr<std::string> ListSigner::Sign(const ListHeader& header,
                                             absl::string_view payload) const {
  const std::string message = SignedMessage(header, payload);
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  size_t length = 0;
  std::string signature;
  bool ok = ctx != nullptr &&
            EVP_DigestSignInit(ctx.get(), nullptr, DigestFor(key_.get()), nullptr, key_.get()) == 1 &&
            EVP_DigestSign(ctx.get(), nullptr, &length,
                           reinterpret_cast<const unsigned char*>(message.data()),
                           message.size()) == 1;
  if (ok) {
    signature.resize(length);
    ok = EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                        reinterpret_cast<const unsigned char*>(message.data()),
                        message.size()) == 1;
    signature.resize(length);
  }
  if (!ok) return absl::InternalError(absl::StrCat("cannot sign a list: ", OpenSslErrors()));
  std::string out(kSignedMagic);
  PutString(out, cert_der_);
  PutString(out, signature);
  out.append(payload.data(), payload.size());
  return out;
}

absl::StatusOr<ListVerifier> ListVerifier::FromCaPem(absl::string_view ca_pem) {
  std::shared_ptr<X509_STORE> store(X509_STORE_new(), X509StoreDeleter());
  auto bio = MemoryBio(ca_pem);
  if (store == nullptr || bio == nullptr) return absl::ResourceExhaustedError("no memory for a CA");
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    const int ok = X509_STORE_add_cert(store.get(), cert);
    X509_free(cert);
    if (ok != 1) return absl::InvalidArgumentError(absl::StrCat("CA: ", OpenSslErrors()));
    ++added;
  }
  ERR_clear_error();  // the end of the PEM reads as an error
  if (added == 0) return absl::InvalidArgumentError("the CA file holds no PEM certificate");
  return ListVerifier(std::move(store));
}

absl::StatusOr<std::string> ListVerifier::Verify(const ListHeader& header,
                                                 absl::string_view sender_identity,
                                                 absl::string_view signed_payload) const {
  if (signed_payload.substr(0, kSignedMagic.size()) != kSignedMagic) {
    return Denied("the list is not signed");
  }
  absl::string_view rest = signed_payload.substr(kSignedMagic.size());
  std::string cert_der, signature;
  if (!GetString(rest, cert_der) || !GetString(rest, signature)) {
    return Denied("truncated or malformed");
  }
  const auto* der = reinterpret_cast<const unsigned char*>(cert_der.data());
  std::unique_ptr<X509, X509Deleter> cert(d2i_X509(nullptr, &der, static_cast<long>(cert_der.size())));
  if (cert == nullptr || der != reinterpret_cast<const unsigned char*>(cert_der.data()) + cert_der.size()) {
    ERR_clear_error();
    return Denied("its certificate does not parse");
  }

  std::unique_ptr<X509_STORE_CTX, StoreCtxDeleter> store_ctx(X509_STORE_CTX_new());
  if (store_ctx == nullptr ||
      X509_STORE_CTX_init(store_ctx.get(), store_.get(), cert.get(), nullptr) != 1) {
    return absl::InternalError(absl::StrCat("cannot check a certificate: ", OpenSslErrors()));
  }
  // The party's mTLS client certificate, as the curator's TLS checks it.
  X509_STORE_CTX_set_purpose(store_ctx.get(), X509_PURPOSE_SSL_CLIENT);
  if (X509_verify_cert(store_ctx.get()) != 1) {
    const int error = X509_STORE_CTX_get_error(store_ctx.get());
    ERR_clear_error();
    return Denied(absl::StrCat("its certificate does not chain to the run's CA (",
                               X509_verify_cert_error_string(error), ")"));
  }
  const std::vector<std::string> uris = UriNames(cert.get());
  bool named = false;
  for (const std::string& uri : uris) {
    if (uri != sender_identity) {
      return Denied(absl::StrCat("its certificate names '", uri, "', not only the sender '",
                                 sender_identity, "'"));
    }
    named = true;
  }
  if (!named) {
    return Denied(absl::StrCat("its certificate does not name the sender '", sender_identity, "'"));
  }

  const std::string message = SignedMessage(header, rest);
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  const bool ok =
      key != nullptr && ctx != nullptr &&
      EVP_DigestVerifyInit(ctx.get(), nullptr, DigestFor(key), nullptr, key) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) == 1;
  if (!ok) {
    ERR_clear_error();
    return Denied(absl::StrCat("it does not verify under the certificate of '", sender_identity,
                               "': forged or altered"));
  }
  return std::string(rest);
}

}  // namespace vfsynth::secure

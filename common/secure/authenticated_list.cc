#include "common/secure/authenticated_list.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <array>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/secure/length_prefixed.h"

namespace vfsynth::secure {
namespace {

constexpr absl::string_view kMagic = "vfsynth-list-v1";
constexpr size_t kMacBytes = 32;
constexpr size_t kDerivedKeyBytes = 32;
using Mac = std::array<unsigned char, kMacBytes>;

absl::Status CheckKey(absl::string_view key) {
  if (key.size() < kMinListKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("list key of ", key.size(), " bytes; at least ",
                                                   kMinListKeyBytes, " required"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Mac> ComputeMac(absl::string_view key, absl::string_view header,
                               absl::string_view payload) {
  Mac mac{};
  EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = hmac == nullptr ? nullptr : EVP_MAC_CTX_new(hmac);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                               OSSL_PARAM_construct_end()};
  size_t length = 0;
  const bool ok = ctx != nullptr &&
                  EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                               params) == 1 &&
                  EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(header.data()),
                                 header.size()) == 1 &&
                  EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(payload.data()),
                                 payload.size()) == 1 &&
                  EVP_MAC_final(ctx, mac.data(), &length, mac.size()) == 1 && length == kMacBytes;
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(hmac);
  if (!ok) return absl::InternalError("OpenSSL failed to compute HMAC-SHA256");
  return mac;
}

absl::Status Mismatch(absl::string_view field, absl::string_view got, absl::string_view want) {
  return absl::PermissionDeniedError(absl::StrCat("authenticated list has ", field, " '", got,
                                                  "', expected '", want,
                                                  "': sent for another place (a replay?)"));
}

// HKDF-SHA256 of `secret` under `salt` and `info`, kDerivedKeyBytes long; `what` names
// the derivation in an error.
absl::StatusOr<std::string> Hkdf(absl::string_view secret, absl::string_view salt, std::string info,
                                 absl::string_view what) {
  std::string key(kDerivedKeyBytes, '\0');
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  EVP_KDF_CTX* ctx = kdf == nullptr ? nullptr : EVP_KDF_CTX_new(kdf);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(secret.data()),
                                        secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<char*>(salt.data()),
                                        salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
      OSSL_PARAM_construct_end()};
  const bool ok =
      ctx != nullptr &&
      EVP_KDF_derive(ctx, reinterpret_cast<unsigned char*>(key.data()), key.size(), params) == 1;
  EVP_KDF_CTX_free(ctx);
  EVP_KDF_free(kdf);
  if (!ok) {
    OPENSSL_cleanse(key.data(), key.size());
    return absl::InternalError(
        absl::StrCat("OpenSSL failed to derive ", what, " with HKDF-SHA256"));
  }
  return key;
}

}  // namespace

std::string EncodeListHeader(const ListHeader& header, uint64_t payload_length) {
  std::string out(kMagic);
  PutString(out, header.run_id);
  PutString(out, header.sender);
  PutString(out, header.receiver);
  PutString(out, header.purpose);
  PutUint64(out, header.index);
  PutUint64(out, payload_length);
  return out;
}

absl::StatusOr<std::string> DeriveListKey(absl::string_view shared_key, absl::string_view purpose) {
  if (absl::Status s = CheckKey(shared_key); !s.ok()) return s;
  // A NUL cannot appear in a record id (ids are CSV text), so no id equals this info, and
  // HKDF's extract step keys the HMAC with the salt, not with the shared key.
  std::string info("vfsynth\0list-key\0", 17);
  info.append(purpose.data(), purpose.size());
  return Hkdf(shared_key, "vfsynth-list-key-salt-v1", std::move(info), "a list key");
}

absl::StatusOr<std::string> KeyCheckValue(absl::string_view secret, absl::string_view label,
                                          absl::string_view run_id) {
  if (absl::Status s = CheckKey(secret); !s.ok()) return s;
  // Another salt than the list keys': its extract step gives another pseudorandom key.
  std::string info("vfsynth\0key-check\0", 18);
  absl::StrAppend(&info, label, std::string(1, '\0'), run_id);
  return Hkdf(secret, "vfsynth-key-check-salt-v1", std::move(info), "a key check value");
}

absl::StatusOr<std::string> Seal(absl::string_view key, const ListHeader& header,
                                 absl::string_view payload) {
  absl::StatusOr<std::string> mac = ListMac(key, header, payload);
  if (!mac.ok()) return mac.status();
  std::string sealed = EncodeListHeader(header, payload.size());
  sealed.append(payload.data(), payload.size());
  sealed.append(*mac);
  return sealed;
}

absl::StatusOr<std::string> ListMac(absl::string_view key, const ListHeader& header,
                                    absl::string_view payload) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  absl::StatusOr<Mac> mac = ComputeMac(key, EncodeListHeader(header, payload.size()), payload);
  if (!mac.ok()) return mac.status();
  return std::string(reinterpret_cast<const char*>(mac->data()), mac->size());
}

absl::Status VerifyListMac(absl::string_view key, const ListHeader& expected,
                           absl::string_view payload, absl::string_view mac) {
  absl::StatusOr<std::string> want = ListMac(key, expected, payload);
  if (!want.ok()) return want.status();
  if (mac.size() != kMacBytes || CRYPTO_memcmp(want->data(), mac.data(), kMacBytes) != 0) {
    return absl::PermissionDeniedError(
        "authenticated list's MAC does not verify: forged, altered, or sent for another place");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Open(absl::string_view key, const ListHeader& expected,
                                 absl::string_view sealed) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  const absl::Status malformed =
      absl::InvalidArgumentError("authenticated list is truncated or malformed");
  if (sealed.size() < kMagic.size() + kMacBytes || sealed.substr(0, kMagic.size()) != kMagic) {
    return malformed;
  }
  absl::string_view rest = sealed.substr(kMagic.size(), sealed.size() - kMagic.size() - kMacBytes);
  ListHeader got;
  uint64_t payload_length = 0;
  if (!GetString(rest, got.run_id) || !GetString(rest, got.sender) ||
      !GetString(rest, got.receiver) || !GetString(rest, got.purpose) ||
      !GetUint64(rest, got.index) || !GetUint64(rest, payload_length) ||
      rest.size() != payload_length) {
    return malformed;
  }
  const absl::string_view header = sealed.substr(0, sealed.size() - kMacBytes - rest.size());
  absl::StatusOr<Mac> mac = ComputeMac(key, header, rest);
  if (!mac.ok()) return mac.status();
  if (CRYPTO_memcmp(mac->data(), sealed.data() + sealed.size() - kMacBytes, kMacBytes) != 0) {
    return absl::PermissionDeniedError(
        "authenticated list's MAC does not verify: forged, altered, or sealed under another key");
  }
  // The MAC is genuine, so these name what the sender really sealed.
  if (got.run_id != expected.run_id) return Mismatch("run id", got.run_id, expected.run_id);
  if (got.sender != expected.sender) return Mismatch("sender", got.sender, expected.sender);
  if (got.receiver != expected.receiver) {
    return Mismatch("receiver", got.receiver, expected.receiver);
  }
  if (got.purpose != expected.purpose) return Mismatch("purpose", got.purpose, expected.purpose);
  if (got.index != expected.index) {
    return Mismatch("index", absl::StrCat(got.index), absl::StrCat(expected.index));
  }
  return std::string(rest);
}

}  // namespace vfsynth::secure

#include "common/base/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"

namespace vfsynth {

struct Sha256Builder::State {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  ~State() { EVP_MD_CTX_free(context); }
};

Sha256Builder::Sha256Builder() : state_(std::make_unique<State>()) {
  EVP_DigestInit_ex(state_->context, EVP_sha256(), nullptr);
}

Sha256Builder::~Sha256Builder() = default;

Sha256Builder& Sha256Builder::Add(absl::string_view piece) {
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>((piece.size() >> (8 * i)) & 0xff);
  EVP_DigestUpdate(state_->context, length, sizeof(length));
  EVP_DigestUpdate(state_->context, piece.data(), piece.size());
  return *this;
}

std::string Sha256Builder::Hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(state_->context, digest, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

}  // namespace vfsynth

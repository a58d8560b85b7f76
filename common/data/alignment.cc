#include "common/data/alignment.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {

std::string AlignmentToken(absl::string_view key, absl::string_view id) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(id.data()), id.size(), digest, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

absl::StatusOr<std::vector<std::string>> AlignmentTokens(absl::string_view key,
                                                         const std::vector<std::string>& ids) {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  absl::flat_hash_map<std::string, size_t> seen;
  for (size_t i = 0; i < ids.size(); ++i) {
    tokens.push_back(AlignmentToken(key, ids[i]));
    auto [it, inserted] = seen.emplace(tokens.back(), i);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("record id '", ids[i], "' appears more than once"));
    }
  }
  return tokens;
}

std::vector<std::string> IntersectTokens(const std::vector<std::vector<std::string>>& per_party) {
  if (per_party.empty()) return {};
  std::vector<std::string> common = per_party[0];
  std::sort(common.begin(), common.end());
  common.erase(std::unique(common.begin(), common.end()), common.end());
  for (size_t p = 1; p < per_party.size(); ++p) {
    std::vector<std::string> other = per_party[p];
    std::sort(other.begin(), other.end());
    std::vector<std::string> next;
    std::set_intersection(common.begin(), common.end(), other.begin(), other.end(),
                          std::back_inserter(next));
    common = std::move(next);
  }
  return common;
}

absl::StatusOr<std::vector<int64_t>> RowOrder(const std::vector<std::string>& tokens,
                                              const std::vector<std::string>& common) {
  absl::flat_hash_map<absl::string_view, int64_t> index;
  index.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) index.emplace(tokens[i], static_cast<int64_t>(i));
  std::vector<int64_t> order;
  order.reserve(common.size());
  for (const std::string& token : common) {
    auto it = index.find(token);
    if (it == index.end()) {
      return absl::InvalidArgumentError("an aligned token does not belong to this party's records");
    }
    order.push_back(it->second);
  }
  return order;
}

}  // namespace vfsynth

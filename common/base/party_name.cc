#include "common/base/party_name.h"

#include "absl/strings/str_cat.h"
#include "common/base/quoted_value.h"

namespace vfsynth {

absl::Status ValidatePartyName(const std::string& name, const std::string& what) {
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  };
  bool ok = !name.empty() && name.size() <= 64 && name.front() != '.' && name.front() != '-';
  for (const char c : name) ok = ok && allowed(c);
  if (name == "ca" || name == "curator" || name == "operator") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name,
                     "' is reserved: deploy/gen-certs.sh names the CA's, the curator's and the "
                     "operator's certificate files so"));
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " ", QuotedValue(name),
      " is not a party name: 1-64 letters, digits, '.', '_' or '-', not starting with '.' or '-'"));
}

absl::Status AddUniquePartyName(const std::string& name, const std::string& what,
                                absl::flat_hash_set<std::string>* seen) {
  if (absl::Status valid = ValidatePartyName(name, what); !valid.ok()) return valid;
  if (!seen->insert(name).second)
    return absl::InvalidArgumentError(absl::StrCat(what, " '", name, "' is used twice"));
  return absl::OkStatus();
}

absl::Status ValidateRoster(const std::vector<std::string>& roster, const std::string& what) {
  absl::flat_hash_set<std::string> seen;
  for (const std::string& name : roster) {
    if (absl::Status unique = AddUniquePartyName(name, what + " party", &seen); !unique.ok())
      return unique;
  }
  return absl::OkStatus();
}

}  // namespace vfsynth

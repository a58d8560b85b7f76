#ifndef VFSYNTH_COMMON_BASE_PARTY_NAME_H_
#define VFSYNTH_COMMON_BASE_PARTY_NAME_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"

namespace vfsynth {

// A party's name becomes file names (split output, certificates) and its identity URI,
// so it is an identifier: 1-64 of [A-Za-z0-9._-], not starting with '.' or '-', and not
// one of the certificate names deploy/gen-certs.sh reserves (ca, curator, operator).
// INVALID_ARGUMENT naming `what` otherwise.
absl::Status ValidatePartyName(const std::string& name, const std::string& what);

// ValidatePartyName, and `name` must not be in `seen` yet (then it is added).
absl::Status AddUniquePartyName(const std::string& name, const std::string& what,
                                absl::flat_hash_set<std::string>* seen);

// A run's roster as a party receives it: AddUniquePartyName for each, "<what> party '<name>'".
absl::Status ValidateRoster(const std::vector<std::string>& roster, const std::string& what);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_PARTY_NAME_H_

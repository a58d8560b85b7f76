#include "client/core/alignment_chain.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/party_name.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/data/psi.h"
#include "common/secure/authenticated_list.h"

namespace vfsynth {
namespace {

// The receiver named in the MAC of a fully blinded list, which goes to no party.
constexpr char kCurator[] = "\0curator";

// The elements back to back; each must be one encoding long, so the bytes have one split.
absl::StatusOr<std::string> Payload(const std::vector<std::string>& elements) {
  std::string payload;
  payload.reserve(elements.size() * kPsiElementBytes);
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].size() != kPsiElementBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "alignment element ", i, " has ", elements[i].size(), " bytes, not ", kPsiElementBytes));
    }
    payload += elements[i];
  }
  return payload;
}

}  // namespace

absl::StatusOr<AlignmentChain> AlignmentChain::Create(absl::string_view alignment_key,
                                                      std::string run_id,
                                                      std::vector<std::string> roster,
                                                      const std::string& self) {
  RETURN_IF_ERROR(ValidateRoster(roster, "the curator's roster:"));
  const auto it = std::find(roster.begin(), roster.end(), self);
  if (it == roster.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", self, "' is not in the curator's roster of the run"));
  }
  if (run_id.empty()) return absl::InvalidArgumentError("alignment chain without a run id");
  ASSIGN_OR_RETURN(std::string key, secure::DeriveListKey(alignment_key, "psi/chain"));
  Sha256Builder digest;
  for (const std::string& party : roster) digest.Add(party);
  const int index = static_cast<int>(it - roster.begin());
  return AlignmentChain(std::move(key), std::move(run_id), std::move(roster), index, digest.Hex());
}

AlignmentChain::AlignmentChain(std::string key, std::string run_id, std::vector<std::string> roster,
                               int self, std::string roster_digest)
    : key_(std::move(key)),
      run_id_(std::move(run_id)),
      roster_(std::move(roster)),
      self_(self),
      roster_digest_(std::move(roster_digest)) {}

const std::string& AlignmentChain::At(int index) const {
  return roster_[static_cast<size_t>(((index % hops()) + hops()) % hops())];
}

secure::ListHeader AlignmentChain::HeaderOf(int sender, int hop) const {
  secure::ListHeader header;
  header.run_id = run_id_;
  header.sender = At(sender);
  header.receiver = hop + 1 < hops() ? At(sender + 1) : std::string(kCurator, sizeof(kCurator) - 1);
  // The list that `sender` blinds at `hop` started at the party `hop` places before it.
  header.purpose = absl::StrCat("psi-chain", std::string(1, '\0'), roster_digest_,
                                std::string(1, '\0'), At(sender - hop));
  header.index = static_cast<uint64_t>(hop);
  return header;
}

absl::StatusOr<std::string> AlignmentChain::Mac(int hop,
                                                const std::vector<std::string>& elements) const {
  ASSIGN_OR_RETURN(const std::string payload, Payload(elements));
  return secure::ListMac(key_, HeaderOf(self_, hop), payload);
}

absl::Status AlignmentChain::Verify(int hop, const std::vector<std::string>& elements,
                                    absl::string_view mac) const {
  if (hop < 1 || hop >= hops()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the curator's alignment hop ", hop, " is not one of 1 to ", hops() - 1));
  }
  ASSIGN_OR_RETURN(const std::string payload, Payload(elements));
  // What the predecessor sent at the hop before, for this party to blind now.
  if (!secure::VerifyListMac(key_, HeaderOf(self_ - 1, hop - 1), payload, mac).ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "refusing to blind the curator's list for alignment hop ", hop,
        ": it does not carry the MAC of party '", At(self_ - 1), "' for this party at hop ",
        hop - 1, " of run '", run_id_, "' (", elements.size(), " elements). Either party '",
        At(self_ - 1),
        "' holds another alignment_key than this party (the parties' secrets files differ: give "
        "every party the same secrets file), or the curator added, removed, altered, rerouted or "
        "replayed the list"));
  }
  return absl::OkStatus();
}

}  // namespace vfsynth

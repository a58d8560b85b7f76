#include "server/core/psi_exchange.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/data/psi.h"

namespace vfsynth {

PsiExchange::PsiExchange(std::vector<std::string> roster) : roster_(std::move(roster)) {
  sent_.resize(roster_.size());
  lists_.resize(roster_.size());
  incoming_.resize(roster_.size());
}

absl::StatusOr<v1::AlignResponse> PsiExchange::Submit(int party, const v1::AlignRequest& request,
                                                      JoinDeadline& join) {
  if (request.hop() >= static_cast<uint32_t>(hops())) {
    return absl::InvalidArgumentError(absl::StrCat("alignment hop ", request.hop(), ": a run of ",
                                                   hops(), " parties has hops 0 to ", hops() - 1));
  }
  const int hop = static_cast<int>(request.hop());
  if (request.elements().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("alignment hop ", hop, ": the list is empty"));
  }
  std::vector<std::string> elements(request.elements().begin(), request.elements().end());
  RETURN_IF_ERROR(CheckPsiList(elements));
  Sha256Builder digest;
  for (const std::string& element : elements) digest.Add(element);
  std::string list_digest = digest.Add(request.chain_mac()).Hex();

  absl::MutexLock lock(&mu_);
  if (!cancelled_.ok()) return cancelled_;
  std::vector<std::string>& sent = sent_[party];
  if (hop < static_cast<int>(sent.size())) {
    if (sent[hop] != list_digest) {
      return absl::FailedPreconditionError(
          hop == 0
              ? absl::StrCat(
                    "party '", roster_[party],
                    "' sent another list of its records than before; a party that rejoins must "
                    "send the same one (restart it on its own checkpoint_dir, which keeps the secret "
                    "the list derives from)")
              : absl::StrCat("party '", roster_[party], "' blinded hop ", hop,
                             " differently than before"));
    }
  } else {
    RETURN_IF_ERROR(
        Take(party, hop, List{std::move(elements), request.chain_mac()}, std::move(list_digest)));
    join.Progress();
  }
  const int latest = static_cast<int>(sent.size()) - 1;
  auto passed = [this, latest]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !cancelled_.ok() || completed_hops_ > latest;
  };
  if (!join.Await(&mu_, absl::Condition(&passed))) {
    return absl::DeadlineExceededError(absl::StrCat(
        "alignment hop ", latest, ": parties that did not send their list within the join timeout (",
        absl::FormatDuration(join.timeout()), " without a party's step): ",
        absl::StrJoin(WaitingLocked(), ", ")));
  }
  if (!cancelled_.ok()) return cancelled_;
  v1::AlignResponse response;
  if (completed_hops_ == hops()) {
    v1::AlignedPositions* aligned = response.mutable_aligned();
    aligned->mutable_positions()->Add(positions_[party].begin(), positions_[party].end());
    aligned->set_records(static_cast<int64_t>(positions_[party].size()));
    return response;
  }
  const int next = latest + 1;
  v1::BlindingTask* task = response.mutable_blind();
  task->set_hop(static_cast<uint32_t>(next));
  const List& list = lists_[Start(party, next)];
  task->mutable_elements()->Reserve(static_cast<int>(list.elements.size()));
  for (const std::string& element : list.elements) task->add_elements(element);
  task->set_chain_mac(list.chain_mac);
  return response;
}

absl::Status PsiExchange::Take(int party, int hop, List list, std::string digest) {
  std::vector<std::string>& sent = sent_[party];
  if (hop != static_cast<int>(sent.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", roster_[party], "' sent alignment hop ", hop, " before hop ", sent.size()));
  }
  if (hop > completed_hops_) {
    return absl::FailedPreconditionError(absl::StrCat("party '", roster_[party],
                                                      "' sent alignment hop ", hop,
                                                      " before that hop's list was handed out"));
  }
  const int start = Start(party, hop);
  if (hop > 0 && list.elements.size() != lists_[start].elements.size()) {
    return absl::InvalidArgumentError(absl::StrCat("alignment hop ", hop, ": ",
                                                   list.elements.size(), " elements for the ",
                                                   lists_[start].elements.size(), " handed out"));
  }
  incoming_[start] = std::move(list);
  sent.push_back(std::move(digest));
  for (const std::vector<std::string>& other : sent_) {
    if (static_cast<int>(other.size()) <= hop) return absl::OkStatus();
  }
  // Every party has sent this hop: its lists are the next hop's tasks.
  lists_ = std::move(incoming_);
  incoming_.assign(roster_.size(), {});
  completed_hops_ = hop + 1;
  if (completed_hops_ == hops()) {
    std::vector<std::vector<std::string>> blinded;
    blinded.reserve(lists_.size());
    for (List& list : lists_) blinded.push_back(std::move(list.elements));
    positions_ = PsiIntersectionPositions(blinded);
    lists_.assign(roster_.size(), {});
  }
  spdlog::debug("alignment hop {} of {} done", hop, hops() - 1);
  return absl::OkStatus();
}

bool PsiExchange::Done(int party) const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(sent_[party].size()) == hops();
}

std::vector<std::string> PsiExchange::Waiting() const {
  absl::MutexLock lock(&mu_);
  return WaitingLocked();
}

std::vector<std::string> PsiExchange::WaitingLocked() const {
  std::vector<std::string> waiting;
  if (completed_hops_ == hops()) return waiting;
  for (size_t k = 0; k < roster_.size(); ++k) {
    if (static_cast<int>(sent_[k].size()) <= completed_hops_) waiting.push_back(roster_[k]);
  }
  return waiting;
}

void PsiExchange::Cancel(absl::Status reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.ok()) cancelled_ = std::move(reason);
}

absl::Status CheckAlignRows(const std::string& party, const v1::AlignRequest& request,
                            const v1::RegisterRequest& registration) {
  if (request.hop() == 0 && request.elements_size() != registration.rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat("party '", party, "' registered ", registration.rows(),
                     " records but its alignment list has ", request.elements_size()));
  }
  return absl::OkStatus();
}

}  // namespace vfsynth

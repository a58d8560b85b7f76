#include "client/core/party_run.h"

#include "absl/strings/str_cat.h"

namespace vfsynth {

absl::StatusOr<bool> PartyRun::Join(const std::string& run_id, const std::string& settings_digest,
                                    const std::string& run_nonce) {
  if (id_.empty()) {
    id_ = run_id;
    settings_digest_ = settings_digest;
    nonce_ = run_nonce;
    return true;
  }
  if (run_id == id_ && run_nonce != nonce_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "after reconnecting, the curator runs another start of run '", run_id,
        "' than the one this party joined (it was started afresh, or resumed another start's "
        "checkpoint): resume the curator from this run's checkpoint_dir"));
  }
  if (run_id != id_ || settings_digest != settings_digest_) {
    return absl::FailedPreconditionError(
        absl::StrCat("after reconnecting, the curator runs '", run_id, "' with ",
                     run_id == id_ ? "other settings" : "another run id", " than run '", id_,
                     "' this party is in"));
  }
  return false;
}

void PartyRun::Finish(const v1::Finished& finished) {
  finished_ = true;
  finish_succeeded_ = finished.succeeded();
  finish_message_ = finished.message();
}

}  // namespace vfsynth

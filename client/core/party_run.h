#ifndef VFSYNTH_CLIENT_CORE_PARTY_RUN_H_
#define VFSYNTH_CLIENT_CORE_PARTY_RUN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// What a party knows of the run it takes part in, whatever the topology, as its session
// with the curator moves on: the run's id and settings (fixed by the first registration),
// whether its records are aligned, whether the curator's privacy plan matched this
// party's, and how the curator ended the run.
class PartyRun {
 public:
  // The curator's answer to Register, as `run_id` and a digest of its run settings. The
  // first fixes the run (true); after a reconnect the curator must still run the same job
  // (false), else FAILED_PRECONDITION.
  // `run_nonce` names the curator's start of the run (common/checkpoint/run_nonce.h): a
  // curator started afresh, or from another start's checkpoint, has another.
  absl::StatusOr<bool> Join(const std::string& run_id, const std::string& settings_digest,
                            const std::string& run_nonce);
  const std::string& id() const { return id_; }
  const std::string& nonce() const { return nonce_; }
  const std::string& settings_digest() const { return settings_digest_; }

  bool aligned() const { return aligned_; }
  void set_aligned() { aligned_ = true; }
  bool plan_attested() const { return plan_attested_; }
  void set_plan_attested() { plan_attested_ = true; }

  // The curator's Finished message: whether it published, and its words.
  void Finish(const v1::Finished& finished);
  bool finished() const { return finished_; }
  bool finish_succeeded() const { return finish_succeeded_; }
  const std::string& finish_message() const { return finish_message_; }

 private:
  std::string id_;
  std::string nonce_;
  std::string settings_digest_;
  bool aligned_ = false;
  bool plan_attested_ = false;
  bool finished_ = false;
  bool finish_succeeded_ = false;
  std::string finish_message_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_PARTY_RUN_H_

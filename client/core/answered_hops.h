#ifndef VFSYNTH_CLIENT_CORE_ANSWERED_HOPS_H_
#define VFSYNTH_CLIENT_CORE_ANSWERED_HOPS_H_

#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth {

// The alignment hops a party blinded a list for, per run, kept in a file under its
// checkpoint directory: neither a reconnect nor a restart can have it blind a second,
// different list for a hop. The identical list again (a retry) gets the same answer,
// which tells the curator nothing new.
class AnsweredHops {
 public:
  // This run's hops from `path` (none if it is absent or holds another run's).
  static absl::StatusOr<AnsweredHops> Load(std::string path, const std::string& run_id);

  // OK if `hop` is unanswered or was answered for the list with `digest`;
  // FAILED_PRECONDITION otherwise.
  absl::Status Check(int hop, const std::string& digest) const;
  // Durably records that this party answers `hop` for the list with `digest` (after Check).
  absl::Status Record(int hop, const std::string& digest);

 private:
  AnsweredHops(std::string path, std::string run) : path_(std::move(path)), run_(std::move(run)) {}

  std::string path_;
  std::string run_;                  // SHA-256 of the run id
  std::map<int, std::string> hops_;  // hop -> digest of the list blinded
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_ANSWERED_HOPS_H_

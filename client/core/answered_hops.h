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
// different list for a hop. The identical list again (a retry) gets the same answer (its
// exponent is kept per run too, alignment_secret.h), which tells the curator nothing new.
// Every run's hops are kept: the curator names the run, and one that switched the party
// to another run and back must not find the first run's hops forgotten.
class AnsweredHops {
 public:
  // This run's hops from `path` (none if it is absent or holds only other runs').
  static absl::StatusOr<AnsweredHops> Load(std::string path, const std::string& run_id);

  // OK if `hop` is unanswered or was answered for the list with `digest`;
  // FAILED_PRECONDITION otherwise (naming no local path: the refusal goes to the curator).
  absl::Status Check(int hop, const std::string& digest) const;
  // Durably records that this party answers `hop` for the list with `digest` (after Check).
  absl::Status Record(int hop, const std::string& digest);

 private:
  AnsweredHops(std::string path, std::string run) : path_(std::move(path)), run_(std::move(run)) {}

  std::string path_;
  std::string run_;                  // SHA-256 of the run id
  std::map<int, std::string> hops_;  // this run's: hop -> digest of the list blinded
  std::string others_;               // the file's lines of other runs, kept as they are
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_ANSWERED_HOPS_H_

#include "common/util/background_task.h"

namespace vfsynth {

absl::Status BackgroundTask::Start(std::function<absl::Status()> job) {
  if (absl::Status previous = Await(); !previous.ok()) return previous;
  worker_ = std::thread([this, job = std::move(job)] { status_ = job(); });
  return absl::OkStatus();
}

absl::Status BackgroundTask::Await() {
  if (worker_.joinable()) worker_.join();
  absl::Status status = std::move(status_);
  status_ = absl::OkStatus();
  return status;
}

}  // namespace vfsynth

#include "common/base/background_task.h"

#include <utility>

namespace vfsynth {

BackgroundTask::~BackgroundTask() {
  Await().IgnoreError();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (worker_.joinable()) worker_.join();
}

absl::Status BackgroundTask::Start(std::function<absl::Status()> job) {
  if (absl::Status previous = Await(); !previous.ok()) return previous;
  {
    absl::MutexLock lock(&mu_);
    job_ = std::move(job);
    busy_ = true;
  }
  if (!worker_.joinable()) worker_ = std::thread([this] { Work(); });
  return absl::OkStatus();
}

absl::Status BackgroundTask::Await() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !busy_; };
  mu_.Await(absl::Condition(&idle));
  absl::Status status = std::move(status_);
  status_ = absl::OkStatus();
  return status;
}

void BackgroundTask::Work() {
  while (true) {
    std::function<absl::Status()> job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return busy_ || stopping_; };
      mu_.Await(absl::Condition(&ready));
      if (!busy_) return;  // stopping, nothing queued
      job = std::move(job_);
      job_ = nullptr;
    }
    absl::Status status = job();
    job = nullptr;  // what the job captured goes before the owner hears it is done
    absl::MutexLock lock(&mu_);
    status_ = std::move(status);
    busy_ = false;
  }
}

}  // namespace vfsynth

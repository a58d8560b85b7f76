#include "common/base/step_profile.h"

#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"

namespace vfsynth {

void StepProfile::Begin(v1::StepKind kind, int64_t index) {
  absl::MutexLock lock(&mu_);
  open_ = true;
  current_ = Open();
  current_.kind = kind;
  current_.index = index;
  current_.start = absl::Now();
}

void StepProfile::Add(StepPhase phase, absl::Duration elapsed) {
  absl::MutexLock lock(&mu_);
  if (open_) current_.phases[static_cast<int>(phase)] += elapsed;
}

void StepProfile::End() {
  v1::StepSample sample;
  std::function<void(const v1::StepSample&)> observer;
  {
    absl::MutexLock lock(&mu_);
    if (!open_) return;
    open_ = false;
    sample.set_kind(current_.kind);
    sample.set_index(current_.index);
    const auto ms = [phases = current_.phases](StepPhase phase) {  // copied under mu_
      return absl::ToDoubleMilliseconds(phases[static_cast<int>(phase)]);
    };
    sample.set_compute_ms(ms(StepPhase::kCompute));
    sample.set_codec_ms(ms(StepPhase::kCodec));
    sample.set_wait_ms(ms(StepPhase::kWait));
    sample.set_durability_ms(ms(StepPhase::kDurability));
    sample.set_total_ms(absl::ToDoubleMilliseconds(absl::Now() - current_.start));
    samples_.push_back(sample);
    if (samples_.size() > capacity_) samples_.pop_front();
    observer = observer_;
  }
  if (observer) observer(sample);
}

void StepProfile::SetObserver(std::function<void(const v1::StepSample&)> observer) {
  absl::MutexLock lock(&mu_);
  observer_ = std::move(observer);
}

v1::StepProfile StepProfile::Snapshot() const {
  absl::MutexLock lock(&mu_);
  v1::StepProfile profile;
  for (const v1::StepSample& sample : samples_) *profile.add_samples() = sample;
  return profile;
}

absl::Status WriteStepProfile(const StepProfile& profile, const std::string& path) {
  ASSIGN_OR_RETURN(const std::string json, ToJson(profile.Snapshot()));
  return WriteFileAtomically(path, json);
}

}  // namespace vfsynth

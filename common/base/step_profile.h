#ifndef VFSYNTH_COMMON_BASE_STEP_PROFILE_H_
#define VFSYNTH_COMMON_BASE_STEP_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "vfsynth/v1/profile.pb.h"

namespace vfsynth {

// Where the wall-clock time of each protocol step goes (docs/performance.md). The
// daemon that owns a step loop brackets each step with Begin/End and charges a few
// spans to phases; that is a handful of clock reads per step. Thread-safe (the
// recording thread and a reader may differ).
enum class StepPhase { kCompute = 0, kCodec, kWait, kDurability };

class StepProfile {
 public:
  explicit StepProfile(size_t capacity = 1 << 16) : capacity_(capacity) {}

  // Starts a step; a step still open is discarded (a rejoin restarted it).
  void Begin(v1::StepKind kind, int64_t index);
  // Adds to a phase of the open step; no-op when no step is open.
  void Add(StepPhase phase, absl::Duration elapsed);
  // Records the open step (total = Begin to now) and calls the observer with it.
  void End();

  // Called on the recording thread with every recorded step.
  void SetObserver(std::function<void(const v1::StepSample&)> observer);
  // The recorded steps, oldest first (at most `capacity`, the latest).
  v1::StepProfile Snapshot() const;

 private:
  struct Open {
    v1::StepKind kind = v1::STEP_KIND_UNSPECIFIED;
    int64_t index = 0;
    absl::Time start;
    absl::Duration phases[4];
  };

  const size_t capacity_;
  mutable absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  Open current_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::StepSample> samples_ ABSL_GUARDED_BY(mu_);
  std::function<void(const v1::StepSample&)> observer_ ABSL_GUARDED_BY(mu_);
};

// Charges the time from construction to destruction to `phase` of the open step.
class ScopedPhase {
 public:
  ScopedPhase(StepProfile& profile, StepPhase phase)
      : profile_(profile), phase_(phase), start_(absl::Now()) {}
  ~ScopedPhase() { profile_.Add(phase_, absl::Now() - start_); }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  StepProfile& profile_;
  const StepPhase phase_;
  const absl::Time start_;
};

// Brackets one step: Begin on construction, End on destruction.
class ScopedStep {
 public:
  ScopedStep(StepProfile& profile, v1::StepKind kind, int64_t index) : profile_(profile) {
    profile_.Begin(kind, index);
  }
  ~ScopedStep() { profile_.End(); }
  ScopedStep(const ScopedStep&) = delete;
  ScopedStep& operator=(const ScopedStep&) = delete;

 private:
  StepProfile& profile_;
};

// Runs `fn`, charging its time to `phase`; returns what `fn` returns.
template <typename Fn>
auto Timed(StepProfile& profile, StepPhase phase, Fn&& fn) -> decltype(fn()) {
  ScopedPhase scope(profile, phase);
  return fn();
}

// Writes the profile as JSON (vfsynth.v1.StepProfile).
absl::Status WriteStepProfile(const StepProfile& profile, const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_STEP_PROFILE_H_

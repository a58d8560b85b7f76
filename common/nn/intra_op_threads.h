#ifndef VFSYNTH_COMMON_NN_INTRA_OP_THREADS_H_
#define VFSYNTH_COMMON_NN_INTRA_OP_THREADS_H_

namespace vfsynth {

// LibTorch's intra-op thread count is process-wide: this sets it for one scope and puts
// the previous count back when the scope ends, so that other work sharing the process
// (parties and curators of one test, a daemon's later calls) keeps its own setting.
// Callers need no LibTorch headers.
class ScopedIntraOpThreads {
 public:
  explicit ScopedIntraOpThreads(int threads);
  ~ScopedIntraOpThreads();
  ScopedIntraOpThreads(const ScopedIntraOpThreads&) = delete;
  ScopedIntraOpThreads& operator=(const ScopedIntraOpThreads&) = delete;

 private:
  const int previous_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_INTRA_OP_THREADS_H_

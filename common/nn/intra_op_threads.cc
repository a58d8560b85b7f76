#include "common/nn/intra_op_threads.h"

#include <ATen/Parallel.h>

namespace vfsynth {

ScopedIntraOpThreads::ScopedIntraOpThreads(int threads) : previous_(at::get_num_threads()) {
  at::set_num_threads(threads);
}

ScopedIntraOpThreads::~ScopedIntraOpThreads() { at::set_num_threads(previous_); }

}  // namespace vfsynth

// Prints what EnsurePassiveOpenMpWait left in effect, for process_environment_test: the
// wait policy, OPENBLAS_CORETYPE, the OpenBLAS kernel set the process runs and the pin
// warning. Linked with LibTorch so that it loads the same BLAS as the daemons.
#include <cstdlib>
#include <iostream>

#include "common/base/cli.h"

namespace {

const char* Get(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "(unset)" : value;
}

}  // namespace

int main(int, char** argv) {
  vfsynth::EnsurePassiveOpenMpWait(argv);
  std::cout << "OMP_WAIT_POLICY=" << Get("OMP_WAIT_POLICY") << "\n"
            << "OPENBLAS_CORETYPE=" << Get("OPENBLAS_CORETYPE") << "\n"
            << "core=" << vfsynth::BlasCoreName() << "\n"
            << "warning=" << vfsynth::BlasPinWarning() << "\n";
  return 0;
}

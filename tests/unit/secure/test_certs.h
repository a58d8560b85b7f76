#ifndef VFSYNTH_TESTS_UNIT_SECURE_TEST_CERTS_H_
#define VFSYNTH_TESTS_UNIT_SECURE_TEST_CERTS_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace vfsynth::secure::testing {

// A CA and its parties' certificates from deploy/gen-certs.sh under `dir`: ca.crt, and per
// party <party>.crt and <party>.key naming spiffe://vfsynth/party/<party>. Test keys only.
inline ::testing::AssertionResult GenerateTestCerts(const std::string& dir,
                                                    const std::string& parties) {
  const std::string command = absl::StrCat("bash ", VFSYNTH_SOURCE_DIR, "/deploy/gen-certs.sh ",
                                           dir, " ", parties, " > /dev/null");
  if (std::system(command.c_str()) != 0) return ::testing::AssertionFailure() << command;
  return ::testing::AssertionSuccess();
}

inline std::string ReadTestFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace vfsynth::secure::testing

#endif  // VFSYNTH_TESTS_UNIT_SECURE_TEST_CERTS_H_

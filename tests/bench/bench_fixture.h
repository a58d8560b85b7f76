#ifndef VFSYNTH_TESTS_BENCH_BENCH_FIXTURE_H_
#define VFSYNTH_TESTS_BENCH_BENCH_FIXTURE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vfsynth::bench {

// Party files, certificates and secrets for one party count: UCI Adult split into
// `parties` vertical slices under root/k<K>[-vflgan]/.
struct Fixture {
  std::vector<std::string> names;    // p0, p1, ...
  std::vector<std::string> data;     // per party: CSV with the id column
  std::vector<std::string> schemas;  // per party: schema JSON
  std::vector<int> widths;           // per party: encoded width d_k
  std::string certs;                 // gen-certs.sh output (ca, curator, parties)
  std::string secrets;               // sampling_secret / alignment_key file
  std::string sampling_secret;
  std::string alignment_key;
};

// Columns go largest encoded width first to the party with the fewest columns so far
// ("default"), or, for "vflgan" (2 parties), native-country, age, workclass and
// fnlwgt (53 encoded columns, VFLGAN's party width) to p0 and the rest (57) to p1.
// "wide" is a 45,000-record, 17-column table made from Adult (two derived columns),
// split like "default".
// Certificates are made once under root/certs.
absl::StatusOr<Fixture> PrepareFixture(const std::string& root, int parties,
                                       const std::string& preset);

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_BENCH_FIXTURE_H_

#include "tests/bench/bench_fixture.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/data/encoder.h"
#include "common/data/schema.h"
#include "common/data/split.h"

namespace vfsynth::bench {
namespace {

constexpr int kMaxParties = 8;
const char kSamplingSecret[] = "bench-sampling-secret-0123456789";
const char kAlignmentKey[] = "bench-alignment-key-0123456789";

absl::StatusOr<int> EncodedWidth(const v1::Schema& schema, const v1::Column& column) {
  v1::Schema one = schema;
  one.clear_columns();
  *one.add_columns() = column;
  ASSIGN_OR_RETURN(const TableEncoder encoder, TableEncoder::Create(one));
  return encoder.width();
}

// Party of each column (schema order).
absl::StatusOr<std::vector<int>> Assign(const v1::Schema& schema, int parties,
                                        const std::string& preset) {
  const int columns = schema.columns_size();
  std::vector<int> owner(columns, -1);
  if (preset == "vflgan") {
    if (parties != 2) return absl::InvalidArgumentError("the vflgan preset has 2 parties");
    const absl::flat_hash_set<std::string> first = {"native-country", "age", "workclass", "fnlwgt"};
    for (int c = 0; c < columns; ++c) owner[c] = first.contains(schema.columns(c).name()) ? 0 : 1;
    return owner;
  }
  if (parties < 1 || parties > std::min(columns, kMaxParties)) {
    return absl::InvalidArgumentError(absl::StrCat("parties must be in [1, ", kMaxParties, "]"));
  }
  std::vector<int> widths(columns);
  for (int c = 0; c < columns; ++c) {
    ASSIGN_OR_RETURN(widths[c], EncodedWidth(schema, schema.columns(c)));
  }
  std::vector<int> order(columns);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return widths[a] > widths[b]; });
  std::vector<int> count(parties, 0);
  for (int c : order) {
    const int p = static_cast<int>(std::min_element(count.begin(), count.end()) - count.begin());
    owner[c] = p;
    ++count[p];
  }
  return owner;
}

absl::Status MakeCertificates(const std::string& dir) {
  if (std::filesystem::exists(dir + "/p" + std::to_string(kMaxParties - 1) + ".crt")) {
    return absl::OkStatus();
  }
  std::string command = absl::StrCat("bash ", VFSYNTH_SOURCE_DIR, "/deploy/gen-certs.sh ", dir);
  for (int k = 0; k < kMaxParties; ++k) absl::StrAppend(&command, " p", k);
  absl::StrAppend(&command, " > /dev/null");
  if (std::system(command.c_str()) != 0)
    return absl::InternalError(absl::StrCat("failed: ", command));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Fixture> PrepareFixture(const std::string& root, int parties,
                                       const std::string& preset) {
  const std::string schema_path =
      absl::StrCat(VFSYNTH_SOURCE_DIR, "/deploy/schemas/adult.schema.json");
  ASSIGN_OR_RETURN(const v1::Schema schema, LoadSchema(schema_path));
  ASSIGN_OR_RETURN(const std::vector<int> owner, Assign(schema, parties, preset));
  Fixture fixture;
  v1::PartiesFile layout;
  for (int k = 0; k < parties; ++k) {
    fixture.names.push_back(absl::StrCat("p", k));
    layout.add_parties()->set_name(fixture.names.back());
  }
  for (int c = 0; c < schema.columns_size(); ++c) {
    layout.mutable_parties(owner[c])->add_columns(schema.columns(c).name());
  }
  const std::string dir =
      absl::StrCat(root, "/k", parties, preset == "default" ? "" : "-" + preset);
  RETURN_IF_ERROR(MakeDirectories(dir));
  ASSIGN_OR_RETURN(const std::string layout_json, ToJson(layout));
  RETURN_IF_ERROR(WriteFileAtomically(dir + "/parties.json", layout_json));
  ASSIGN_OR_RETURN(const SplitResult split,
                   SplitFiles(absl::StrCat(VFSYNTH_DATASETS_DIR, "/adult.csv"), schema_path,
                              dir + "/parties.json", dir, /*skip_bad_rows=*/false));
  for (const PartyTable& party : split.parties) {
    fixture.data.push_back(absl::StrCat(dir, "/", party.name, ".csv"));
    fixture.schemas.push_back(absl::StrCat(dir, "/", party.name, ".schema.json"));
    ASSIGN_OR_RETURN(const TableEncoder encoder, TableEncoder::Create(party.schema));
    fixture.widths.push_back(encoder.width());
  }
  fixture.certs = root + "/certs";
  RETURN_IF_ERROR(MakeCertificates(fixture.certs));
  fixture.sampling_secret = kSamplingSecret;
  fixture.alignment_key = kAlignmentKey;
  fixture.secrets = root + "/secrets.txt";
  RETURN_IF_ERROR(WriteFileAtomically(
      fixture.secrets,
      absl::StrCat("sampling_secret=", kSamplingSecret, "\nalignment_key=", kAlignmentKey, "\n")));
  return fixture;
}

}  // namespace vfsynth::bench

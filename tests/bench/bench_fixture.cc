#include "tests/bench/bench_fixture.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "common/data/schema.h"
#include "common/data/split.h"

namespace vfsynth::bench {
namespace {

constexpr int kMaxParties = 8;
const char kSamplingSecret[] = "bench-sampling-secret-0123456789abcdef";
const char kAlignmentKey[] = "bench-alignment-key-0123456789abcdef";

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

struct SourceTable {
  std::string csv;
  std::string schema;
};

// Adult's age or hours-per-week moved by -1, 0 or +1 within the schema's range.
std::string Jitter(const std::string& value, const v1::Column& column, std::mt19937_64& rng) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v)) return value;
  v = std::clamp<int64_t>(v + static_cast<int64_t>(rng() % 3) - 1,
                          static_cast<int64_t>(column.min()), static_cast<int64_t>(column.max()));
  return absl::StrCat(v);
}

// Category `bucket` of `categories`, or one drawn at random for a tenth of the records:
// a derived column with a known dependence on its source.
std::string Derived(int bucket, const std::vector<std::string>& categories, std::mt19937_64& rng) {
  if (rng() % 10 == 0) return categories[rng() % categories.size()];
  return categories[bucket];
}

// "wide": 45,000 records drawn with replacement from Adult (age and hours jittered) with
// two derived columns, 17 in all; any other preset: Adult as shipped.
absl::StatusOr<SourceTable> Source(const std::string& root, const std::string& preset) {
  SourceTable adult{absl::StrCat(VFSYNTH_DATASETS_DIR, "/adult.csv"),
                    absl::StrCat(VFSYNTH_SOURCE_DIR, "/deploy/schemas/adult.schema.json")};
  if (preset != "wide") return adult;
  ASSIGN_OR_RETURN(v1::Schema schema, LoadSchema(adult.schema));
  ASSIGN_OR_RETURN(const CsvTable source, ReadCsv(adult.csv));
  const std::vector<std::string> age_bands = {"17-24", "25-34", "35-44", "45-54", "55-64", "65+"};
  const std::vector<std::string> workloads = {"part-time", "full-time", "overtime"};
  int age = -1, hours = -1;
  for (int c = 0; c < schema.columns_size(); ++c) {
    if (schema.columns(c).name() == "age") age = c;
    if (schema.columns(c).name() == "hours-per-week") hours = c;
  }
  if (age < 0 || hours < 0 || source.header.size() != static_cast<size_t>(schema.columns_size()))
    return absl::InternalError("adult.csv does not have the schema's columns");
  for (const auto& [name, categories] : {std::make_pair("age-band", age_bands),
                                         std::make_pair("workload", workloads)}) {
    v1::Column* column = schema.add_columns();
    column->set_name(name);
    column->set_type("categorical");
    for (const std::string& category : categories) column->add_categories(category);
  }
  schema.set_name("adult-wide");
  CsvTable wide;
  wide.header = source.header;
  wide.header.push_back("age-band");
  wide.header.push_back("workload");
  std::mt19937_64 rng(45000);
  constexpr int kRecords = 45000;
  for (int i = 0; i < kRecords; ++i) {
    std::vector<std::string> row = source.rows[rng() % source.rows.size()];
    row[age] = Jitter(row[age], schema.columns(age), rng);
    row[hours] = Jitter(row[hours], schema.columns(hours), rng);
    int64_t a = 0, h = 0;
    if (!absl::SimpleAtoi(row[age], &a) || !absl::SimpleAtoi(row[hours], &h))
      return absl::InternalError("adult.csv: age or hours-per-week is not a number");
    const int band = a < 25 ? 0 : a < 35 ? 1 : a < 45 ? 2 : a < 55 ? 3 : a < 65 ? 4 : 5;
    row.push_back(Derived(band, age_bands, rng));
    row.push_back(Derived(h < 35 ? 0 : h <= 45 ? 1 : 2, workloads, rng));
    wide.rows.push_back(std::move(row));
  }
  const std::string dir = root + "/wide";
  RETURN_IF_ERROR(MakeDirectories(dir));
  SourceTable out{dir + "/adult-wide.csv", dir + "/adult-wide.schema.json"};
  RETURN_IF_ERROR(WriteCsv(out.csv, wide));
  ASSIGN_OR_RETURN(const std::string schema_json, ToJson(schema));
  RETURN_IF_ERROR(WriteFileAtomically(out.schema, schema_json));
  return out;
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
  ASSIGN_OR_RETURN(const SourceTable source, Source(root, preset));
  ASSIGN_OR_RETURN(const v1::Schema schema, LoadSchema(source.schema));
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
                   SplitFiles(source.csv, source.schema, dir + "/parties.json", dir,
                              /*skip_bad_rows=*/false));
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

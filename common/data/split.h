#ifndef VFSYNTH_COMMON_DATA_SPLIT_H_
#define VFSYNTH_COMMON_DATA_SPLIT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

inline constexpr char kDefaultIdColumn[] = "id";

struct PartyTable {
  std::string name;
  CsvTable table;     // id column first, then the party's columns in schema order
  v1::Schema schema;  // the party's columns, id_column set
};

struct SplitResult {
  std::vector<PartyTable> parties;
  std::vector<std::string> unassigned_columns;  // schema columns no party holds
};

// Cuts a joint table into per-party tables: by columns, or with parties.by_rows every
// column and the rows r with r mod K = k to party k; with a schema's user_column, by rows
// gives the rows of the u-th user (in order of first appearance) to party u mod K and
// keeps the user column after the id. The id column is kept when the joint
// schema names one that the table has (ids must be unique and non-empty); otherwise
// the 0-based row number is added as the id. Errors for unknown columns, columns held
// by two parties, parties without columns (with columns, cut by rows), or duplicate
// party names.
absl::StatusOr<SplitResult> SplitTable(const CsvTable& joint, const v1::Schema& schema,
                                       const v1::PartiesFile& parties);

// A uniformly random share of the rows kept out of training (for evaluation).
struct HoldoutOptions {
  double fraction = 0;  // in [0, 1); 0: no holdout
  uint64_t seed = 0;
};

// Deterministic random cut of `table`'s rows: (kept, held out), each in input order,
// round(fraction * rows) rows held out.
std::pair<CsvTable, CsvTable> HoldOutRows(const CsvTable& table, const HoldoutOptions& options);

// The rows of `table` whose values `schema` admits, as each party will check them (its
// categories, finite numbers, integers, declared nulls). A bad value is an error naming
// its line and column, or with `skip_bad_rows` its row is dropped and counted.
absl::StatusOr<CsvTable> KeepValidRows(CsvTable table, const v1::Schema& schema,
                                       const std::string& source, bool skip_bad_rows);

// Reads, checks (KeepValidRows), splits and writes DIR/<party>.csv and DIR/<party>.schema.json.
// With a holdout, the held-out rows go (joint, all columns) to DIR/holdout.csv, the others to
// DIR/train.csv, and only those others are cut into party files; a schema with a user column
// takes no holdout (it would cut users).
absl::StatusOr<SplitResult> SplitFiles(const std::string& input, const std::string& schema_path,
                                       const std::string& parties_path, const std::string& out_dir,
                                       bool skip_bad_rows, const HoldoutOptions& holdout = {});

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_SPLIT_H_

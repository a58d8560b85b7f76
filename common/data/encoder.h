#ifndef VFSYNTH_COMMON_DATA_ENCODER_H_
#define VFSYNTH_COMMON_DATA_ENCODER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "common/data/schema.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// How the generator must produce a span of encoded columns.
enum class BlockKind {
  kSoftmax,  // one-hot block: categories, bins, or present/missing indicator
  kTanh,     // one scalar in [-1, 1]
};

struct OutputBlock {
  BlockKind kind;
  int offset;  // first encoded column of the block
  int width;   // number of encoded columns (1 for kTanh)
  // One-hot over declared bins with within_bin: the column of the position inside the
  // bin (a kTanh block), and how many leading slots are bins (the rest: missing). -1, 0
  // otherwise.
  int position_offset = -1;
  int position_slots = 0;
};

// Row-major float matrix of encoded records.
struct EncodedTable {
  int64_t rows = 0;
  int64_t width = 0;
  std::vector<float> values;
};

struct EncodeOptions {
  // Drop (and count) rows with an unknown category, unparsable number or
  // unexpected missing value instead of failing on the first one.
  bool skip_bad_rows = false;
};

struct EncodeResult {
  EncodedTable table;
  std::vector<int64_t> kept_rows;  // indices into the CsvTable rows
  int64_t skipped_rows = 0;
  std::vector<int64_t> clipped_values;  // per schema column: values clipped to bounds
};

// Table <-> tensor encoding driven only by the schema (public metadata), never by
// statistics of the data:
//   categorical -> one-hot over declared categories (+1 slot for missing if nullable)
//   numeric     -> scaled to [-1, 1] by the declared bounds, or one-hot over declared
//                  bins (with within_bin: plus the position inside the bin scaled to
//                  [-1, 1]); nullable numerics get an extra present/missing block.
class TableEncoder {
 public:
  static absl::StatusOr<TableEncoder> Create(const v1::Schema& schema);

  const v1::Schema& schema() const { return schema_; }
  int width() const { return width_; }
  const std::vector<OutputBlock>& blocks() const { return blocks_; }

  // Encodes the schema's columns (located by header name; other columns such as the
  // id are ignored). Errors give source line and column.
  absl::StatusOr<EncodeResult> Encode(const CsvTable& table, const std::string& source,
                                      const EncodeOptions& options = {}) const;

  // The one-hot value block of categorical column `column`; NOT_FOUND if the schema has
  // no such column, INVALID_ARGUMENT if it is not categorical.
  absl::StatusOr<OutputBlock> CategoricalBlock(const std::string& column) const;

  // The column a block of blocks() encodes, for reports: its name, "<name> (missing)" for
  // a scalar column's present/missing block, "<name> (position)" for a within-bin position.
  std::string BlockName(const OutputBlock& block) const;

  // Decodes `rows` x width() values: argmax inside one-hot blocks, inverse scaling
  // for numerics (integers rounded, bins to their midpoint). Header = schema columns.
  CsvTable Decode(const float* values, int64_t rows) const;

 private:
  struct ColumnCodec {
    int index;  // into schema_.columns()
    ColumnKind kind;
    std::string missing_token;
    int value_offset;    // start of the category/bin block or the scalar
    int value_width;     // categories(+missing) or bins(+missing) or 1
    int missing_offset;  // scalar numerics: offset of the 2-wide present/missing block, else -1
    bool binned;
    int within_offset;  // binned with within_bin: the position scalar, else -1
  };

  absl::Status EncodeValue(const ColumnCodec& codec, const std::string& text, float* row,
                           bool* clipped) const;
  std::string DecodeValue(const ColumnCodec& codec, const float* row) const;
  const v1::Column& ColumnOf(const ColumnCodec& codec) const {
    return schema_.columns(codec.index);
  }

  v1::Schema schema_;
  std::vector<ColumnCodec> codecs_;
  std::vector<OutputBlock> blocks_;
  int width_ = 0;
};

// Formats a decoded numeric: integers without decimals, others with up to 6
// decimals and no trailing zeros.
std::string FormatNumber(double value, bool integer);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_ENCODER_H_

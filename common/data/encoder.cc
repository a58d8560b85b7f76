#include "common/data/encoder.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/quoted_value.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

int ArgMax(const float* values, int width) {
  return static_cast<int>(std::max_element(values, values + width) - values);
}

// Index of the bin holding `value` (edges e_0 < ... < e_m; bins [e_i, e_{i+1})),
// values at or beyond the last edge fall in the last bin.
int BinIndex(const v1::Column& column, double value) {
  const auto& edges = column.bins();
  const auto it = std::upper_bound(edges.begin(), edges.end(), value);
  const int index = static_cast<int>(it - edges.begin()) - 1;
  return std::clamp(index, 0, column.bins_size() - 2);
}

// Bounds of bin `index` as decoding uses them: the last bin includes its upper edge;
// an integer bin [a, b) holds the integers a .. ceil(b) - 1.
std::pair<double, double> BinRange(const v1::Column& column, int index, bool integer) {
  const double lo = column.bins(index);
  double hi = column.bins(index + 1);
  if (integer && index + 2 < column.bins_size()) hi = std::max(std::ceil(lo), std::ceil(hi) - 1);
  return {lo, hi};
}

}  // namespace

std::string FormatNumber(double value, bool integer) {
  if (integer) return absl::StrCat(static_cast<int64_t>(std::llround(value)));
  std::string text = absl::StrFormat("%.6f", value);
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  if (text == "-0") text = "0";
  return text;
}

absl::StatusOr<TableEncoder> TableEncoder::Create(const v1::Schema& schema) {
  RETURN_IF_ERROR(ValidateSchema(schema));
  TableEncoder encoder;
  encoder.schema_ = schema;
  int offset = 0;
  for (int index = 0; index < encoder.schema_.columns_size(); ++index) {
    const v1::Column& column = encoder.schema_.columns(index);
    ColumnCodec codec;
    codec.index = index;
    ASSIGN_OR_RETURN(codec.kind, ParseColumnKind(column.type()));
    codec.missing_token = MissingToken(encoder.schema_, column);
    codec.binned = column.bins_size() > 0;
    codec.missing_offset = -1;
    codec.within_offset = -1;
    codec.value_offset = offset;
    if (codec.kind == ColumnKind::kCategorical || codec.binned) {
      const int values = codec.kind == ColumnKind::kCategorical ? column.categories_size()
                                                                : column.bins_size() - 1;
      codec.value_width = values + (column.nullable() ? 1 : 0);
      encoder.blocks_.push_back({BlockKind::kSoftmax, offset, codec.value_width});
      offset += codec.value_width;
      if (column.within_bin()) {
        encoder.blocks_.back().position_offset = offset;
        encoder.blocks_.back().position_slots = values;
        codec.within_offset = offset;
        encoder.blocks_.push_back({BlockKind::kTanh, offset, 1});
        offset += 1;
      }
    } else {
      codec.value_width = 1;
      encoder.blocks_.push_back({BlockKind::kTanh, offset, 1});
      offset += 1;
      if (column.nullable()) {
        codec.missing_offset = offset;
        encoder.blocks_.push_back({BlockKind::kSoftmax, offset, 2});
        offset += 2;
      }
    }
    encoder.codecs_.push_back(codec);
  }
  encoder.width_ = offset;
  return encoder;
}

absl::Status TableEncoder::EncodeValue(const ColumnCodec& codec, const std::string& text,
                                       float* row, bool* clipped) const {
  const v1::Column& column = ColumnOf(codec);
  const bool missing = text.empty() || text == codec.missing_token;
  if (missing) {
    if (!column.nullable()) {
      return absl::InvalidArgumentError("missing value in a column not declared nullable");
    }
    if (codec.missing_offset >= 0) {
      row[codec.missing_offset + 1] = 1.0f;  // scalar stays 0 (the centre)
    } else {
      row[codec.value_offset + codec.value_width - 1] = 1.0f;
    }
    return absl::OkStatus();
  }
  if (codec.kind == ColumnKind::kCategorical) {
    for (int i = 0; i < column.categories_size(); ++i) {
      if (column.categories(i) == text) {
        row[codec.value_offset + i] = 1.0f;
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("value ", QuotedValue(text), " is not one of the schema's categories"));
  }
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat(QuotedValue(text), " is not a finite number"));
  }
  if (codec.kind == ColumnKind::kInteger && value != std::floor(value)) {
    return absl::InvalidArgumentError(absl::StrCat(QuotedValue(text), " is not an integer"));
  }
  if (value < column.min() || value > column.max()) {
    *clipped = true;
    value = std::clamp(value, column.min(), column.max());
  }
  if (codec.binned) {
    const int bin = BinIndex(column, value);
    row[codec.value_offset + bin] = 1.0f;
    if (codec.within_offset >= 0) {
      const auto [lo, hi] = BinRange(column, bin, codec.kind == ColumnKind::kInteger);
      const double position = hi > lo ? std::clamp((value - lo) / (hi - lo), 0.0, 1.0) : 0.0;
      row[codec.within_offset] = static_cast<float>(2.0 * position - 1.0);
    }
  } else {
    row[codec.value_offset] =
        static_cast<float>(2.0 * (value - column.min()) / (column.max() - column.min()) - 1.0);
  }
  if (codec.missing_offset >= 0) row[codec.missing_offset] = 1.0f;
  return absl::OkStatus();
}

absl::StatusOr<EncodeResult> TableEncoder::Encode(const CsvTable& table, const std::string& source,
                                                  const EncodeOptions& options) const {
  std::vector<int> positions;
  for (const ColumnCodec& codec : codecs_) {
    const int index = table.ColumnIndex(ColumnOf(codec).name());
    if (index < 0) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": column '", ColumnOf(codec).name(),
                                                     "' of the schema is not in the header"));
    }
    positions.push_back(index);
  }
  EncodeResult result;
  result.clipped_values.assign(codecs_.size(), 0);
  result.table.width = width_;
  result.table.values.reserve(table.rows.size() * width_);
  std::vector<float> row(width_);
  std::vector<bool> clipped(codecs_.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    std::fill(row.begin(), row.end(), 0.0f);
    std::fill(clipped.begin(), clipped.end(), false);
    absl::Status status;
    size_t c = 0;
    for (; c < codecs_.size() && status.ok(); ++c) {
      bool was_clipped = false;
      status = EncodeValue(codecs_[c], table.rows[r][positions[c]], row.data(), &was_clipped);
      clipped[c] = was_clipped;
    }
    if (!status.ok()) {
      if (options.skip_bad_rows) {
        ++result.skipped_rows;
        continue;
      }
      const int64_t line = r < table.line_numbers.size() ? table.line_numbers[r] : -1;
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": column '",
                                                     ColumnOf(codecs_[c - 1]).name(),
                                                     "': ", status.message()));
    }
    for (size_t k = 0; k < codecs_.size(); ++k) result.clipped_values[k] += clipped[k];
    result.table.values.insert(result.table.values.end(), row.begin(), row.end());
    result.kept_rows.push_back(static_cast<int64_t>(r));
  }
  result.table.rows = static_cast<int64_t>(result.kept_rows.size());
  return result;
}

std::string TableEncoder::DecodeValue(const ColumnCodec& codec, const float* row) const {
  const v1::Column& column = ColumnOf(codec);
  if (codec.missing_offset >= 0 && row[codec.missing_offset + 1] > row[codec.missing_offset]) {
    return codec.missing_token;
  }
  const bool integer = codec.kind == ColumnKind::kInteger;
  if (codec.kind == ColumnKind::kCategorical || codec.binned) {
    const int index = ArgMax(row + codec.value_offset, codec.value_width);
    const int values =
        codec.kind == ColumnKind::kCategorical ? column.categories_size() : column.bins_size() - 1;
    if (index >= values) return codec.missing_token;
    if (codec.kind == ColumnKind::kCategorical) return column.categories(index);
    if (codec.within_offset >= 0) {
      const auto [lo, hi] = BinRange(column, index, integer);
      const double scaled = std::clamp(static_cast<double>(row[codec.within_offset]), -1.0, 1.0);
      double value = lo + (scaled + 1.0) * 0.5 * (hi - lo);
      if (integer) value = std::clamp(std::round(value), std::ceil(lo), std::floor(hi));
      return FormatNumber(value, integer);
    }
    double mid = 0.5 * (column.bins(index) + column.bins(index + 1));
    if (integer) mid = std::clamp(std::round(mid), column.min(), column.max());
    return FormatNumber(mid, integer);
  }
  const double scaled = std::clamp(static_cast<double>(row[codec.value_offset]), -1.0, 1.0);
  double value = column.min() + (scaled + 1.0) * 0.5 * (column.max() - column.min());
  if (integer) value = std::clamp(std::round(value), column.min(), column.max());
  return FormatNumber(value, integer);
}

absl::StatusOr<OutputBlock> TableEncoder::CategoricalBlock(const std::string& column) const {
  for (const ColumnCodec& codec : codecs_) {
    if (ColumnOf(codec).name() != column) continue;
    if (codec.kind != ColumnKind::kCategorical) {
      return absl::InvalidArgumentError(absl::StrCat("column '", column, "' is not categorical"));
    }
    return OutputBlock{BlockKind::kSoftmax, codec.value_offset, codec.value_width};
  }
  return absl::NotFoundError(absl::StrCat("the schema has no column '", column, "'"));
}

std::string TableEncoder::BlockName(const OutputBlock& block) const {
  for (const ColumnCodec& codec : codecs_) {
    const std::string& name = ColumnOf(codec).name();
    if (block.offset == codec.missing_offset) return absl::StrCat(name, " (missing)");
    if (block.offset == codec.within_offset) return absl::StrCat(name, " (position)");
    if (block.offset == codec.value_offset) return name;
  }
  return absl::StrCat("block at ", block.offset);
}

CsvTable TableEncoder::Decode(const float* values, int64_t rows) const {
  CsvTable table;
  for (const ColumnCodec& codec : codecs_) table.header.push_back(ColumnOf(codec).name());
  table.rows.reserve(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = values + r * width_;
    std::vector<std::string> fields;
    fields.reserve(codecs_.size());
    for (const ColumnCodec& codec : codecs_) fields.push_back(DecodeValue(codec, row));
    table.rows.push_back(std::move(fields));
  }
  return table;
}

}  // namespace vfsynth

#include "common/data/schema.h"

#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/quoted_value.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

absl::Status ColumnError(const v1::Column& column, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("column ", QuotedValue(column.name()), ": ", problem));
}

absl::Status ValidateNumeric(const v1::Column& column) {
  if (!column.has_min() || !column.has_max()) {
    return ColumnError(column, "numeric columns need declared 'min' and 'max' bounds");
  }
  if (!std::isfinite(column.min()) || !std::isfinite(column.max()) ||
      !(column.min() < column.max())) {
    return ColumnError(column, absl::StrCat("bounds must be finite with min < max, got [",
                                            column.min(), ", ", column.max(), "]"));
  }
  if (column.categories_size() > 0) {
    return ColumnError(column, "numeric columns take bounds, not 'categories'");
  }
  if (column.bins_size() == 1) return ColumnError(column, "'bins' needs at least 2 edges");
  if (!column.encoding().empty() && column.encoding() != "grid" && column.encoding() != "scalar") {
    return ColumnError(column, absl::StrCat("unknown encoding ", QuotedValue(column.encoding()),
                                            " (expected grid or scalar)"));
  }
  if (!column.encoding().empty() && column.bins_size() > 0) {
    return ColumnError(column, "declared 'bins' are the encoding: drop 'encoding'");
  }
  if (column.within_bin() && column.bins_size() == 0) {
    return ColumnError(column, "'within_bin' needs declared 'bins'");
  }
  for (int i = 0; i < column.bins_size(); ++i) {
    const double edge = column.bins(i);
    if (!std::isfinite(edge) || edge < column.min() || edge > column.max()) {
      return ColumnError(column, absl::StrCat("bin edge ", edge, " outside [min, max]"));
    }
    if (i > 0 && !(edge > column.bins(i - 1))) {
      return ColumnError(column, "bin edges must be strictly increasing");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ColumnKind> ParseColumnKind(absl::string_view type) {
  if (type == "categorical") return ColumnKind::kCategorical;
  if (type == "continuous") return ColumnKind::kContinuous;
  if (type == "integer") return ColumnKind::kInteger;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown column type '", type, "' (expected categorical, continuous or integer)"));
}

absl::Status ValidateSchema(const v1::Schema& schema) {
  if (schema.columns_size() == 0) return absl::InvalidArgumentError("schema has no columns");
  absl::flat_hash_set<std::string> names;
  for (const v1::Column& column : schema.columns()) {
    if (column.name().empty()) return absl::InvalidArgumentError("a column has an empty name");
    if (!names.insert(column.name()).second) {
      return ColumnError(column, "declared more than once");
    }
    if (column.name() == schema.id_column()) {
      return ColumnError(column, "is the id column; it must not be listed as a data column");
    }
    if (column.name() == schema.user_column()) {
      return ColumnError(column, "is the user column; it must not be listed as a data column");
    }
    auto kind = ParseColumnKind(column.type());
    if (!kind.ok()) return ColumnError(column, kind.status().message());
    if (*kind == ColumnKind::kCategorical) {
      if (column.categories_size() == 0) return ColumnError(column, "no 'categories' declared");
      if (column.has_min() || column.has_max() || column.bins_size() > 0 ||
          !column.encoding().empty()) {
        return ColumnError(
            column, "categorical columns take 'categories', not bounds, bins or an encoding");
      }
      absl::flat_hash_set<std::string> seen;
      const std::string missing = MissingToken(schema, column);
      for (const std::string& category : column.categories()) {
        if (!seen.insert(category).second) {
          return ColumnError(column, absl::StrCat("category ", QuotedValue(category), " listed twice"));
        }
        if (category == missing || category.empty()) {
          return ColumnError(column, absl::StrCat("category ", QuotedValue(category),
                                                  " collides with the missing-value token; "
                                                  "use 'nullable' instead"));
        }
      }
    } else {
      RETURN_IF_ERROR(ValidateNumeric(column));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Schema> ParseSchema(const std::string& json, const std::string& source) {
  v1::Schema schema;
  RETURN_IF_ERROR(ParseJsonInto(json, source, &schema));
  absl::Status status = ValidateSchema(schema);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", status.message()));
  }
  return schema;
}

absl::StatusOr<v1::Schema> LoadSchema(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string json, ReadFile(path));
  return ParseSchema(json, path);
}

std::string MissingToken(const v1::Schema& schema, const v1::Column& column) {
  if (column.has_missing_token()) return column.missing_token();
  if (schema.has_missing_token()) return schema.missing_token();
  return kDefaultMissingToken;
}

}  // namespace vfsynth

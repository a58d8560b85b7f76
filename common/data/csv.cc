#include "common/data/csv.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/quoted_value.h"
#include "common/base/status_macros.h"
#include "common/base/text_encoding.h"

namespace vfsynth {
namespace {

constexpr absl::string_view kUtf8Bom = "\xEF\xBB\xBF";

// Splits one record starting at `pos`; advances `pos` past its line end and counts
// the lines it consumed.
class RecordScanner {
 public:
  RecordScanner(absl::string_view text, const CsvReadOptions& options)
      : text_(text), options_(options) {}

  bool AtEnd() const { return pos_ >= text_.size(); }
  int64_t line() const { return line_; }
  // Whether the last record was a blank line (one empty field, no quotes): it carries
  // no record. A quoted empty field ("") is a record with one empty value.
  bool blank() const { return blank_; }

  // On success fills `fields`. On malformed input returns an error and leaves the
  // scanner at the start of the next line so the caller may skip the record.
  absl::Status Next(std::vector<std::string>* fields) {
    fields->clear();
    blank_ = false;
    std::string field;
    bool quoted = false;       // this field started with a quote
    bool in_quotes = false;    // currently inside quotes
    bool after_quote = false;  // closing quote seen, only delimiter/EOL may follow
    absl::Status error = absl::OkStatus();
    const int64_t start_line = line_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (in_quotes) {
        if (c == '"') {
          if (pos_ < text_.size() && text_[pos_] == '"') {
            field.push_back('"');
            ++pos_;
          } else {
            in_quotes = false;
            after_quote = true;
          }
        } else {
          if (c == '\n') ++line_;
          field.push_back(c);
        }
        continue;
      }
      if (c == options_.delimiter) {
        fields->push_back(Finish(field, quoted));
        field.clear();
        quoted = after_quote = false;
      } else if (c == '\n' || c == '\r') {
        if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
        ++line_;
        fields->push_back(Finish(field, quoted));
        blank_ = fields->size() == 1 && !quoted && fields->front().empty();
        return error;
      } else if (after_quote) {
        if (c != ' ' && c != '\t' && error.ok()) {
          error = absl::InvalidArgumentError(
              absl::StrCat("unexpected character '", std::string(1, c), "' after a closing quote"));
        }
      } else if (c == '"' && absl::StripAsciiWhitespace(field).empty() && !quoted) {
        field.clear();
        quoted = in_quotes = true;
      } else {
        field.push_back(c);
      }
    }
    if (in_quotes) {
      ++line_;
      return absl::InvalidArgumentError(
          absl::StrCat("quoted field opened on line ", start_line, " is never closed"));
    }
    fields->push_back(Finish(field, quoted));
    blank_ = fields->size() == 1 && !quoted && fields->front().empty();
    ++line_;
    return error;
  }

 private:
  std::string Finish(const std::string& field, bool quoted) const {
    if (quoted || !options_.trim_unquoted) return field;
    return std::string(absl::StripAsciiWhitespace(field));
  }

  absl::string_view text_;
  const CsvReadOptions& options_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  bool blank_ = false;
};

bool NeedsQuoting(absl::string_view field, char delimiter) {
  if (field.empty()) return false;
  // The reader trims every ASCII space character (\f and \v too) around unquoted fields.
  if (absl::ascii_isspace(static_cast<unsigned char>(field.front())) ||
      absl::ascii_isspace(static_cast<unsigned char>(field.back()))) {
    return true;
  }
  // At the start of a file the reader drops a byte-order mark as encoding noise.
  if (absl::StartsWith(field, kUtf8Bom)) return true;
  for (char c : field) {
    if (c == delimiter || c == '"' || c == '\n' || c == '\r') return true;
  }
  return false;
}

void AppendField(absl::string_view field, char delimiter, std::string* out) {
  if (!NeedsQuoting(field, delimiter)) {
    out->append(field.data(), field.size());
    return;
  }
  out->push_back('"');
  for (char c : field) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

}  // namespace

int CsvTable::ColumnIndex(absl::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<CsvTable> ParseCsv(absl::string_view text, const std::string& source,
                                  const CsvReadOptions& options) {
  if (absl::StartsWith(text, kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  // After the UTF-8 mark: a table that reads must read again once written without it.
  RETURN_IF_ERROR(CheckUtf8Text(text, source));
  RecordScanner scanner(text, options);
  CsvTable table;
  std::vector<std::string> fields;
  // Header: first non-blank record.
  while (!scanner.AtEnd()) {
    const int64_t line = scanner.line();
    absl::Status status = scanner.Next(&fields);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line, ": malformed header: ", status.message()));
    }
    if (!scanner.blank()) break;
  }
  if (fields.empty() || scanner.blank()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": empty file (no header)"));
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":1: header field ", i + 1, " is empty"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (fields[j] == fields[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ": header names column ", QuotedValue(fields[i]), " twice"));
      }
    }
  }
  table.header = fields;
  while (!scanner.AtEnd()) {
    const int64_t line = scanner.line();
    absl::Status status = scanner.Next(&fields);
    if (status.ok() && scanner.blank()) continue;  // blank lines carry no record
    if (status.ok() && fields.size() != table.header.size()) {
      status = absl::InvalidArgumentError(
          absl::StrCat("expected ", table.header.size(), " fields, found ", fields.size()));
    }
    if (!status.ok()) {
      if (options.skip_bad_rows) {
        ++table.skipped_rows;
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line, ": ", status.message(),
                       " (fix the row or pass the skip-bad-rows option to drop such rows)"));
    }
    table.rows.push_back(fields);
    table.line_numbers.push_back(line);
  }
  return table;
}

absl::StatusOr<CsvTable> ReadCsv(const std::string& path, const CsvReadOptions& options) {
  ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return ParseCsv(text, path, options);
}

absl::StatusOr<std::string> FormatCsv(const CsvTable& table, char delimiter) {
  std::string out;
  auto append_row = [&](const std::vector<std::string>& row) {
    // A lone empty field would be a blank line, which readers skip: write it as "".
    if (row.size() == 1 && row[0].empty()) {
      out.append("\"\"\n");
      return;
    }
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) out.push_back(delimiter);
      AppendField(row[i], delimiter, &out);
    }
    out.push_back('\n');
  };
  append_row(table.header);
  for (size_t r = 0; r < table.rows.size(); ++r) {
    if (table.rows[r].size() != table.header.size()) {
      return absl::InternalError(absl::StrCat("row ", r, " has ", table.rows[r].size(),
                                              " fields, header has ", table.header.size()));
    }
    append_row(table.rows[r]);
  }
  return out;
}

absl::Status WriteCsv(const std::string& path, const CsvTable& table, char delimiter) {
  ASSIGN_OR_RETURN(const std::string text, FormatCsv(table, delimiter));
  return WriteFileAtomically(path, text);
}

}  // namespace vfsynth

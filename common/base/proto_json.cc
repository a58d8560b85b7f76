#include "common/base/proto_json.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/base/file_io.h"
#include "common/base/json_keys.h"
#include "common/base/quoted_value.h"
#include "common/base/status_macros.h"
#include "common/base/text_encoding.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"

namespace vfsynth {
namespace {

// What a value of protobuf's type `type` ("TYPE_INT32", or an enum's or message's type
// URL) is, in a user's words.
std::string Expected(absl::string_view type) {
  if (type == "TYPE_INT32" || type == "TYPE_SINT32" || type == "TYPE_SFIXED32")
    return "a whole number from -2147483648 to 2147483647";
  if (type == "TYPE_INT64" || type == "TYPE_SINT64" || type == "TYPE_SFIXED64")
    return "a whole number";
  if (type == "TYPE_UINT32" || type == "TYPE_FIXED32") return "a whole number from 0 to 4294967295";
  if (type == "TYPE_UINT64" || type == "TYPE_FIXED64") return "a whole number >= 0";
  if (type == "TYPE_DOUBLE" || type == "TYPE_FLOAT") return "a number";
  if (type == "TYPE_BOOL") return "true or false";
  if (type == "TYPE_STRING") return "a string in double quotes";
  if (type == "TYPE_BYTES") return "base64 text";
  const std::string name(type.substr(type.rfind('/') + 1));
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  if (const auto* values = pool->FindEnumTypeByName(name); values != nullptr) {
    std::vector<std::string> names;
    for (int i = 0; i < values->value_count(); ++i) {
      if (!absl::EndsWith(values->value(i)->name(), "UNSPECIFIED"))
        names.push_back(values->value(i)->name());
    }
    return absl::StrCat("one of ", absl::StrJoin(names, ", "));
  }
  if (pool->FindMessageTypeByName(name) != nullptr) return "an object { ... }";
  return absl::StrCat("of type ", type);
}

// protobuf's "(training.rounds): invalid value "abc" for type TYPE_INT32" as
// "setting 'training.rounds' must be a whole number ..., got "abc"" (the value cut);
// other messages as they are, cut: a malformed value can be megabytes long.
std::string UserWords(absl::string_view error) {
  constexpr absl::string_view kInvalid = "): invalid value ";
  constexpr absl::string_view kForType = " for type ";
  const size_t invalid = error.find(kInvalid);
  const size_t for_type = error.rfind(kForType);
  if (absl::StartsWith(error, "(") && invalid != absl::string_view::npos &&
      for_type != absl::string_view::npos && for_type > invalid) {
    const absl::string_view path = error.substr(1, invalid - 1);
    const size_t value_at = invalid + kInvalid.size();
    const absl::string_view value = error.substr(value_at, for_type - value_at);
    return absl::StrCat("setting '", path, "' must be ",
                        Expected(error.substr(for_type + kForType.size())), ", got ",
                        QuotedValue(value));
  }
  constexpr size_t kShown = 300;
  if (error.size() <= kShown) return std::string(error);
  return absl::StrCat(error.substr(0, kShown), "... (", error.size(), " bytes)");
}

}  // namespace

absl::Status ParseJsonInto(const std::string& json, const std::string& source,
                           google::protobuf::Message* message) {
  // Editors that save "UTF-8 with BOM" put these three bytes first; they are not JSON.
  absl::string_view text = json;
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");
  RETURN_IF_ERROR(CheckUtf8Text(text, source));
  if (const auto duplicate = FindDuplicateJsonKey(text)) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", duplicate->line, ": key ", QuotedValue(duplicate->path),
        " is given twice in one object (first on line ", duplicate->first_line,
        "); the second would silently replace the first: keep one"));
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status =
      google::protobuf::util::JsonStringToMessage(std::string(text), message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not a valid ",
                                                   message->GetDescriptor()->name(), ": ",
                                                   UserWords(std::string(status.message()))));
  }
  return absl::OkStatus();
}

absl::Status LoadJsonFile(const std::string& path, google::protobuf::Message* message) {
  ASSIGN_OR_RETURN(const std::string json, ReadFile(path));
  return ParseJsonInto(json, path, message);
}

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message,
                                   bool include_defaults) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = include_defaults;
  options.preserve_proto_field_names = true;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return absl::InternalError(std::string(status.message()));
  return out;
}

}  // namespace vfsynth

#include "common/base/proto_json.h"

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "google/protobuf/util/json_util.h"

namespace vfsynth {

absl::Status ParseJsonInto(const std::string& json, const std::string& source,
                           google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(json, message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not a valid ",
                                                   message->GetDescriptor()->name(), ": ",
                                                   std::string(status.message())));
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

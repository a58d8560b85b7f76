#ifndef VFSYNTH_COMMON_BASE_PROTO_JSON_H_
#define VFSYNTH_COMMON_BASE_PROTO_JSON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace vfsynth {

// Parses JSON text into `message`; unknown fields are an error (typos must not be
// silently ignored). `source` names the input in error messages.
absl::Status ParseJsonInto(const std::string& json, const std::string& source,
                           google::protobuf::Message* message);

// Reads and parses a JSON file.
absl::Status LoadJsonFile(const std::string& path, google::protobuf::Message* message);

// Serialises with snake_case field names, indented. With `include_defaults`, scalar
// fields holding their default (0, false, "") are written too (reports whose readers
// expect every column, e.g. a breakdown time that measured 0).
absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message,
                                   bool include_defaults = false);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_PROTO_JSON_H_

#ifndef VFSYNTH_COMMON_EVAL_JSON_WRITER_H_
#define VFSYNTH_COMMON_EVAL_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace vfsynth {

// Minimal streaming JSON writer (two-space indentation) for metrics files. Non-finite
// numbers are written as null, since JSON has no NaN.
class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(absl::string_view key);
  JsonWriter& Value(double value);
  JsonWriter& Value(int64_t value);
  JsonWriter& Value(int value) { return Value(static_cast<int64_t>(value)); }
  JsonWriter& Value(bool value);
  JsonWriter& Value(absl::string_view value);
  JsonWriter& Value(const char* value) { return Value(absl::string_view(value)); }
  JsonWriter& Array(const std::vector<double>& values);  // on one line
  // Shorthand for Key(key).Value(value).
  template <typename T>
  JsonWriter& Field(absl::string_view key, const T& value) {
    return Key(key).Value(value);
  }

  const std::string& str() const { return out_; }

  static std::string Quote(absl::string_view text);

 private:
  void BeforeValue();
  void Newline();
  JsonWriter& Close(char bracket);

  std::string out_;
  std::vector<bool> has_items_;  // per open container
  bool after_key_ = false;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_JSON_WRITER_H_

#include "common/base/json_keys.h"

#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

// Deeper nesting is left to the parser, which refuses it.
constexpr int kMaxDepth = 128;

// A key as protobuf matches it to a field: lowerCamelCase and snake_case alike.
std::string FieldSpelling(absl::string_view key) {
  std::string out;
  for (const char c : key) {
    if (absl::ascii_isupper(c)) {
      out += '_';
      out += absl::ascii_tolower(c);
    } else {
      out += c;
    }
  }
  return out;
}

class Scanner {
 public:
  explicit Scanner(absl::string_view text) : text_(text) {}

  // Scans one value at `path`; false on malformed text or once a duplicate is found.
  bool Value(const std::string& path, int depth) {
    if (depth > kMaxDepth) return false;
    SkipSpace();
    if (at_ >= text_.size()) return false;
    switch (text_[at_]) {
      case '{':
        return Object(path, depth);
      case '[':
        return Array(path, depth);
      case '"': {
        std::string ignored;
        return String(&ignored);
      }
      default:
        while (at_ < text_.size() && !absl::ascii_isspace(text_[at_]) && text_[at_] != ',' &&
               text_[at_] != ']' && text_[at_] != '}') {
          ++at_;
        }
        return true;
    }
  }

  std::optional<DuplicateJsonKey> duplicate() const { return duplicate_; }

 private:
  bool Object(const std::string& path, int depth) {
    ++at_;  // '{'
    std::map<std::string, int> first_lines;
    SkipSpace();
    if (Consume('}')) return true;
    while (true) {
      SkipSpace();
      const int line = line_;
      std::string key;
      if (at_ >= text_.size() || text_[at_] != '"' || !String(&key)) return false;
      const std::string key_path = path.empty() ? key : absl::StrCat(path, ".", key);
      const auto [seen, inserted] = first_lines.emplace(FieldSpelling(key), line);
      if (!inserted) {
        duplicate_ = DuplicateJsonKey{key_path, line, seen->second};
        return false;
      }
      SkipSpace();
      if (!Consume(':') || !Value(key_path, depth + 1)) return false;
      SkipSpace();
      if (Consume('}')) return true;
      if (!Consume(',')) return false;
    }
  }

  bool Array(const std::string& path, int depth) {
    ++at_;  // '['
    SkipSpace();
    if (Consume(']')) return true;
    for (int index = 0;; ++index) {
      if (!Value(absl::StrCat(path, "[", index, "]"), depth + 1)) return false;
      SkipSpace();
      if (Consume(']')) return true;
      if (!Consume(',')) return false;
    }
  }

  // A string at '"', its escapes kept as written except \" and \\ (enough to tell keys apart).
  bool String(std::string* out) {
    ++at_;  // '"'
    while (at_ < text_.size()) {
      const char c = text_[at_++];
      if (c == '"') return true;
      if (c == '\n') return false;
      if (c == '\\') {
        if (at_ >= text_.size()) return false;
        const char escaped = text_[at_++];
        if (escaped == '"' || escaped == '\\') {
          *out += escaped;
        } else {
          *out += '\\';
          *out += escaped;
        }
        continue;
      }
      *out += c;
    }
    return false;
  }

  void SkipSpace() {
    while (at_ < text_.size() && absl::ascii_isspace(text_[at_])) {
      if (text_[at_] == '\n') ++line_;
      ++at_;
    }
  }

  bool Consume(char c) {
    if (at_ >= text_.size() || text_[at_] != c) return false;
    ++at_;
    return true;
  }

  absl::string_view text_;
  size_t at_ = 0;
  int line_ = 1;
  std::optional<DuplicateJsonKey> duplicate_;
};

}  // namespace

std::optional<DuplicateJsonKey> FindDuplicateJsonKey(absl::string_view json) {
  Scanner scanner(json);
  scanner.Value("", 0);
  return scanner.duplicate();
}

}  // namespace vfsynth

#include "common/base/text_encoding.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

absl::Status NotUtf8(const std::string& source, absl::string_view encoding) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": file is ", encoding, "; save it as UTF-8"));
}

}  // namespace

absl::Status CheckUtf8Text(absl::string_view bytes, const std::string& source) {
  using absl::string_view;
  // Text with no zero byte is left to the readers: it reads back as it was written.
  const size_t nul = bytes.find('\0');
  if (nul == string_view::npos) return absl::OkStatus();
  if (absl::StartsWith(bytes, string_view("\xFF\xFE\0\0", 4)) ||
      absl::StartsWith(bytes, string_view("\0\0\xFE\xFF", 4))) {
    return NotUtf8(source, "UTF-32");
  }
  if (absl::StartsWith(bytes, "\xFF\xFE") || absl::StartsWith(bytes, "\xFE\xFF")) {
    return NotUtf8(source, "UTF-16");
  }
  // ASCII text in UTF-32 has three zero bytes per character, in UTF-16 one.
  const string_view head = bytes.substr(nul & ~size_t{3}, 4);
  int zeros = 0;
  for (const char c : head) zeros += c == '\0';
  if (head.size() == 4 && zeros == 3) return NotUtf8(source, "UTF-32");
  if (head.size() == 4 && zeros == 2 && head[0] != head[1] && head[2] != head[3]) {
    return NotUtf8(source, "UTF-16");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      source, ": a NUL byte at offset ", nul, ": not a text file (save it as UTF-8 text)"));
}

}  // namespace vfsynth

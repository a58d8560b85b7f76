#ifndef VFSYNTH_COMMON_CONFIG_DEFAULTS_TABLE_H_
#define VFSYNTH_COMMON_CONFIG_DEFAULTS_TABLE_H_

// Every setting's default as data: the resolvers in config.cc apply the rows through
// protobuf reflection, and tests/unit/config/defaults_table_test.cc checks the rows
// against the resolved configs, proto/vfsynth/v1/config.proto and docs/configuration.md.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// How a row gives its setting's default.
enum class DefaultKind {
  // `value`, parsed for the field's type: "256", "2e-4", "true", "64 MiB", "[256, 256]",
  // an enum value's or a string's text.
  kValue,
  // The setting at path `value` (same section), read when the row is applied.
  kCopy,
  // Left unset: the field reads as its zero value, which `value` writes ("0", "[]").
  kUnset,
  // Set by code from other settings (config.cc or the privacy plan); `value` says how.
  kComputed,
  // No default; `value` may say when it is not needed.
  kRequired,
};

// Where a row applies; a member left at its zero value holds everywhere.
struct DefaultCondition {
  v1::Topology topology = v1::TOPOLOGY_UNSPECIFIED;
  std::vector<v1::PrivacyConfig::Mode> modes;
  v1::TrainingConfig::Preset preset = v1::TrainingConfig::PRESET_UNSPECIFIED;
  bool marginal_release = false;  // only with training.marginal_weight > 0
};

struct DefaultRow {
  // Section ("model", "training", "output", "privacy", "horizontal", and the top-level
  // settings of "local", "curator", "party"), then field names.
  std::string path;
  DefaultKind kind;
  std::string value;
  DefaultCondition when;
  std::string doc;  // one line
};

// What a resolver knows when it applies defaults. A row asking for a member the
// context leaves unknown does not hold.
struct DefaultsContext {
  v1::Topology topology = v1::TOPOLOGY_UNSPECIFIED;
  v1::PrivacyConfig::Mode mode = v1::PrivacyConfig::MODE_UNSPECIFIED;
  v1::TrainingConfig::Preset preset = v1::TrainingConfig::PRESET_UNSPECIFIED;
  const v1::TrainingConfig* training = nullptr;  // read for marginal_release
};

// Every setting of the config messages. A path's default in a context is its first row
// whose condition holds there.
const std::vector<DefaultRow>& DefaultsTable();

bool Holds(const DefaultCondition& condition, const DefaultsContext& context);

// The row giving `path`'s default in `context`, or nullptr.
const DefaultRow* DefaultFor(absl::string_view path, const DefaultsContext& context);

// Sets every unset field of `message`, the settings of `section`, that has a kValue or
// kCopy row in `context`; with `only` (paths within the section, "experimental.pack"),
// just those. INTERNAL for a row the message cannot take (a table bug, which the
// table's test catches).
absl::Status ApplyDefaults(const DefaultsContext& context, absl::string_view section,
                           google::protobuf::Message* message,
                           absl::Span<const absl::string_view> only = {});

// The message type of a section, or nullptr.
const google::protobuf::Descriptor* SectionDescriptor(absl::string_view section);

// The field a path names, or nullptr.
const google::protobuf::FieldDescriptor* FieldAt(absl::string_view path);

// A path's default as config.proto's comments and docs/configuration.md write it: the
// unconditional row first, then "condition: value" per conditional row, joined by "; "
// (e.g. "3000; none: 10000; dpsgd, large_budget: 10000").
std::string DocumentedDefault(absl::string_view path);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_CONFIG_DEFAULTS_TABLE_H_

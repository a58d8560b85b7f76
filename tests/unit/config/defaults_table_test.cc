// The defaults table is the one statement of every default: the resolvers must give each
// row's value, and config.proto's "default: " comments and docs/configuration.md's
// settings tables must write each path's default as DocumentedDefault does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/proto_json.h"
#include "common/config/config.h"
#include "common/config/defaults_table.h"

namespace vfsynth {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(VFSYNTH_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Backticks dropped, runs of spaces as one, trimmed: how a default reads.
std::string Normalised(absl::string_view text) {
  std::string out = absl::StrReplaceAll(text, {{"`", ""}});
  absl::RemoveExtraAsciiWhitespace(&out);
  return out;
}

absl::string_view Section(absl::string_view path) { return path.substr(0, path.find('.')); }

std::vector<std::string> TablePaths() {
  std::vector<std::string> paths;
  std::set<std::string> seen;
  for (const DefaultRow& row : DefaultsTable()) {
    if (seen.insert(row.path).second) paths.push_back(row.path);
  }
  return paths;
}

bool NamesHorizontal(const DefaultCondition& condition) {
  if (condition.topology == v1::horizontal) return true;
  for (v1::PrivacyConfig::Mode mode : condition.modes) {
    if (mode == v1::PrivacyConfig::signds || mode == v1::PrivacyConfig::dpfedavg) return true;
  }
  return false;
}

// A minimal config of each kind in one context, resolved.
struct Resolved {
  v1::CuratorConfig curator;
  v1::PartyConfig party;
  v1::LocalRunConfig local;
};

// Whether the context's mode is its topology's default, which a config leaves unset.
bool DefaultMode(const DefaultsContext& context) {
  const DefaultRow* row = DefaultFor("privacy.mode", DefaultsContext{context.topology});
  return row != nullptr && row->value == v1::PrivacyConfig::Mode_Name(context.mode);
}

// Whether Resolve writes `path` into the configs, which then says nothing of its default.
bool GivenExplicitly(absl::string_view path, const DefaultsContext& context) {
  return (path == "privacy.mode" && !DefaultMode(context)) ||
         (path == "training.preset" && context.preset == v1::TrainingConfig::large_budget);
}

// TLS files are named rather than plaintext set, which would hide plaintext's default.
constexpr absl::string_view kTls = R"("tls":{"ca":"ca.pem","cert":"cert.pem","key":"key.pem"},)";

// Settings the context's defaults would give are left out, so that their rows are tested too.
absl::StatusOr<Resolved> Resolve(const DefaultsContext& context) {
  const bool horizontal = context.topology == v1::horizontal;
  std::vector<std::string> privacy;
  if (!DefaultMode(context)) {
    privacy.push_back(
        absl::StrCat(R"("mode":")", v1::PrivacyConfig::Mode_Name(context.mode), R"(")"));
  }
  if (context.mode != v1::PrivacyConfig::none) privacy.push_back(R"("epsilon":3)");
  const std::string settings = absl::StrCat(R"("privacy":{)", absl::StrJoin(privacy, ","), "}",
                                            horizontal ? R"(,"topology":"horizontal")" : "");
  const std::string preset = context.preset == v1::TrainingConfig::large_budget
                                 ? R"(,"training":{"preset":"large_budget"})"
                                 : "";
  Resolved resolved;
  absl::Status status = ParseJsonInto(
      absl::StrCat(R"({"run_id":"r","parties":["a","b"],)", kTls, settings, preset, "}"),
      "curator.json", &resolved.curator);
  if (status.ok()) status = ResolveCuratorConfig("", &resolved.curator);
  if (status.ok()) {
    status = ParseJsonInto(
        absl::StrCat(R"({"name":"a","curator":"127.0.0.1:5","data":"a.csv","schema":"a.json",)",
                     kTls, horizontal ? "" : R"("secrets":"s",)", settings, "}"),
        "party.json", &resolved.party);
  }
  if (status.ok()) status = ResolvePartyConfig("", &resolved.party);
  if (status.ok()) {
    status = ParseJsonInto(R"({"parties":[{"name":"a","data":"a.csv","schema":"a.json"}]})",
                           "local.json", &resolved.local);
  }
  if (status.ok()) status = ResolveLocalRunConfig("", &resolved.local);
  if (!status.ok()) return status;
  return resolved;
}

const Message& SectionMessage(const Resolved& resolved, absl::string_view section) {
  if (section == "local") return resolved.local;
  if (section == "party") return resolved.party;
  if (section == "model") return resolved.curator.model();
  if (section == "training") return resolved.curator.training();
  if (section == "output") return resolved.curator.output();
  if (section == "privacy") return resolved.curator.privacy();
  if (section == "horizontal") return resolved.curator.horizontal();
  return resolved.curator;
}

// The message holding `path`'s field in `root` (the section's message), and the field.
std::pair<const Message*, const FieldDescriptor*> Locate(const Message& root,
                                                         absl::string_view path) {
  std::vector<std::string> names = absl::StrSplit(path, '.');
  const Message* message = &root;
  for (size_t i = 1; i + 1 < names.size(); ++i) {
    const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(names[i]);
    message = &message->GetReflection()->GetMessage(*message, field);
  }
  return {message, message->GetDescriptor()->FindFieldByName(names.back())};
}

// The resolved value as the table writes it (doubles are compared as numbers).
std::string Text(const Message& message, const FieldDescriptor* field, int index = -1) {
  const auto* r = message.GetReflection();
  if (field->is_repeated() && index < 0) {
    std::vector<std::string> items;
    for (int i = 0; i < r->FieldSize(message, field); ++i) items.push_back(Text(message, field, i));
    return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
  }
  const bool rep = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r->GetRepeatedInt32(message, field, index)
                              : r->GetInt32(message, field));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(r->GetInt64(message, field));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(r->GetUInt64(message, field));
    case FieldDescriptor::CPPTYPE_BOOL:
      return r->GetBool(message, field) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_STRING:
      return r->GetString(message, field);
    case FieldDescriptor::CPPTYPE_ENUM:
      return r->GetEnum(message, field)->name();
    default:
      return "?";
  }
}

void ExpectRowGives(const DefaultRow& row, const Message& section, const std::string& where) {
  const auto [message, field] = Locate(section, row.path);
  ASSERT_NE(field, nullptr) << row.path;
  const auto* r = message->GetReflection();
  const bool set =
      field->is_repeated() ? r->FieldSize(*message, field) > 0 : r->HasField(*message, field);
  switch (row.kind) {
    case DefaultKind::kUnset:
      EXPECT_FALSE(set) << row.path << " in " << where << " is resolved to "
                        << Text(*message, field) << ", the table leaves it unset";
      return;
    case DefaultKind::kCopy: {
      const auto [source_message, source] = Locate(section, row.value);
      ASSERT_TRUE(set) << row.path << " in " << where;
      EXPECT_EQ(r->GetDouble(*message, field),
                source_message->GetReflection()->GetDouble(*source_message, source))
          << row.path << " in " << where << " is not " << row.value;
      return;
    }
    case DefaultKind::kValue:
      break;
    default:
      return;
  }
  ASSERT_TRUE(set) << row.path << " in " << where << " is left unset; the table says " << row.value;
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
    double expected = 0;
    ASSERT_TRUE(absl::SimpleAtod(row.value, &expected)) << row.path;
    EXPECT_EQ(r->GetDouble(*message, field), expected) << row.path << " in " << where;
    return;
  }
  std::string expected = row.value;
  if (absl::EndsWith(expected, " MiB")) {
    int64_t mib = 0;
    ASSERT_TRUE(absl::SimpleAtoi(absl::StripSuffix(expected, " MiB"), &mib));
    expected = absl::StrCat(mib << 20);
  }
  EXPECT_EQ(Text(*message, field), expected) << row.path << " in " << where;
}

TEST(DefaultsTableTest, ResolversGiveEachRowsDefault) {
  std::vector<DefaultsContext> contexts;
  for (int mode = v1::PrivacyConfig::none; mode <= v1::PrivacyConfig::pate; ++mode) {
    contexts.push_back(
        {v1::vertical, static_cast<v1::PrivacyConfig::Mode>(mode), v1::TrainingConfig::standard});
  }
  contexts.push_back({v1::vertical, v1::PrivacyConfig::dpsgd, v1::TrainingConfig::large_budget});
  contexts.push_back(
      {v1::vertical, v1::PrivacyConfig::marginals, v1::TrainingConfig::standard});
  contexts.push_back({v1::horizontal, v1::PrivacyConfig::signds});
  contexts.push_back({v1::horizontal, v1::PrivacyConfig::dpfedavg});
  std::set<const DefaultRow*> checked;
  for (DefaultsContext context : contexts) {
    const std::string where = absl::StrCat(v1::Topology_Name(context.topology), " ",
                                           v1::PrivacyConfig::Mode_Name(context.mode), " ",
                                           v1::TrainingConfig::Preset_Name(context.preset));
    const absl::StatusOr<Resolved> resolved = Resolve(context);
    ASSERT_TRUE(resolved.ok()) << where << ": " << resolved.status();
    context.training = &resolved->curator.training();
    const bool horizontal = context.topology == v1::horizontal;
    for (const std::string& path : TablePaths()) {
      const DefaultRow* row = DefaultFor(path, context);
      if (row == nullptr || GivenExplicitly(path, context)) continue;
      // The horizontal topology resolves its own section and only the settings rows name it for.
      const absl::string_view section = Section(path);
      if (horizontal ? section != "horizontal" && !NamesHorizontal(row->when)
                     : section == "horizontal")
        continue;
      ExpectRowGives(*row, SectionMessage(*resolved, section), where);
      checked.insert(row);
    }
  }
  for (const DefaultRow& row : DefaultsTable()) {
    if (row.kind == DefaultKind::kComputed || row.kind == DefaultKind::kRequired) continue;
    EXPECT_TRUE(checked.count(&row))
        << row.path << " (" << row.value << ") is never the default of a resolved config";
  }
}

TEST(DefaultsTableTest, EveryRowNamesAFieldAndEverySettingHasARow) {
  std::set<std::string> paths;
  for (const DefaultRow& row : DefaultsTable()) {
    EXPECT_NE(FieldAt(row.path), nullptr) << row.path;
    EXPECT_FALSE(row.doc.empty()) << row.path;
    paths.insert(row.path);
  }
  // Every field of the config messages, the sections' own message fields excepted.
  std::vector<std::pair<std::string, const Descriptor*>> pending;
  for (const char* section :
       {"model", "training", "output", "privacy", "horizontal", "local", "curator", "party"}) {
    pending.emplace_back(section, SectionDescriptor(section));
  }
  while (!pending.empty()) {
    const auto [prefix, descriptor] = pending.back();
    pending.pop_back();
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const FieldDescriptor* field = descriptor->field(i);
      const std::string path = absl::StrCat(prefix, ".", field->name());
      if (field->message_type() != nullptr && !field->is_repeated()) {
        if (SectionDescriptor(field->name()) == nullptr)
          pending.emplace_back(path, field->message_type());
        continue;
      }
      EXPECT_TRUE(paths.count(path)) << path << " has no row in the defaults table";
    }
  }
}

// Field name -> its documented default, per message, from config.proto's comments: the
// text after "default: " up to the end of its line, in the field's trailing comment or
// in the comment block right above it.
std::map<std::pair<std::string, std::string>, std::string> ProtoDefaults(const std::string& proto) {
  static const std::regex kField(R"(^\s*(optional |repeated )?[\w.]+ (\w+) = \d+;\s*(//(.*))?$)");
  static const std::regex kBlock(R"(^\s*(message|enum) (\w+) \{)");
  std::map<std::pair<std::string, std::string>, std::string> defaults;
  std::vector<std::string> scopes;
  std::vector<std::string> comment;
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(proto, '\n'))) {
    const std::string trimmed(absl::StripAsciiWhitespace(line));
    std::smatch match;
    if (absl::StartsWith(trimmed, "//")) {
      comment.push_back(trimmed.substr(2));
      continue;
    }
    if (std::regex_search(line, match, kBlock)) {
      scopes.push_back(match[1] == "enum" ? "" : match[2].str());
    } else if (trimmed == "}") {
      if (!scopes.empty()) scopes.pop_back();
    } else if (!scopes.empty() && !scopes.back().empty() &&
               std::regex_search(line, match, kField)) {
      std::vector<std::string> candidates = comment;
      if (match[3].matched) candidates.push_back(match[4].str());
      for (const std::string& text : candidates) {
        const size_t at = text.find("default: ");
        if (at != std::string::npos)
          defaults[{scopes.back(), match[2].str()}] = Normalised(text.substr(at + 9));
      }
    }
    comment.clear();
  }
  return defaults;
}

TEST(DefaultsTableTest, ProtoCommentsWriteTheTablesDefaults) {
  const std::string proto = ReadSource("proto/vfsynth/v1/config.proto");
  ASSERT_FALSE(proto.empty());
  const auto documented = ProtoDefaults(proto);
  std::set<std::pair<std::string, std::string>> known;
  for (const std::string& path : TablePaths()) {
    const FieldDescriptor* field = FieldAt(path);
    ASSERT_NE(field, nullptr) << path;
    const std::pair<std::string, std::string> key{field->containing_type()->name(), field->name()};
    known.insert(key);
    const auto it = documented.find(key);
    if (it == documented.end()) {
      ADD_FAILURE() << "config.proto: " << key.first << "." << key.second
                    << " has no \"default: " << DocumentedDefault(path) << "\"";
      continue;
    }
    EXPECT_EQ(it->second, Normalised(DocumentedDefault(path)))
        << "config.proto: " << key.first << "." << key.second;
  }
  for (const auto& [key, text] : documented) {
    EXPECT_TRUE(known.count(key)) << "config.proto documents a default of " << key.first << "."
                                  << key.second << " the table does not have";
  }
}

// The section a settings table of the doc covers, from the heading or label above it.
std::string DocScope(const std::string& line) {
  if (absl::StrContains(line, "(`LocalRunConfig`)")) return "local";
  if (absl::StrContains(line, "(`CuratorConfig`)")) return "curator";
  if (absl::StrContains(line, "(`PartyConfig`)")) return "party";
  const size_t open = line.find('`');
  if (open == std::string::npos) return "";
  return line.substr(open + 1, line.find('`', open + 1) - open - 1);
}

// Cells of a Markdown table row, "\|" kept inside a cell.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += "\\|";
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(std::string(absl::StripAsciiWhitespace(cell)));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

TEST(DefaultsTableTest, TheSettingsReferenceWritesTheTablesDefaults) {
  const std::string doc = ReadSource("docs/configuration.md");
  ASSERT_FALSE(doc.empty());
  std::set<std::string> documented;
  std::string scope;
  bool settings_table = false;
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(doc, '\n'))) {
    if (!absl::StartsWith(line, "|")) {
      if (absl::StartsWith(line, "#") || absl::EndsWith(line, ":")) scope = DocScope(line);
      settings_table = false;
      continue;
    }
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 2) continue;
    if (cells[0] == "field") {
      settings_table = true;
      continue;
    }
    if (!settings_table || absl::StartsWith(cells[0], "---")) continue;
    // A name is within the table's scope unless it starts with another section ("output.rows").
    const std::string name = Normalised(cells[0]);
    const bool sectioned =
        absl::StrContains(name, ".") && SectionDescriptor(Section(name)) != nullptr;
    const std::string path = sectioned ? name : absl::StrCat(scope, ".", name);
    const FieldDescriptor* field = FieldAt(path);
    if (field != nullptr && field->message_type() != nullptr && !field->is_repeated()) {
      continue;  // a section or a block of settings, documented in its own table
    }
    const std::string expected = DocumentedDefault(path);
    EXPECT_FALSE(expected.empty())
        << "docs/configuration.md documents " << path << ", which the table does not have";
    EXPECT_EQ(Normalised(cells[1]), Normalised(expected)) << "docs/configuration.md: " << path;
    documented.insert(path);
  }
  for (const std::string& path : TablePaths()) {
    EXPECT_TRUE(documented.count(path)) << "docs/configuration.md has no row for " << path;
  }
}

}  // namespace
}  // namespace vfsynth

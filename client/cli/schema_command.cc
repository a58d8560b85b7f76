// `vfsynth schema draft`: a starting schema and party layout drafted from a joint CSV,
// for a person to review before any run (common/data/schema_draft.h).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/command_registry.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/data/csv.h"
#include "common/data/schema_draft.h"

// Defined in split_command.cc and privacy_command.cc.
ABSL_DECLARE_FLAG(std::string, input);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(int32_t, party_count);
ABSL_DECLARE_FLAG(std::string, parties);

namespace vfsynth {
namespace {

constexpr char kPublicKnowledge[] =
    "Everything in a schema is sent to the curator and every party: bounds, categories and bins "
    "must be public "
    "knowledge about the domain, not values read off this table. This draft was read off the "
    "table: review every "
    "line, replace drafted bounds with the domain's limits, and keep only categories that are "
    "public.";

absl::Status RunSchemaCommand(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0] != "draft") {
    return absl::InvalidArgumentError(
        "usage: vfsynth schema draft --input T.csv --out DIR [--party-count N]");
  }
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (input.empty() || out.empty())
    return absl::InvalidArgumentError("schema draft needs --input and --out");
  if (!absl::GetFlag(FLAGS_parties).empty()) {
    // --parties names a layout file for the other commands; a count given there would be ignored.
    return absl::InvalidArgumentError(
        "schema draft writes the party layout: give the number of parties as --party-count N, not "
        "--parties");
  }
  const std::string schema_path = out + "/schema.json";
  const std::string parties_path = out + "/parties.json";
  for (const std::string& path : {schema_path, parties_path}) {
    if (std::filesystem::exists(path)) {
      return absl::AlreadyExistsError(
          absl::StrCat(path, " exists: remove it or choose another --out"));
    }
  }
  ASSIGN_OR_RETURN(const CsvTable table, ReadCsv(input));
  SchemaDraftOptions options;
  options.parties = absl::GetFlag(FLAGS_party_count);
  ASSIGN_OR_RETURN(const SchemaDraft draft, DraftSchema(table, options));
  ASSIGN_OR_RETURN(const std::string schema_json, ToJson(draft.schema));
  ASSIGN_OR_RETURN(const std::string parties_json, ToJson(draft.parties));
  RETURN_IF_ERROR(MakeDirectories(out));
  RETURN_IF_ERROR(WriteFileAtomically(schema_path, schema_json));
  RETURN_IF_ERROR(WriteFileAtomically(parties_path, parties_json));
  std::fprintf(stderr, "WARNING: %s\n", kPublicKnowledge);
  for (const std::string& warning : draft.warnings) std::fprintf(stderr, "  %s\n", warning.c_str());
  std::printf("wrote %s (%d columns) and %s (%d parties)\n", schema_path.c_str(),
              draft.schema.columns_size(), parties_path.c_str(), draft.parties.parties_size());
  return absl::OkStatus();
}

const CommandRegistration kRegistration("schema",
                                        {"schema draft --input T.csv --out DIR [--party-count N]   "
                                         "(a schema and party layout to review)",
                                         &RunSchemaCommand,
                                         {"input", "out", "party_count", "parties"}});

}  // namespace
}  // namespace vfsynth

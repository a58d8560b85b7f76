#include "server/core/generator_artefact.h"

#include <filesystem>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/format_header.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/checkpoint_file.h"
#include "common/config/config.h"

namespace vfsynth {
namespace {

constexpr FileFormat kFormat{"GENERATOR", "generator artefact", kGeneratorFormatVersion};

// Removes and returns `rest`'s first line (without its '\n'); nullopt if it has none.
std::optional<absl::string_view> TakeLine(absl::string_view& rest) {
  const size_t end = rest.find('\n');
  if (end == absl::string_view::npos) return std::nullopt;
  const absl::string_view line = rest.substr(0, end);
  rest.remove_prefix(end + 1);
  return line;
}

}  // namespace

std::string GeneratorArtefactPath(const v1::CuratorConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / kGeneratorFileName).string();
}

v1::GeneratorHeader MakeGeneratorHeader(const v1::CuratorConfig& config,
                                        const std::vector<v1::Schema>& schemas, int64_t rows,
                                        const v1::PrivacyPlan& plan) {
  v1::GeneratorHeader header;
  *header.mutable_privacy() = plan;
  header.set_run_id(config.run_id());
  if (config.topology() == v1::Topology::horizontal) {
    header.set_rounds(plan.rounds());  // the plan's: users / users_per_round unless set
    header.set_topology(v1::Topology::horizontal);
    *header.mutable_horizontal() = config.horizontal();
  } else {
    header.set_rounds(config.training().rounds());
    *header.mutable_model() = config.model();
  }
  header.set_seed(config.training().seed());
  for (size_t k = 0; k < schemas.size(); ++k) {
    v1::PartySchema* party = header.add_parties();
    party->set_name(config.parties(static_cast<int>(k)));
    *party->mutable_schema() = schemas[k];
  }
  v1::OutputConfig* output = header.mutable_output();
  output->set_rows(rows);
  output->set_label_column(config.output().label_column());
  output->set_label_temperature(config.output().label_temperature());
  return header;
}

absl::Status WriteGeneratorArtefact(const std::string& path, const GeneratorArtefact& artefact) {
  const std::string header = artefact.header.SerializeAsString();
  std::string body = absl::StrCat(header.size(), "\n", header);
  body.append(artefact.payload);
  return WriteFileAtomically(path,
                             absl::StrCat(FormatHeader(kFormat), Sha256Hex(body), "\n", body));
}

absl::StatusOr<GeneratorArtefact> ReadGeneratorArtefact(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string file, ReadFile(path));
  if (IsCheckpointFile(file)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path,
        " is a curator checkpoint, private to the curator (it holds the shared critic and the "
        "optimiser "
        "states); synthesize from the generator artefact the curator writes beside it: ",
        (std::filesystem::path(path).parent_path() / kGeneratorFileName).string()));
  }
  const auto not_an_artefact = [&path] {
    return absl::DataLossError(
        absl::StrCat(path, " is not a vfsynth generator artefact (", kGeneratorFileName, ")"));
  };
  ASSIGN_OR_RETURN(absl::string_view rest, BodyAfterHeader(kFormat, path, file));
  const std::optional<absl::string_view> checksum = TakeLine(rest);
  if (!checksum.has_value() || *checksum != Sha256Hex(rest)) {
    return absl::DataLossError(
        absl::StrCat(path, ": generator artefact is damaged (checksum mismatch)"));
  }
  const std::optional<absl::string_view> size_line = TakeLine(rest);
  size_t header_size = 0;
  GeneratorArtefact artefact;
  if (!size_line.has_value() || !absl::SimpleAtoi(*size_line, &header_size) ||
      header_size > rest.size() ||
      !artefact.header.ParseFromArray(rest.data(), static_cast<int>(header_size))) {
    return not_an_artefact();
  }
  rest.remove_prefix(header_size);
  artefact.payload = std::string(rest);
  return artefact;
}

}  // namespace vfsynth

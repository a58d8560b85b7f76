#include "client/core/ledger_binding.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/privacy/ledger_file.h"

namespace vfsynth {
namespace {

constexpr char kMagic[] = "vfsynth-ledger-binding";
constexpr char kVersion[] = "2";

}  // namespace

absl::Status CheckLedgerBinding(const LedgerBinding& kept, const std::string& kept_where,
                                const LedgerBinding& ledger, const std::string& ledger_name,
                                const std::string& counted) {
  constexpr absl::string_view kUnderReport =
      "resuming on it would under-report what this party's releases spent. Resume with the run's "
      "own, latest ledger, or start a new run (another run_id) with a new ledger";
  if (kept.ledger_id != ledger.ledger_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        ledger_name, " (ledger id ", ledger.ledger_id, ") is not the ledger ", kept_where,
        " was charged to (ledger id ", kept.ledger_id, "): ", kUnderReport));
  }
  if (kept.secret_digest != ledger.secret_digest) {
    return absl::FailedPreconditionError(absl::StrCat(
        kept_where, " was kept with another party.secret than this party holds: the ",
        ledger_name, " knows this party's users by digests keyed with that secret, so under "
        "another one every user would look new and answer past their cap. Restore the run's "
        "party.secret"));
  }
  if (ledger.records < kept.records) {
    return absl::FailedPreconditionError(
        absl::StrCat(ledger_name, " holds ", ledger.records, " ", counted, " but ", kept_where,
                     " was committed after ", kept.records,
                     " of them: it is an older copy of the run's ledger, and ", kUnderReport));
  }
  return absl::OkStatus();
}

absl::Status KeepLedgerBinding(const std::string& path, const LedgerBinding& binding) {
  return WriteFileAtomically(
      path, privacy::FormatLedgerLine(kMagic, {{"version", kVersion},
                                               {"ledger_id", binding.ledger_id},
                                               {"records", absl::StrCat(binding.records)},
                                               {"secret", binding.secret_digest}}));
}

absl::StatusOr<LedgerBinding> ReadLedgerBinding(const std::string& path) {
  if (!std::filesystem::exists(path))
    return absl::NotFoundError(absl::StrCat("no ledger binding at ", path));
  ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  absl::string_view line = text;
  if (!absl::ConsumeSuffix(&line, "\n"))
    return absl::DataLossError(absl::StrCat("ledger binding ", path, " is cut short"));
  ASSIGN_OR_RETURN(const privacy::LedgerFields fields,
                   privacy::CheckHeaderLine(line, kMagic, kVersion, {}, "ledger binding", path));
  LedgerBinding binding;
  ASSIGN_OR_RETURN(binding.ledger_id, privacy::LedgerField(fields, "ledger_id", 1));
  ASSIGN_OR_RETURN(binding.records, privacy::LedgerIntField(fields, "records", 1));
  ASSIGN_OR_RETURN(binding.secret_digest, privacy::LedgerField(fields, "secret", 1));
  return binding;
}

}  // namespace vfsynth

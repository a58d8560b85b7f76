#include "server/core/curator_checkpoint.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/checkpoint_file.h"
#include "common/checkpoint/run_nonce.h"
#include "common/config/config.h"
#include "common/random/secure_random.h"

namespace vfsynth {

std::string CuratorCheckpointPath(const v1::CuratorConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "curator.ckpt").string();
}

std::string NoiseKeyPath(const v1::CuratorConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "noise.key").string();
}

absl::StatusOr<std::string> CheckCuratorCheckpointOnStartup(const v1::CuratorConfig& config,
                                                             bool resume) {
  const std::string path = CuratorCheckpointPath(config);
  const std::string nonce_path = RunNoncePath(config.checkpoint_dir());
  ASSIGN_OR_RETURN(const std::optional<std::string> kept, KeptRunNonce(nonce_path, config.run_id()));
  auto checkpoint = ReadCheckpoint(path);
  if (resume) {
    if (checkpoint.status().code() == absl::StatusCode::kNotFound) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--resume: there is no checkpoint at ", path,
          " (a run that never started training has nothing to resume: start it without --resume)"));
    }
    if (!checkpoint.ok()) return checkpoint.status();
    if (checkpoint->header.run_id() != config.run_id()) {
      return absl::FailedPreconditionError(absl::StrCat("checkpoint ", path, " belongs to run '",
                                                        checkpoint->header.run_id(), "', not '",
                                                        config.run_id(), "'"));
    }
    const std::string& nonce = checkpoint->header.run_nonce();
    if (kept.has_value() && *kept != nonce) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", path, " belongs to another start of run '", config.run_id(),
          "' than the one ", nonce_path, " names (nonce ", nonce.substr(0, 12), ", not ",
          kept->substr(0, 12), "): it was copied from another run's directory; resume from "
          "that directory, or start the run afresh"));
    }
    RETURN_IF_ERROR(CheckRunNonce(nonce));
    if (!kept.has_value()) RETURN_IF_ERROR(KeepRunNonce(nonce_path, config.run_id(), nonce));
    return nonce;
  }
  if (checkpoint.status().code() != absl::StatusCode::kNotFound) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a checkpoint already exists at ", path,
        checkpoint.ok() ? absl::StrCat(" (run '", checkpoint->header.run_id(), "', round ",
                                       checkpoint->header.round(), ")")
                        : "",
        ": pass --resume to continue that run, or remove it (or set checkpoint_dir) to start "
        "over"));
  }
  // A start that stopped before its first checkpoint keeps its nonce: parties that joined
  // it may already hold state.
  if (kept.has_value()) return *kept;
  ASSIGN_OR_RETURN(std::string nonce, NewHexSecret());
  RETURN_IF_ERROR(KeepRunNonce(nonce_path, config.run_id(), nonce));
  return nonce;
}

std::string CuratorDataDigest(int64_t records, const std::vector<v1::Schema>& schemas) {
  Sha256Builder digest;
  digest.Add(absl::StrCat(records));
  for (const v1::Schema& schema : schemas) digest.Add(schema.SerializeAsString());
  return digest.Hex();
}

v1::CheckpointHeader CuratorCheckpointHeader(const v1::CuratorConfig& config,
                                             const std::string& run_nonce,
                                             const std::string& data_digest, int64_t round) {
  Sha256Builder settings;
  settings.Add(SettingsDigest(config.model(), config.training(), config.privacy()));
  for (const std::string& party : config.parties()) settings.Add(party);
  v1::CheckpointHeader header;
  header.set_kind("curator");
  header.set_run_id(config.run_id());
  header.set_run_nonce(run_nonce);
  header.set_round(round);
  header.set_config_digest(settings.Hex());
  header.set_data_digest(data_digest);
  return header;
}

absl::Status CheckCuratorCheckpointHeader(const v1::CheckpointHeader& found,
                                          const v1::CuratorConfig& config,
                                          const std::string& run_nonce,
                                          const std::string& data_digest, const std::string& path) {
  const v1::CheckpointHeader expected = CuratorCheckpointHeader(config, run_nonce, data_digest, 0);
  return CheckCheckpointMatches(found, expected, path);
}

}  // namespace vfsynth

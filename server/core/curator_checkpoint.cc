#include "server/core/curator_checkpoint.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/checkpoint/checkpoint_file.h"
#include "common/config/config.h"

namespace vfsynth {

std::string CuratorCheckpointPath(const v1::CuratorConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "curator.ckpt").string();
}

std::string NoiseKeyPath(const v1::CuratorConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "noise.key").string();
}

absl::Status CheckCuratorCheckpointOnStartup(const v1::CuratorConfig& config, bool resume) {
  const std::string path = CuratorCheckpointPath(config);
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
    return absl::OkStatus();
  }
  if (checkpoint.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "a checkpoint already exists at ", path,
      checkpoint.ok() ? absl::StrCat(" (run '", checkpoint->header.run_id(), "', round ",
                                     checkpoint->header.round(), ")")
                      : "",
      ": pass --resume to continue that run, or remove it (or set checkpoint_dir) to start over"));
}

std::string CuratorDataDigest(int64_t records, const std::vector<v1::Schema>& schemas) {
  Sha256Builder digest;
  digest.Add(absl::StrCat(records));
  for (const v1::Schema& schema : schemas) digest.Add(schema.SerializeAsString());
  return digest.Hex();
}

v1::CheckpointHeader CuratorCheckpointHeader(const v1::CuratorConfig& config,
                                             const std::string& data_digest, int64_t round) {
  Sha256Builder settings;
  settings.Add(SettingsDigest(config.model(), config.training(), config.privacy()));
  for (const std::string& party : config.parties()) settings.Add(party);
  v1::CheckpointHeader header;
  header.set_kind("curator");
  header.set_run_id(config.run_id());
  header.set_round(round);
  header.set_config_digest(settings.Hex());
  header.set_data_digest(data_digest);
  return header;
}

absl::Status CheckCuratorCheckpointHeader(const v1::CheckpointHeader& found,
                                          const v1::CuratorConfig& config,
                                          const std::string& data_digest, const std::string& path) {
  const v1::CheckpointHeader expected = CuratorCheckpointHeader(config, data_digest, 0);
  return CheckCheckpointMatches(found, expected, path);
}

}  // namespace vfsynth

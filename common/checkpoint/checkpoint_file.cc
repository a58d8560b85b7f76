#include "common/checkpoint/checkpoint_file.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

constexpr absl::string_view kMagic("VFSYNTH-CHECKPOINT\n", 19);

void AppendU32(uint32_t value, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint32_t ReadU32(absl::string_view bytes) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return value;
}

}  // namespace

absl::Status WriteCheckpoint(const std::string& path, v1::CheckpointHeader header,
                             absl::string_view payload) {
  header.set_format_version(kCheckpointFormatVersion);
  header.set_payload_sha256(Sha256Hex(payload));
  const std::string header_bytes = header.SerializeAsString();
  std::string file(kMagic);
  AppendU32(static_cast<uint32_t>(header_bytes.size()), &file);
  file.append(header_bytes);
  file.append(payload.data(), payload.size());
  return WriteFileAtomically(path, file);
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string file, ReadFile(path));
  absl::string_view rest(file);
  if (!IsCheckpointFile(rest) || rest.size() < kMagic.size() + 4) {
    return absl::DataLossError(absl::StrCat(path, " is not a vfsynth checkpoint"));
  }
  rest.remove_prefix(kMagic.size());
  const uint32_t header_size = ReadU32(rest);
  rest.remove_prefix(4);
  Checkpoint checkpoint;
  if (header_size > rest.size() ||
      !checkpoint.header.ParseFromArray(rest.data(), static_cast<int>(header_size))) {
    return absl::DataLossError(absl::StrCat(path, ": damaged checkpoint header"));
  }
  rest.remove_prefix(header_size);
  if (checkpoint.header.format_version() != kCheckpointFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": checkpoint format version ", checkpoint.header.format_version(),
                     " (this build reads version ", kCheckpointFormatVersion, ")"));
  }
  if (Sha256Hex(rest) != checkpoint.header.payload_sha256()) {
    return absl::DataLossError(
        absl::StrCat(path, ": checkpoint payload is damaged (checksum mismatch)"));
  }
  checkpoint.payload = std::string(rest);
  return checkpoint;
}

bool IsCheckpointFile(absl::string_view contents) { return absl::StartsWith(contents, kMagic); }

absl::Status CheckCheckpointMatches(const v1::CheckpointHeader& found,
                                    const v1::CheckpointHeader& expected, const std::string& path) {
  auto refuse = [&path](absl::string_view what, absl::string_view has, absl::string_view wants) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", path, " belongs to another ", what, " (checkpoint: ", has,
                     ", this run: ", wants, "); refusing to resume from it"));
  };
  if (found.kind() != expected.kind()) return refuse("daemon", found.kind(), expected.kind());
  if (found.run_id() != expected.run_id()) return refuse("run", found.run_id(), expected.run_id());
  if (found.run_nonce() != expected.run_nonce()) {
    return refuse(
        "start of the run (the curator started it afresh, or resumed another start's checkpoint)",
        absl::StrCat("nonce ", found.run_nonce().substr(0, 12)),
        absl::StrCat("nonce ", expected.run_nonce().substr(0, 12)));
  }
  if (found.secrets_digest() != expected.secrets_digest()) {
    return refuse(
        "set of secrets (party.secret in the checkpoint directory, or the secrets file's "
        "sampling_secret, was replaced; restore the ones the run started with)",
        found.secrets_digest().substr(0, 12), expected.secrets_digest().substr(0, 12));
  }
  if (found.config_digest() != expected.config_digest()) {
    return refuse("configuration (model, training, privacy or roster settings differ)",
                  found.config_digest().substr(0, 12), expected.config_digest().substr(0, 12));
  }
  if (found.data_digest() != expected.data_digest()) {
    return refuse("set of aligned records", found.data_digest().substr(0, 12),
                  expected.data_digest().substr(0, 12));
  }
  return absl::OkStatus();
}

}  // namespace vfsynth

#ifndef VFSYNTH_SERVER_CORE_GENERATOR_ARTEFACT_H_
#define VFSYNTH_SERVER_CORE_GENERATOR_ARTEFACT_H_

// The publishable generator artefact, <checkpoint_dir>/generator.vfsg: the weights of
// the generator the curator publishes from and the public settings that draw a table
// from them (GeneratorHeader), nothing else. The private checkpoint beside it
// (curator.ckpt) holds D_s and the optimiser states, for --resume only.
//
// Layout: "VFSYNTH-GENERATOR\n"; the format version (u32, little-endian); the
// SHA-256 (64 hex characters) of the header and payload; the header's length (u32);
// the header; the payload (SavePublishedGenerator: a LibTorch archive of G alone).
// Written atomically (temp file, fsync, rename, directory fsync).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/generator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

inline constexpr uint32_t kGeneratorFormatVersion = 1;
inline constexpr char kGeneratorFileName[] = "generator.vfsg";

struct GeneratorArtefact {
  v1::GeneratorHeader header;
  std::string payload;
};

std::string GeneratorArtefactPath(const v1::CuratorConfig& config);

// The header of this run's artefact (round 0): `schemas` are the parties' registered
// schemas in roster order; `rows` the size of the table the curator publishes; `plan`
// the run's privacy plan.
v1::GeneratorHeader MakeGeneratorHeader(const v1::CuratorConfig& config,
                                        const std::vector<v1::Schema>& schemas, int64_t rows,
                                        const v1::PrivacyPlan& plan);

absl::Status WriteGeneratorArtefact(const std::string& path, const GeneratorArtefact& artefact);

// NOT_FOUND if there is no file; FAILED_PRECONDITION for another format version or
// a curator checkpoint (the error names the artefact beside it); DATA_LOSS for
// anything else that is not an intact artefact.
absl::StatusOr<GeneratorArtefact> ReadGeneratorArtefact(const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_GENERATOR_ARTEFACT_H_

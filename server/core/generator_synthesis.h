#ifndef VFSYNTH_SERVER_CORE_GENERATOR_SYNTHESIS_H_
#define VFSYNTH_SERVER_CORE_GENERATOR_SYNTHESIS_H_

// Drawing a table from the publishable generator artefact without a run
// (`vfsynth synthesize`).

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "server/core/generator_artefact.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// output.rows() rows from the artefact's G, output.label_column's category drawn at
// output.label_temperature (resolved: ResolveOutputConfig). With the artefact's own
// header.output() it is the table the curator published from that state. An artefact
// whose settings do not build its G is refused (INVALID_ARGUMENT).
absl::StatusOr<CsvTable> SynthesizeFromGenerator(const GeneratorArtefact& artefact,
                                                 const v1::OutputConfig& output);

// OK if one synthesis may draw `rows` rows (at least one, and not more than memory allows).
absl::Status CheckSynthesisRows(int64_t rows);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_GENERATOR_SYNTHESIS_H_

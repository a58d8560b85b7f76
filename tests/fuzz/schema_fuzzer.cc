// libFuzzer target: schema JSON loading (ParseSchema) and its numeric grids, then what a
// valid schema is used for: building the table encoder, decoding generator output into rows, and
// encoding those rows again. A schema that validates must never fail or crash later.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/data/encoder.h"
#include "common/data/numeric_grid.h"
#include "common/data/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  auto schema = vfsynth::ParseSchema(json, "fuzz");
  if (!schema.ok()) return 0;
  vfsynth::ResolveNumericGrids(size & 1 ? 100000 : 1000, &*schema);
  if (!vfsynth::ValidateSchema(*schema).ok()) std::abort();  // every grid is a valid set of bins
  for (const auto& column : schema->columns()) (void)vfsynth::MissingToken(*schema, column);
  auto encoder = vfsynth::TableEncoder::Create(*schema);
  if (!encoder.ok()) std::abort();             // validated schemas must be encodable
  if (encoder->width() > (1 << 16)) return 0;  // keep decode buffers small
  // Generator-like outputs: zeros, and a deterministic spread in [-1, 1].
  constexpr int64_t kRows = 3;
  std::vector<float> values(static_cast<size_t>(kRows * encoder->width()), 0.0f);
  for (size_t i = values.size() / 3; i < values.size(); ++i)
    values[i] = std::sin(static_cast<float>(i));
  const vfsynth::CsvTable decoded = encoder->Decode(values.data(), kRows);
  if (static_cast<int64_t>(decoded.rows.size()) != kRows) std::abort();
  auto encoded = encoder->Encode(decoded, "fuzz-decoded");
  if (!encoded.ok()) std::abort();  // decoded rows must satisfy their own schema
  return 0;
}

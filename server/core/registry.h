#ifndef VFSYNTH_SERVER_CORE_REGISTRY_H_
#define VFSYNTH_SERVER_CORE_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/data/encoder.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// Each roster party's first registration and the encoder of its schema, in roster order.
// A registration is never replaced, so what it says holds for the whole run. Thread-safe.
class Registry {
 public:
  explicit Registry(size_t parties);

  // Keeps `party`'s first registration; false (and nothing kept) if it had one.
  bool Add(int party, v1::RegisterRequest request, std::unique_ptr<TableEncoder> encoder);
  std::optional<v1::RegisterRequest> Get(int party) const;
  bool registered(int party) const;
  // The registrations so far (nullopt for a party that has not registered).
  std::vector<std::optional<v1::RegisterRequest>> All() const;
  // The encoders in roster order (nullptr where a party has not registered); they live
  // as long as the registry.
  std::vector<const TableEncoder*> Encoders() const;
  const TableEncoder* Encoder(int party) const;
  // Once every party registered: the schemas, and each party's rows and users.
  std::vector<v1::Schema> Schemas() const;
  std::vector<int64_t> Rows() const;
  std::vector<int64_t> Users() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<std::optional<v1::RegisterRequest>> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<TableEncoder>> encoders_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_REGISTRY_H_

#include "server/core/registry.h"

namespace vfsynth {

Registry::Registry(size_t parties) {
  requests_.resize(parties);
  encoders_.resize(parties);
}

bool Registry::Add(int party, v1::RegisterRequest request, std::unique_ptr<TableEncoder> encoder) {
  absl::MutexLock lock(&mu_);
  if (requests_[party].has_value()) return false;
  requests_[party] = std::move(request);
  encoders_[party] = std::move(encoder);
  return true;
}

std::optional<v1::RegisterRequest> Registry::Get(int party) const {
  absl::MutexLock lock(&mu_);
  return requests_[party];
}

bool Registry::registered(int party) const {
  absl::MutexLock lock(&mu_);
  return requests_[party].has_value();
}

std::vector<std::optional<v1::RegisterRequest>> Registry::All() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::vector<const TableEncoder*> Registry::Encoders() const {
  absl::MutexLock lock(&mu_);
  std::vector<const TableEncoder*> encoders;
  for (const auto& encoder : encoders_) encoders.push_back(encoder.get());
  return encoders;
}

const TableEncoder* Registry::Encoder(int party) const {
  absl::MutexLock lock(&mu_);
  return encoders_[party].get();
}

std::vector<v1::Schema> Registry::Schemas() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Schema> schemas;
  for (const auto& request : requests_) schemas.push_back(request->schema());
  return schemas;
}

std::vector<int64_t> Registry::Rows() const {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> rows;
  for (const auto& request : requests_) rows.push_back(request->rows());
  return rows;
}

std::vector<int64_t> Registry::Users() const {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> users;
  for (const auto& request : requests_) users.push_back(request->users());
  return users;
}

}  // namespace vfsynth

#include "common/data/psi.h"

#include <sodium.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/random/secure_random.h"

namespace vfsynth {
namespace {

constexpr char kDomain[] = "vfsynth-psi-v1";
// Streams of the party's per-run secret (distinct from its other purposes).
constexpr char kExponentPurpose[] = "psi-exponent";
constexpr char kShufflePurpose[] = "psi-shuffle";

// libsodium picks its implementations once; sodium_init is thread-safe and idempotent.
absl::Status InitSodium() {
  static const int initialised = sodium_init();
  if (initialised < 0) return absl::InternalError("libsodium failed to initialise");
  return absl::OkStatus();
}

using Point = std::array<unsigned char, crypto_core_ristretto255_BYTES>;

Point HashToGroup(absl::string_view id) {
  unsigned char digest[crypto_hash_sha512_BYTES];
  crypto_hash_sha512_state state;
  crypto_hash_sha512_init(&state);
  crypto_hash_sha512_update(&state, reinterpret_cast<const unsigned char*>(kDomain),
                            sizeof(kDomain) - 1);
  crypto_hash_sha512_update(&state, reinterpret_cast<const unsigned char*>(id.data()), id.size());
  crypto_hash_sha512_final(&state, digest);
  Point point;
  crypto_core_ristretto255_from_hash(point.data(), digest);
  return point;
}

std::string AsString(const unsigned char* bytes, size_t size) {
  return std::string(reinterpret_cast<const char*>(bytes), size);
}

const unsigned char* Bytes(const std::string& element) {
  return reinterpret_cast<const unsigned char*>(element.data());
}

// Runs work(begin, end) over [0, size) split across the cores: one hash to the group or
// scalar multiplication is tens of microseconds. Each call returns the first index it
// failed at, or -1; so does this (the smallest).
int64_t InParallel(size_t size, const std::function<int64_t(size_t, size_t)>& work) {
  constexpr size_t kElementsPerThread = 4096;
  const size_t threads = std::clamp<size_t>(size / kElementsPerThread, 1,
                                            std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int64_t> first_bad(threads, -1);
  std::vector<std::thread> workers;
  const size_t chunk = (size + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t) {
    workers.emplace_back(
        [&, t] { first_bad[t] = work(t * chunk, std::min(size, (t + 1) * chunk)); });
  }
  first_bad[0] = work(0, std::min(size, chunk));
  for (std::thread& worker : workers) worker.join();
  for (const int64_t bad : first_bad) {
    if (bad >= 0) return bad;
  }
  return -1;
}

absl::Status BadElement(size_t index, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("alignment element ", index, ": ", problem));
}

}  // namespace

static_assert(kPsiElementBytes == crypto_core_ristretto255_BYTES);

absl::StatusOr<PsiParty> PsiParty::Create(absl::string_view secret,
                                          const std::vector<std::string>& ids) {
  RETURN_IF_ERROR(InitSodium());
  if (ids.empty()) return absl::InvalidArgumentError("no records to align");
  absl::flat_hash_set<absl::string_view> seen;
  seen.reserve(ids.size());
  for (const std::string& id : ids) {
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("record id '", id, "' appears more than once"));
    }
  }
  unsigned char wide[crypto_core_ristretto255_NONREDUCEDSCALARBYTES];
  SecureRandom::Derived(secret, kExponentPurpose, 0).Fill(wide, sizeof(wide));
  Scalar exponent;
  crypto_core_ristretto255_scalar_reduce(exponent.data(), wide);
  sodium_memzero(wide, sizeof(wide));
  if (sodium_is_zero(exponent.data(), exponent.size())) {
    return absl::InternalError("the alignment exponent derived from the party secret is zero");
  }
  std::vector<int64_t> rows(ids.size());
  std::iota(rows.begin(), rows.end(), 0);
  SecureRandom shuffle = SecureRandom::Derived(secret, kShufflePurpose, 0);
  for (size_t i = rows.size() - 1; i > 0; --i)
    std::swap(rows[i], rows[shuffle.UniformBelow(i + 1)]);

  PsiParty party(exponent, std::move(rows));
  sodium_memzero(exponent.data(), exponent.size());
  std::vector<std::string> hashed(ids.size());
  InParallel(ids.size(), [&](size_t begin, size_t end) -> int64_t {
    for (size_t p = begin; p < end; ++p) {
      const Point point = HashToGroup(ids[static_cast<size_t>(party.rows_[p])]);
      hashed[p] = AsString(point.data(), point.size());
    }
    return -1;
  });
  ASSIGN_OR_RETURN(party.own_list_, party.Blind(hashed));
  return party;
}

PsiParty::PsiParty(const Scalar& exponent, std::vector<int64_t> rows)
    : exponent_(exponent), rows_(std::move(rows)) {}

PsiParty::PsiParty(PsiParty&& other) noexcept
    : exponent_(other.exponent_),
      rows_(std::move(other.rows_)),
      own_list_(std::move(other.own_list_)) {
  sodium_memzero(other.exponent_.data(), other.exponent_.size());
}

PsiParty& PsiParty::operator=(PsiParty&& other) noexcept {
  if (this != &other) {
    exponent_ = other.exponent_;
    sodium_memzero(other.exponent_.data(), other.exponent_.size());
    rows_ = std::move(other.rows_);
    own_list_ = std::move(other.own_list_);
  }
  return *this;
}

PsiParty::~PsiParty() { sodium_memzero(exponent_.data(), exponent_.size()); }

absl::StatusOr<std::vector<std::string>> PsiParty::Blind(
    const std::vector<std::string>& elements) const {
  std::vector<std::string> blinded(elements.size());
  const int64_t bad = InParallel(elements.size(), [&](size_t begin, size_t end) -> int64_t {
    Point point;
    for (size_t i = begin; i < end; ++i) {
      // Fails for a non-canonical encoding and for a result that is the identity.
      if (elements[i].size() != kPsiElementBytes ||
          crypto_scalarmult_ristretto255(point.data(), exponent_.data(), Bytes(elements[i])) != 0) {
        return static_cast<int64_t>(i);
      }
      blinded[i] = AsString(point.data(), point.size());
    }
    return -1;
  });
  if (bad >= 0) {
    const std::string& element = elements[static_cast<size_t>(bad)];
    return element.size() != kPsiElementBytes
               ? BadElement(static_cast<size_t>(bad),
                            absl::StrCat("has ", element.size(), " bytes, not ", kPsiElementBytes))
               : BadElement(static_cast<size_t>(bad), "is not a valid ristretto255 point");
  }
  return blinded;
}

absl::StatusOr<std::vector<int64_t>> PsiParty::Rows(const std::vector<int64_t>& positions) const {
  std::vector<int64_t> rows;
  rows.reserve(positions.size());
  for (size_t i = 0; i < positions.size(); ++i) {
    const int64_t p = positions[i];
    if (p < 0 || p >= static_cast<int64_t>(rows_.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "aligned position ", p, " is outside this party's ", rows_.size(), " records"));
    }
    if (i > 0 && p <= positions[i - 1]) {
      return absl::InvalidArgumentError("aligned positions are not ascending and unique");
    }
    rows.push_back(rows_[static_cast<size_t>(p)]);
  }
  return rows;
}

absl::Status CheckPsiList(const std::vector<std::string>& elements) {
  absl::flat_hash_set<absl::string_view> seen;
  seen.reserve(elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].size() != kPsiElementBytes) {
      return BadElement(i,
                        absl::StrCat("has ", elements[i].size(), " bytes, not ", kPsiElementBytes));
    }
    if (sodium_is_zero(Bytes(elements[i]), kPsiElementBytes))
      return BadElement(i, "is the identity");
    if (!seen.insert(elements[i]).second) return BadElement(i, "appears more than once");
  }
  return absl::OkStatus();
}

std::vector<std::vector<int64_t>> PsiIntersectionPositions(
    const std::vector<std::vector<std::string>>& lists) {
  absl::flat_hash_map<absl::string_view, size_t> holders;
  for (const std::vector<std::string>& list : lists) {
    for (const std::string& element : list) ++holders[element];
  }
  std::vector<std::vector<int64_t>> positions(lists.size());
  for (size_t k = 0; k < lists.size(); ++k) {
    for (size_t p = 0; p < lists[k].size(); ++p) {
      if (holders[lists[k][p]] == lists.size()) positions[k].push_back(static_cast<int64_t>(p));
    }
  }
  return positions;
}

}  // namespace vfsynth

#include "common/secure/cross_counts.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/secure/discrete_gaussian.h"

namespace vfsynth::secure {
namespace {

absl::Status CheckRecordCount(int64_t num_records) {
  if (num_records < 0 || num_records > kMaxRecords) {
    return absl::InvalidArgumentError(
        absl::StrCat(num_records, " records; at most ", kMaxRecords, " fit a slot"));
  }
  return absl::OkStatus();
}

absl::Status EncryptRange(const PaillierPrivateKey& key, const SlotLayout& layout,
                          const std::vector<std::vector<int32_t>>& columns, size_t begin,
                          size_t end, const std::atomic<bool>* stop,
                          std::vector<Ciphertext>& out) {
  BnCtxPtr ctx = NewBnCtx();
  if (ctx == nullptr) return absl::ResourceExhaustedError("no memory for a BN_CTX");
  std::vector<int32_t> values(columns.size());
  out.reserve((end - begin) * layout.num_ciphertexts());
  for (size_t i = begin; i < end; ++i) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      return absl::CancelledError("the records' encryption was stopped");
    }
    for (size_t c = 0; c < columns.size(); ++c) values[c] = columns[c][i];
    auto plaintexts = PackRecord(layout, values);
    if (!plaintexts.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("record ", i, ": ", plaintexts.status().message()));
    }
    for (const BnPtr& m : *plaintexts) {
      ASSIGN_OR_RETURN(Ciphertext c, key.EncryptCrt(m.get(), ctx.get()));
      out.push_back(std::move(c));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSlotSigmas(const SlotLayout& layout, absl::Span<const double> slot_sigmas) {
  if (static_cast<int>(slot_sigmas.size()) != layout.num_slots()) {
    return absl::InvalidArgumentError(
        absl::StrCat(slot_sigmas.size(), " slot sigmas for a layout of ", layout.num_slots()));
  }
  for (const double sigma : slot_sigmas) {
    if (sigma != kMaskedSlot && !(sigma >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat("slot sigma ", sigma, " is not >= 0"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Ciphertext>> EncryptRecords(
    const PaillierPrivateKey& key, const SlotLayout& layout,
    const std::vector<std::vector<int32_t>>& columns, int threads,
    const std::atomic<bool>* stop) {
  if (static_cast<int>(columns.size()) != layout.num_columns()) {
    return absl::InvalidArgumentError(
        absl::StrCat(columns.size(), " columns for a layout of ", layout.num_columns()));
  }
  if (threads < 1) return absl::InvalidArgumentError("at least one encryption thread required");
  const size_t num_records = columns[0].size();
  for (size_t c = 1; c < columns.size(); ++c) {
    if (columns[c].size() != num_records) {
      return absl::InvalidArgumentError(absl::StrCat("column ", c, " has ", columns[c].size(),
                                                     " records, column 0 has ", num_records));
    }
  }
  RETURN_IF_ERROR(CheckRecordCount(static_cast<int64_t>(num_records)));

  const size_t parts = std::max<size_t>(1, std::min<size_t>(threads, num_records));
  std::vector<std::vector<Ciphertext>> outputs(parts);
  std::vector<absl::Status> statuses(parts);
  std::vector<std::thread> workers;
  for (size_t t = 0; t < parts; ++t) {
    const size_t begin = num_records * t / parts;
    const size_t end = num_records * (t + 1) / parts;
    auto work = [&, t, begin, end] {
      statuses[t] = EncryptRange(key, layout, columns, begin, end, stop, outputs[t]);
    };
    if (t + 1 == parts) {
      work();  // the calling thread takes the last range
    } else {
      workers.emplace_back(work);
    }
  }
  for (std::thread& w : workers) w.join();
  for (const absl::Status& s : statuses) RETURN_IF_ERROR(s);
  std::vector<Ciphertext> all;
  all.reserve(num_records * layout.num_ciphertexts());
  for (auto& part : outputs) {
    for (Ciphertext& c : part) all.push_back(std::move(c));
  }
  return all;
}

absl::StatusOr<std::vector<Ciphertext>> SumByValue(
    const PaillierPublicKey& key, const SlotLayout& layout, const std::vector<Ciphertext>& records,
    absl::Span<const int32_t> b_values, int b_categories, double sigma_b, SecureRandom& rng) {
  const std::vector<double> sigmas(layout.num_slots(), sigma_b);
  return SumByValue(key, layout, records, b_values, b_categories, sigmas, rng);
}

absl::StatusOr<std::vector<Ciphertext>> SumByValue(
    const PaillierPublicKey& key, const SlotLayout& layout, const std::vector<Ciphertext>& records,
    absl::Span<const int32_t> b_values, int b_categories, absl::Span<const double> slot_sigmas,
    SecureRandom& rng) {
  if (b_categories < 1) return absl::InvalidArgumentError("B's column has no categories");
  RETURN_IF_ERROR(CheckSlotSigmas(layout, slot_sigmas));
  RETURN_IF_ERROR(CheckRecordCount(static_cast<int64_t>(b_values.size())));
  const size_t per_record = layout.num_ciphertexts();
  if (records.size() != b_values.size() * per_record) {
    return absl::InvalidArgumentError(absl::StrCat(records.size(),
                                                   " encrypted records' ciphertexts, expected ",
                                                   b_values.size(), " records of ", per_record));
  }
  std::vector<std::vector<CiphertextSum>> sums(b_categories);
  for (auto& per_value : sums) {
    for (size_t j = 0; j < per_record; ++j) per_value.emplace_back(key);
  }
  for (size_t i = 0; i < b_values.size(); ++i) {
    const int32_t y = b_values[i];
    if (y < 0 || y >= b_categories) {
      return absl::InvalidArgumentError(
          absl::StrCat("record ", i, ": B's value ", y, " outside [0, ", b_categories, ")"));
    }
    for (size_t j = 0; j < per_record; ++j) sums[y][j].Add(records[i * per_record + j]);
  }

  BnCtxPtr ctx = NewBnCtx();
  std::vector<Ciphertext> out;
  out.reserve(b_categories * per_record);
  std::vector<int64_t> slots(layout.num_slots());
  for (int y = 0; y < b_categories; ++y) {
    for (size_t s = 0; s < slots.size(); ++s) {
      int64_t& slot = slots[s];
      if (slot_sigmas[s] == kMaskedSlot) {
        slot = kSlotOffset - kNoiseBound + 1 +
               static_cast<int64_t>(rng.UniformBelow(2 * static_cast<uint64_t>(kNoiseBound) - 1));
        continue;
      }
      ASSIGN_OR_RETURN(const int64_t noise, SampleDiscreteGaussian(slot_sigmas[s], rng));
      if (noise <= -kNoiseBound || noise >= kNoiseBound) {
        // Beyond 64 sigma at the largest sigma: never in practice, and it would carry.
        return absl::InternalError("discrete Gaussian noise beyond the slot's bound");
      }
      slot = kSlotOffset + noise;
    }
    ASSIGN_OR_RETURN(std::vector<BnPtr> noise_plaintexts, PackSlots(layout, slots));
    for (size_t j = 0; j < per_record; ++j) {
      ASSIGN_OR_RETURN(Ciphertext noise, Encrypt(key, noise_plaintexts[j].get(), ctx.get()));
      out.push_back(sums[y][j].Finish(noise));
    }
  }
  return out;
}

absl::StatusOr<CrossCounts> DecryptCounts(const PaillierPrivateKey& key, const SlotLayout& layout,
                                          const std::vector<Ciphertext>& sums, int b_categories,
                                          int64_t num_records, double sigma_a, SecureRandom& rng) {
  const std::vector<double> sigmas(layout.num_slots(), sigma_a);
  return DecryptCounts(key, layout, sums, b_categories, num_records, sigmas, rng);
}

absl::StatusOr<CrossCounts> DecryptCounts(const PaillierPrivateKey& key, const SlotLayout& layout,
                                          const std::vector<Ciphertext>& sums, int b_categories,
                                          int64_t num_records, absl::Span<const double> slot_sigmas,
                                          SecureRandom& rng,
                                          absl::Span<const std::string> column_labels) {
  if (b_categories < 1) return absl::InvalidArgumentError("B's column has no categories");
  RETURN_IF_ERROR(CheckSlotSigmas(layout, slot_sigmas));
  RETURN_IF_ERROR(CheckRecordCount(num_records));
  if (!column_labels.empty() && static_cast<int>(column_labels.size()) != layout.num_columns()) {
    return absl::InvalidArgumentError(absl::StrCat(column_labels.size(), " column labels for a ",
                                                   "layout of ", layout.num_columns()));
  }
  const size_t per_value = layout.num_ciphertexts();
  if (sums.size() != static_cast<size_t>(b_categories) * per_value) {
    return absl::InvalidArgumentError(absl::StrCat(sums.size(), " sums, expected ", b_categories,
                                                   " values of ", per_value, " ciphertexts"));
  }
  BnCtxPtr ctx = NewBnCtx();
  const size_t num_slots = layout.num_slots();
  std::vector<int64_t> decrypted;  // y-major, like CrossCounts::counts
  decrypted.reserve(static_cast<size_t>(b_categories) * num_slots);
  for (int y = 0; y < b_categories; ++y) {
    std::vector<BnPtr> plaintexts;
    for (size_t j = 0; j < per_value; ++j) {
      ASSIGN_OR_RETURN(BnPtr m, key.Decrypt(sums[y * per_value + j], ctx.get()));
      plaintexts.push_back(std::move(m));
    }
    // Masked slots hold up to the mask's bound; released ones are checked below.
    auto values = UnpackSlots(layout, plaintexts, kSlotOffset, -kNoiseBound + 1,
                              num_records + kNoiseBound - 1);
    if (!values.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("sum for one of B's values: ",
                                                     values.status().message()));
    }
    decrypted.insert(decrypted.end(), values->begin(), values->end());
  }

  // A's noise first: every check below is then a function of what A would release, so a
  // refusal tells B (and the curator, which relays it) nothing the release would not.
  // A refusal carries no value for the same reason.
  std::vector<int64_t> noised(decrypted.size(), 0);
  for (size_t i = 0; i < decrypted.size(); ++i) {
    const size_t s = i % num_slots;
    if (slot_sigmas[s] == kMaskedSlot) continue;
    ASSIGN_OR_RETURN(const int64_t noise, SampleDiscreteGaussian(slot_sigmas[s], rng));
    noised[i] = decrypted[i] + noise;
  }
  // Every released count is a count of num_records plus both holders' noise (B's and A's,
  // of the slot's sigma each), and each column's counts sum to num_records plus theirs.
  for (int c = 0; c < layout.num_columns(); ++c) {
    const std::string label =
        column_labels.empty() ? absl::StrCat("A's column ", c) : column_labels[c];
    const std::string refusal = absl::StrCat(
        label, ": B's sums are beyond what ", num_records, " records and the noise can give (",
        kNoiseTailSigmas, " sigma): a forged or scaled sum, refused");
    int64_t total = 0;
    double variance = 0;
    bool released = false, masked = false;
    for (int y = 0; y < b_categories; ++y) {
      for (int v = 0; v < layout.categories(c); ++v) {
        const size_t s = static_cast<size_t>(layout.offset(c) + v);
        if (slot_sigmas[s] == kMaskedSlot) {
          masked = true;
          continue;
        }
        released = true;
        const int64_t value = noised[y * num_slots + s];
        const double slot_variance = 2 * slot_sigmas[s] * slot_sigmas[s];
        const int64_t slack =
            static_cast<int64_t>(std::ceil(kNoiseTailSigmas * std::sqrt(slot_variance)));
        if (value < -slack || value > num_records + slack) {
          return absl::InvalidArgumentError(refusal);
        }
        total += value;
        variance += slot_variance;
      }
    }
    // Only a whole column sums to num_records (the plan masks whole columns).
    if (!released || masked) continue;
    const int64_t slack = static_cast<int64_t>(std::ceil(kNoiseTailSigmas * std::sqrt(variance)));
    if (total < num_records - slack || total > num_records + slack) {
      return absl::InvalidArgumentError(refusal);
    }
  }

  CrossCounts result;
  result.b_categories = b_categories;
  result.num_slots = layout.num_slots();
  result.counts.reserve(decrypted.size());
  result.counts = std::move(noised);  // a masked slot's count is 0
  return result;
}

}  // namespace vfsynth::secure

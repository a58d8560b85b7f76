#include "common/secure/cross_counts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/random/secure_random.h"
#include "tests/unit/secure/test_keys.h"

namespace vfsynth::secure {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::OtherTestKey;
using testing::TestKey;

const SlotLayout& CrossCountsTestLayout() {
  static const SlotLayout* l = new SlotLayout(*SlotLayout::Create({2, 5, 70}, 2048));
  return *l;
}

SecureRandom Stream(unsigned char seed) {
  SecureRandom::Key key{};
  key[0] = seed;
  return SecureRandom::FromKey(key);
}

// A random aligned table: A's columns of 2, 5 and 70 categories (77 slots, so 2 ciphertexts
// per record), B's column of 4 values, and the exact contingency table.
struct Table {
  std::vector<int> a_categories = {2, 5, 70};
  std::vector<std::vector<int32_t>> a_columns;
  std::vector<int32_t> b_values;
  int b_categories = 4;
  std::vector<int64_t> exact;  // [y * 77 + slot]
};

Table RandomTable(int records, unsigned char seed) {
  Table t;
  SecureRandom rng = Stream(seed);
  t.a_columns.resize(3);
  for (int i = 0; i < records; ++i) {
    for (int c = 0; c < 3; ++c) {
      t.a_columns[c].push_back(static_cast<int32_t>(rng.UniformBelow(t.a_categories[c])));
    }
    t.b_values.push_back(static_cast<int32_t>(rng.UniformBelow(t.b_categories)));
  }
  t.exact.assign(t.b_categories * 77, 0);
  const int offsets[3] = {0, 2, 7};
  for (int i = 0; i < records; ++i) {
    for (int c = 0; c < 3; ++c) ++t.exact[t.b_values[i] * 77 + offsets[c] + t.a_columns[c][i]];
  }
  return t;
}

class CrossCountsTest : public ::testing::Test {
 protected:
  static const SlotLayout& layout() { return CrossCountsTestLayout(); }
  // B's sums as they travel: serialised, then validated on A's side.
  static absl::StatusOr<std::vector<Ciphertext>> Relay(const std::vector<Ciphertext>& sums) {
    const PaillierPublicKey& pk = TestKey().public_key();
    return DeserializeCiphertexts(pk, SerializeCiphertexts(pk, sums), sums.size());
  }
};

TEST_F(CrossCountsTest, NoiselessCountsEqualThePlaintextContingencyTable) {
  const Table table = RandomTable(2000, 1);
  auto records = EncryptRecords(TestKey(), layout(), table.a_columns, 2);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2000u * 2);
  SecureRandom rng_b = Stream(2), rng_a = Stream(3);
  auto sums = SumByValue(TestKey().public_key(), layout(), *records, table.b_values, 4, 0.0, rng_b);
  ASSERT_TRUE(sums.ok()) << sums.status();
  auto relayed = Relay(*sums);
  ASSERT_TRUE(relayed.ok()) << relayed.status();
  auto counts = DecryptCounts(TestKey(), layout(), *relayed, 4, 2000, 0.0, rng_a);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->counts, table.exact);
  EXPECT_EQ(counts->at(3, 76), table.exact[3 * 77 + 76]);
}

TEST_F(CrossCountsTest, PerSlotNoiseLeavesNoiselessSlotsExactAndMaskedSlotsZero) {
  // Column 0 (slots 0-1) released without noise, column 1 (slots 2-6) masked by B, column 2
  // (slots 7-76) noised by both: only the noised slots move, and the masked ones are dropped.
  const Table table = RandomTable(200, 7);
  auto records = EncryptRecords(TestKey(), layout(), table.a_columns, 2);
  ASSERT_TRUE(records.ok()) << records.status();
  std::vector<double> b_sigmas(77, 5.0), a_sigmas(77, 5.0);
  for (int s = 0; s < 2; ++s) b_sigmas[s] = a_sigmas[s] = 0.0;
  for (int s = 2; s < 7; ++s) b_sigmas[s] = a_sigmas[s] = kMaskedSlot;
  SecureRandom rng_b = Stream(8), rng_a = Stream(9);
  auto sums =
      SumByValue(TestKey().public_key(), layout(), *records, table.b_values, 4, b_sigmas, rng_b);
  ASSERT_TRUE(sums.ok()) << sums.status();
  auto counts = DecryptCounts(TestKey(), layout(), *sums, 4, 200, a_sigmas, rng_a);
  ASSERT_TRUE(counts.ok()) << counts.status();
  int noised_differ = 0;
  for (int y = 0; y < 4; ++y) {
    for (int s = 0; s < 2; ++s) EXPECT_EQ(counts->at(y, s), table.exact[y * 77 + s]);
    for (int s = 2; s < 7; ++s) EXPECT_EQ(counts->at(y, s), 0);
    for (int s = 7; s < 77; ++s) noised_differ += counts->at(y, s) != table.exact[y * 77 + s];
  }
  EXPECT_GT(noised_differ, 200);  // of 280 cells at sigma 5 + 5
}

TEST_F(CrossCountsTest, RefusesSlotSigmasOfAnotherLayoutOrNegative) {
  const Table small = RandomTable(10, 11);
  auto records = EncryptRecords(TestKey(), layout(), small.a_columns, 1);
  ASSERT_TRUE(records.ok()) << records.status();
  SecureRandom rng = Stream(12);
  const std::vector<double> short_sigmas(76, 1.0);
  EXPECT_THAT(
      SumByValue(TestKey().public_key(), layout(), *records, small.b_values, 4, short_sigmas, rng)
          .status()
          .message(),
      HasSubstr("76 slot sigmas for a layout of 77"));
  std::vector<double> negative(77, 1.0);
  negative[5] = -2;
  EXPECT_THAT(
      SumByValue(TestKey().public_key(), layout(), *records, small.b_values, 4, negative, rng)
          .status()
          .message(),
      HasSubstr("slot sigma -2"));
}

TEST_F(CrossCountsTest, OneAndTwoThreadsGiveTheSameCounts) {
  const Table small = RandomTable(100, 4);
  std::vector<int64_t> results[2];
  for (int threads : {1, 2}) {
    auto records = EncryptRecords(TestKey(), layout(), small.a_columns, threads);
    ASSERT_TRUE(records.ok()) << records.status();
    SecureRandom rng_b = Stream(5), rng_a = Stream(6);
    auto sums =
        SumByValue(TestKey().public_key(), layout(), *records, small.b_values, 4, 0.0, rng_b);
    ASSERT_TRUE(sums.ok()) << sums.status();
    auto counts = DecryptCounts(TestKey(), layout(), *sums, 4, 100, 0.0, rng_a);
    ASSERT_TRUE(counts.ok()) << counts.status();
    results[threads - 1] = counts->counts;
  }
  EXPECT_EQ(results[0], small.exact);
  EXPECT_EQ(results[1], small.exact);
}

TEST_F(CrossCountsTest, AStoppedEncryptionEndsCancelledOnEveryThread) {
  const Table large = RandomTable(5000, 4);
  std::atomic<bool> stop{true};
  for (int threads : {1, 2}) {
    const auto start = std::chrono::steady_clock::now();
    auto records = EncryptRecords(TestKey(), layout(), large.a_columns, threads, &stop);
    EXPECT_EQ(records.status().code(), absl::StatusCode::kCancelled) << records.status();
    // 5,000 records take seconds; a stopped call returns before its first record.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  }
  stop = false;
  const Table small = RandomTable(20, 4);
  EXPECT_TRUE(EncryptRecords(TestKey(), layout(), small.a_columns, 2, &stop).ok());
}

TEST_F(CrossCountsTest, NoisyCountsAreUnbiasedWithBothPartiesVariances) {
  // sigma_A = 3, sigma_B = 4: the differences have variance 25 (discrete Gaussians of these
  // sigmas have variance sigma^2 to within 1e-6). The noise is per cell, not per record, so a
  // small table serves: 4 runs x 308 cells give the sample variance a standard error of about
  // 25 sqrt(2/1232) = 1.0, so [20, 30] fails a missing or doubled party's noise (16, 9, 34,
  // 41) and holds for a correct one.
  const Table table = RandomTable(60, 13);
  auto records = EncryptRecords(TestKey(), layout(), table.a_columns, 2);
  ASSERT_TRUE(records.ok()) << records.status();
  std::vector<double> diffs;
  for (unsigned char run = 0; run < 4; ++run) {
    SecureRandom rng_b = Stream(10 + run), rng_a = Stream(20 + run);
    auto sums =
        SumByValue(TestKey().public_key(), layout(), *records, table.b_values, 4, 4.0, rng_b);
    ASSERT_TRUE(sums.ok()) << sums.status();
    auto counts = DecryptCounts(TestKey(), layout(), *sums, 4, 60, 3.0, rng_a);
    ASSERT_TRUE(counts.ok()) << counts.status();
    for (size_t i = 0; i < counts->counts.size(); ++i) {
      diffs.push_back(static_cast<double>(counts->counts[i] - table.exact[i]));
    }
  }
  double mean = 0;
  for (double d : diffs) mean += d;
  mean /= diffs.size();
  double variance = 0;
  for (double d : diffs) variance += (d - mean) * (d - mean);
  variance /= diffs.size() - 1;
  EXPECT_LT(std::abs(mean), 0.7);  // standard error 0.14
  EXPECT_GT(variance, 20.0);
  EXPECT_LT(variance, 30.0);
}

TEST_F(CrossCountsTest, WrongLengthsAndValuesAreRefused) {
  const Table small = RandomTable(3, 7);
  auto records = EncryptRecords(TestKey(), layout(), small.a_columns, 1);
  ASSERT_TRUE(records.ok());
  SecureRandom rng = Stream(8);
  const PaillierPublicKey& pk = TestKey().public_key();
  std::vector<Ciphertext> short_list(records->begin(), records->end() - 1);
  EXPECT_THAT(SumByValue(pk, layout(), short_list, small.b_values, 4, 0, rng).status().message(),
              HasSubstr("expected 3 records of 2"));
  std::vector<int32_t> bad_b = small.b_values;
  bad_b[1] = 4;
  EXPECT_THAT(SumByValue(pk, layout(), *records, bad_b, 4, 0, rng).status().message(),
              HasSubstr("record 1: B's value 4 outside [0, 4)"));
  auto sums = SumByValue(pk, layout(), *records, small.b_values, 4, 0, rng);
  ASSERT_TRUE(sums.ok());
  EXPECT_FALSE(DecryptCounts(TestKey(), layout(), *sums, 3, 3, 0, rng).ok());
  auto columns = small.a_columns;
  columns[2][0] = 70;
  EXPECT_THAT(EncryptRecords(TestKey(), layout(), columns, 1).status().message(),
              HasSubstr("record 0: column 2 value 70"));
}

TEST_F(CrossCountsTest, SumsDecryptedWithAnotherKeyAreRefusedNotMiscounted) {
  const Table small = RandomTable(3, 9);
  auto records = EncryptRecords(TestKey(), layout(), small.a_columns, 1);
  ASSERT_TRUE(records.ok());
  SecureRandom rng = Stream(10);
  auto sums = SumByValue(TestKey().public_key(), layout(), *records, small.b_values, 4, 0, rng);
  ASSERT_TRUE(sums.ok());
  auto counts = DecryptCounts(OtherTestKey(), layout(), *sums, 4, 3, 0, rng);
  EXPECT_EQ(counts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(counts.status().message(), HasSubstr("another key"));
}

TEST_F(CrossCountsTest, AForgedSumWithASlotOutOfRangeIsRefused) {
  // A validly encrypted sum whose slot 5 holds more than records plus B's noise bound can.
  std::vector<int64_t> slots(77, kSlotOffset);
  slots[5] = (int64_t{1} << kSlotBits) - 1;
  auto plaintexts = PackSlots(layout(), slots);
  ASSERT_TRUE(plaintexts.ok());
  BnCtxPtr ctx = NewBnCtx();
  std::vector<Ciphertext> forged;
  for (const BnPtr& m : *plaintexts) {
    auto c = Encrypt(TestKey().public_key(), m.get(), ctx.get());
    ASSERT_TRUE(c.ok());
    forged.push_back(*std::move(c));
  }
  SecureRandom rng = Stream(12);
  auto counts = DecryptCounts(TestKey(), layout(), forged, 1, 2000, 0, rng);
  EXPECT_THAT(counts.status().message(), HasSubstr("outside the possible"));
  // The value itself stays out of the refusal: it is a count before A's noise.
  EXPECT_THAT(counts.status().message(),
              Not(HasSubstr(std::to_string((int64_t{1} << kSlotBits) - 1 - kSlotOffset))));
}

// B's sums with every record counted `factor` times: each record's ciphertexts added to
// themselves before the honest SumByValue (its noise as usual, sigma `sigma`).
absl::StatusOr<std::vector<Ciphertext>> ScaledSums(const Table& table,
                                                   const std::vector<Ciphertext>& records,
                                                   int factor, double sigma, SecureRandom& rng) {
  const PaillierPublicKey& pk = TestKey().public_key();
  BnCtxPtr ctx = NewBnCtx();
  std::vector<Ciphertext> scaled;
  for (const Ciphertext& c : records) {
    Ciphertext sum = c;
    for (int k = 1; k < factor; ++k) sum = Add(pk, sum, c, ctx.get());
    scaled.push_back(std::move(sum));
  }
  return SumByValue(pk, CrossCountsTestLayout(), scaled, table.b_values, table.b_categories, sigma,
                   rng);
}

TEST_F(CrossCountsTest, ScaledSumsAreRefusedNamingTheHistogram) {
  // B counts every record twice: each count at most doubles, so no slot need leave
  // [0, records + B's noise], but the column's counts sum to twice the records.
  const Table table = RandomTable(400, 31);
  auto records = EncryptRecords(TestKey(), layout(), table.a_columns, 2);
  ASSERT_TRUE(records.ok()) << records.status();
  SecureRandom rng_b = Stream(32), rng_a = Stream(33);
  auto honest = SumByValue(TestKey().public_key(), layout(), *records, table.b_values, 4, 3.0,
                           rng_b);
  ASSERT_TRUE(honest.ok());
  const std::vector<std::string> labels = {"histogram 4 (sex x income)", "histogram 5",
                                           "histogram 6"};
  auto counts = DecryptCounts(TestKey(), layout(), *honest, 4, 400,
                              std::vector<double>(77, 3.0), rng_a, labels);
  ASSERT_TRUE(counts.ok()) << counts.status();

  auto doubled = ScaledSums(table, *records, 2, 3.0, rng_b);
  ASSERT_TRUE(doubled.ok()) << doubled.status();
  counts = DecryptCounts(TestKey(), layout(), *doubled, 4, 400, std::vector<double>(77, 3.0),
                         rng_a, labels);
  EXPECT_EQ(counts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(counts.status().message(), HasSubstr("histogram 4 (sex x income)"));
  EXPECT_THAT(counts.status().message(), HasSubstr("forged or scaled"));
  // Noiseless, the sums must be exact.
  auto doubled_exact = ScaledSums(table, *records, 2, 0.0, rng_b);
  ASSERT_TRUE(doubled_exact.ok());
  EXPECT_THAT(DecryptCounts(TestKey(), layout(), *doubled_exact, 4, 400, 0.0, rng_a)
                  .status()
                  .message(),
              AllOf(HasSubstr("forged or scaled"), Not(HasSubstr("800"))));
}

TEST_F(CrossCountsTest, ASlotBeyondRecordsPlusEightSigmaIsRefusedEvenIfTheSumHolds) {
  // One record's weight moved: slot 2 of B's value 0 holds records + 30 and slot 3 of B's
  // value 1 holds -30 (so the column still sums to the records), at sigma 1 per holder:
  // beyond 8 sigma of both holders' noise (8 sqrt 2 < 12).
  std::vector<std::vector<int64_t>> slots(2, std::vector<int64_t>(77, kSlotOffset));
  for (int c = 0; c < 3; ++c) slots[0][layout().offset(c)] += 100;  // every record: y 0, value 0
  slots[0][2] += 30;
  slots[1][3] -= 30;
  BnCtxPtr ctx = NewBnCtx();
  std::vector<Ciphertext> forged;
  for (const auto& values : slots) {
    auto plaintexts = PackSlots(layout(), values);
    ASSERT_TRUE(plaintexts.ok());
    for (const BnPtr& m : *plaintexts) {
      auto c = Encrypt(TestKey().public_key(), m.get(), ctx.get());
      ASSERT_TRUE(c.ok());
      forged.push_back(*std::move(c));
    }
  }
  SecureRandom rng = Stream(34);
  const std::vector<std::string> labels = {"h0", "histogram 9 (age x income)", "h2"};
  auto counts = DecryptCounts(TestKey(), layout(), forged, 2, 100, std::vector<double>(77, 1.0),
                              rng, labels);
  EXPECT_THAT(counts.status().message(), HasSubstr("histogram 9 (age x income)"));
  EXPECT_THAT(counts.status().message(), HasSubstr("forged or scaled"));
  EXPECT_THAT(counts.status().message(), Not(HasSubstr("130")));
  // Well within the tail the same forgery passes: the check is the noise's tail, no tighter.
  slots[0][2] -= 26;
  slots[1][3] += 26;
  forged.clear();
  for (const auto& values : slots) {
    auto plaintexts = PackSlots(layout(), values);
    ASSERT_TRUE(plaintexts.ok());
    for (const BnPtr& m : *plaintexts) forged.push_back(*Encrypt(TestKey().public_key(), m.get(), ctx.get()));
  }
  EXPECT_TRUE(DecryptCounts(TestKey(), layout(), forged, 2, 100, std::vector<double>(77, 1.0), rng,
                            labels)
                  .ok());
}

}  // namespace
}  // namespace vfsynth::secure

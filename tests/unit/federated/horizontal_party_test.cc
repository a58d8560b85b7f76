// A horizontal round: the users asked of each party, a party's answer under the users'
// caps, and the in-process reference, reproducible from its streams and learning at a
// large ε.
#include "common/federated/horizontal_party.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

namespace fs = std::filesystem;

constexpr WaeOptions kArchitecture{/*input_dim=*/8, /*hidden=*/16, /*latent=*/3};

// Users of 2 rows each whose second one-hot block copies the first.
std::vector<torch::Tensor> Users(int count, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> users;
  for (int u = 0; u < count; ++u) {
    const torch::Tensor block = torch::one_hot(torch::randint(4, {2}), 4).to(torch::kFloat32);
    users.push_back(torch::cat({block, block}, 1));
  }
  return users;
}

std::vector<std::string> Keys(const std::string& party, int count) {
  std::vector<std::string> keys;
  for (int u = 0; u < count; ++u) keys.push_back(absl::StrCat(party, "-", u));
  return keys;
}

class HorizontalPartyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("vfsynth_horizontal_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<privacy::ParticipationLedger> Ledger(const std::string& name, int64_t cap) {
    auto ledger = privacy::ParticipationLedger::Open((dir_ / (name + ".ledger")).string(),
                                                     {"run-h", cap, options_.epsilon_per_round});
    EXPECT_TRUE(ledger.ok()) << ledger.status();
    return ledger.ok() ? *std::move(ledger) : nullptr;
  }
  static std::string Secret(int seed) { return absl::StrCat("party-secret-", seed); }

  // The reference over two parties of 150 users each, at ε_r = epsilon.
  torch::Tensor Reference(double epsilon, unsigned char seed, int rounds) {
    options_.epsilon_per_round = epsilon;
    // Fresh ledgers for every run: a ledger remembers the users a run took.
    const int run = runs_++;
    auto hospital_ledger = Ledger(absl::StrCat("hospital", run), 1);
    auto clinic_ledger = Ledger(absl::StrCat("clinic", run), 1);
    HorizontalParty hospital(Users(150, 1), Keys("h", 150), hospital_ledger.get(), Secret(seed));
    HorizontalParty clinic(Users(150, 2), Keys("c", 150), clinic_ledger.get(), Secret(seed + 1));
    auto flat = TrainHorizontalReference(options_, rounds, /*users_per_round=*/10, /*gamma=*/1.0,
                                         /*seed=*/9, {&hospital, &clinic});
    EXPECT_TRUE(flat.ok()) << flat.status();
    return flat.ok() ? *flat : torch::Tensor();
  }

  fs::path dir_;
  int runs_ = 0;
  HorizontalRoundOptions options_{kArchitecture, LocalUpdateOptions{/*epochs=*/10, 1e-2, 2}, 0.05,
                                  8.0};
};

TEST(UsersAskedOfTest, SplitsEachRoundInProportionToThePopulations) {
  // Equal populations: 10 users as 3, 3 and 4, the extra one going round the parties.
  const std::vector<int64_t> equal = {100, 100, 100};
  for (int64_t round = 0; round < 6; ++round) {
    int64_t total = 0;
    for (size_t party = 0; party < 3; ++party) {
      const int64_t asked = UsersAskedOf(10, equal, party, round);
      EXPECT_TRUE(asked == 3 || asked == 4) << asked;
      total += asked;
    }
    EXPECT_EQ(total, 10);
  }
  // Unequal populations: every round asks for exactly n, and over the rounds that cycle
  // the offset once each party is asked for n * population / U users a round.
  const std::vector<int64_t> populations = {700, 200, 100};
  const int64_t users = 1000, n = 10, rounds = users / n;
  std::vector<int64_t> asked(populations.size(), 0);
  for (int64_t round = 0; round < rounds; ++round) {
    int64_t total = 0;
    for (size_t party = 0; party < populations.size(); ++party) {
      const int64_t share = UsersAskedOf(n, populations, party, round);
      asked[party] += share;
      total += share;
    }
    ASSERT_EQ(total, n) << "round " << round;
  }
  for (size_t party = 0; party < populations.size(); ++party)
    EXPECT_EQ(asked[party], populations[party]) << party;
  // A party of a few users is asked for one now and then, never more than it holds on average.
  int64_t small = 0;
  for (int64_t round = 0; round < 997; ++round) small += UsersAskedOf(10, {990, 7}, 1, round);
  EXPECT_EQ(small, 70);
  EXPECT_EQ(UsersAskedOf(10, {}, 0, 0), 0);
}

TEST_F(HorizontalPartyTest, APartyAnswersOnlyWithUsersUnderTheirCap) {
  auto ledger = Ledger("hospital", /*cap=*/1);
  HorizontalParty party(Users(5, 3), Keys("h", 5), ledger.get(), Secret(1));
  const torch::Tensor global = FlatParameters(*Wae(kArchitecture));
  for (auto [round, asked, answered] :
       {std::tuple<int64_t, int64_t, size_t>{0, 3, 3}, {1, 3, 2}, {2, 3, 0}}) {
    auto reports = party.Answer(round, global, asked, options_);
    ASSERT_TRUE(reports.ok()) << reports.status();
    EXPECT_EQ(reports->size(), answered) << "round " << round;
    for (const SignDsReport& report : *reports) {
      EXPECT_GE(report.index, 0);
      EXPECT_LT(report.index, global.numel());
    }
  }
  EXPECT_EQ(ledger->users(), 5);
  EXPECT_DOUBLE_EQ(ledger->max_epsilon_spent(), options_.epsilon_per_round);
  EXPECT_EQ(party.Answer(3, global, -1, options_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(HorizontalPartyTest, ARoundAskedAgainGetsTheSameAnswerAndChargesNothingMore) {
  auto ledger = Ledger("hospital", /*cap=*/1);
  HorizontalParty party(Users(6, 3), Keys("h", 6), ledger.get(), Secret(1));
  const torch::Tensor global = FlatParameters(*Wae(kArchitecture));
  auto first = party.Answer(0, global, 3, options_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(ledger->users(), 3);
  // A restarted party (a new object over the same ledger and secret) asked round 0 again.
  HorizontalParty restarted(Users(6, 3), Keys("h", 6), ledger.get(), Secret(1));
  auto again = restarted.Answer(0, global, 3, options_);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->size(), first->size());
  for (size_t i = 0; i < first->size(); ++i) {
    EXPECT_EQ((*again)[i].index, (*first)[i].index);
    EXPECT_EQ((*again)[i].positive, (*first)[i].positive);
  }
  EXPECT_EQ(ledger->users(), 3);
  // The next round draws among the other three only.
  auto next = restarted.Answer(1, global, 5, options_);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->size(), 3u);
  EXPECT_EQ(ledger->users(), 6);
}

TEST_F(HorizontalPartyTest, ARoundAskedAgainForAnotherModelOrCountIsRefusedBeforeAnyUserIsDrawn) {
  auto ledger = Ledger("hospital", /*cap=*/2);
  HorizontalParty party(Users(6, 3), Keys("h", 6), ledger.get(), Secret(1));
  const torch::Tensor global = FlatParameters(*Wae(kArchitecture));
  ASSERT_TRUE(party.Answer(0, global, 3, options_).ok());
  const int64_t records = ledger->records();
  // The round's coins are fixed: the same users answering a chosen second model with
  // them would give their values away.
  const torch::Tensor chosen = global + 0.5;
  for (const auto& [model, count] :
       {std::pair{chosen, int64_t{3}}, std::pair{global, int64_t{4}}}) {
    const auto refused = party.Answer(0, model, count, options_);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("round 0"));
    // The refusal names no user.
    EXPECT_THAT(std::string(refused.status().message()),
                ::testing::Not(::testing::HasSubstr("h-")));
  }
  EXPECT_EQ(ledger->records(), records);
  EXPECT_EQ(ledger->users(), 3);
  // A restarted party over the same ledger refuses it too, and answers the question itself.
  ledger.reset();
  auto reopened = privacy::ParticipationLedger::OpenExisting(
      (dir_ / "hospital.ledger").string(), {"run-h", 2, options_.epsilon_per_round});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  HorizontalParty restarted(Users(6, 3), Keys("h", 6), reopened->get(), Secret(1));
  EXPECT_EQ(restarted.Answer(0, chosen, 3, options_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(restarted.Answer(0, global, 3, options_).ok());
  EXPECT_TRUE(restarted.Answer(1, chosen, 3, options_).ok());
}

TEST_F(HorizontalPartyTest, AUsersAnswerToARoundDoesNotDependOnWhoElseIsDrawn) {
  const torch::Tensor global = FlatParameters(*Wae(kArchitecture));
  auto all_ledger = Ledger("all", /*cap=*/1);
  HorizontalParty all(Users(6, 3), Keys("h", 6), all_ledger.get(), Secret(1));
  auto everyone = all.Answer(0, global, 6, options_);
  ASSERT_TRUE(everyone.ok()) << everyone.status();
  // The same round answered after user 3 answered a later one (a curator back at its
  // checkpoint): five users, each with the answer it gave among six.
  auto later_ledger = Ledger("later", /*cap=*/1);
  ASSERT_TRUE(later_ledger->Take(1, "h-3").ok());
  HorizontalParty later(Users(6, 3), Keys("h", 6), later_ledger.get(), Secret(1));
  auto five = later.Answer(0, global, 6, options_);
  ASSERT_TRUE(five.ok()) << five.status();
  ASSERT_EQ(five->size(), 5u);
  std::multiset<std::pair<int64_t, bool>> first;
  for (const SignDsReport& report : *everyone) first.emplace(report.index, report.positive);
  for (const SignDsReport& report : *five) {
    auto it = first.find({report.index, report.positive});
    ASSERT_NE(it, first.end()) << "a report of round 0 that the first answer did not hold";
    first.erase(it);
  }
}

TEST_F(HorizontalPartyTest, TheReferenceIsAFunctionOfItsStreamsAndLearnsAtALargeEpsilon) {
  const torch::Tensor short_run = Reference(8.0, 1, 5);
  EXPECT_TRUE(torch::equal(short_run, Reference(8.0, 1, 5)));
  EXPECT_FALSE(torch::equal(short_run, Reference(8.0, 3, 5)));

  // Pooled loss of the users' rows: lower after training at ε_r = 8 than at the start,
  // and lower than after as many steps at ε_r = 0.01 (nearly uniform coordinates).
  const torch::Tensor rows = torch::cat({torch::cat(Users(150, 1)), torch::cat(Users(150, 2))});
  auto loss = [&](const torch::Tensor& flat) {
    Wae model(kArchitecture);
    EXPECT_TRUE(AssignFlatParameters(*model, flat).ok());
    torch::manual_seed(11);
    return WaeLoss(model, rows, torch::randn({rows.size(0), 3})).item<double>();
  };
  torch::manual_seed(9);
  const double start = loss(FlatParameters(*Wae(kArchitecture)));
  const double trained = loss(Reference(8.0, 1, 30));
  const double uniform = loss(Reference(0.01, 1, 30));
  EXPECT_LT(trained, start);
  EXPECT_LT(trained, uniform);
}

TEST_F(HorizontalPartyTest, DpFedAvgDrawsEachUserAtTheSampleRateFromTheSecret) {
  HorizontalParty party(Users(400, 3), Keys("h", 400), /*ledger=*/nullptr, Secret(1));
  int64_t drawn = 0;
  for (int64_t round = 0; round < 10; ++round)
    drawn += static_cast<int64_t>(party.DrawnUsers(round, 0.25).size());
  // 4000 coins at 1/4: mean 1000, standard deviation 27.4; five of them either side.
  EXPECT_NEAR(drawn, 1000, 137);
  EXPECT_EQ(party.DrawnUsers(3, 0.25), party.DrawnUsers(3, 0.25));
  EXPECT_NE(party.DrawnUsers(3, 0.25), party.DrawnUsers(4, 0.25));
  HorizontalParty other(Users(400, 3), Keys("h", 400), nullptr, Secret(2));
  EXPECT_NE(party.DrawnUsers(3, 0.25), other.DrawnUsers(3, 0.25));
  EXPECT_EQ(party.DrawnUsers(0, 1.0).size(), 400u);
}

TEST_F(HorizontalPartyTest, ADpFedAvgSumAskedAgainIsTheSameAndCarriesItsNoise) {
  HorizontalRoundOptions options = options_;
  options.dp_fedavg =
      DpFedAvgOptions{/*sample_rate=*/0.5, /*clip_norm=*/0.5, /*noise_multiplier=*/0};
  const torch::Tensor global = FlatParameters(*Wae(kArchitecture));
  HorizontalParty party(Users(20, 3), Keys("h", 20), nullptr, Secret(1));
  auto clean = party.AnswerSum(0, global, options);
  ASSERT_TRUE(clean.ok()) << clean.status();
  // A restarted party asked round 0 again answers the same sum.
  HorizontalParty restarted(Users(20, 3), Keys("h", 20), nullptr, Secret(1));
  auto again = restarted.AnswerSum(0, global, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(torch::equal(*clean, *again));
  // Each drawn update is clipped to C: the sum's norm is at most drawn · C.
  const double drawn = static_cast<double>(party.DrawnUsers(0, 0.5).size());
  EXPECT_LE(clean->norm().item<double>(), drawn * 0.5 + 1e-4);
  EXPECT_GT(clean->norm().item<double>(), 0.0);
  // With noise at z = 2 the release moves by N(0, (z 2C)^2) per coordinate.
  options.dp_fedavg->noise_multiplier = 2;
  auto noised = party.AnswerSum(0, global, options);
  ASSERT_TRUE(noised.ok()) << noised.status();
  EXPECT_NEAR((*noised - *clean).std().item<double>(), 2.0, 0.3);
  options.dp_fedavg->sample_rate = 0;
  EXPECT_EQ(party.AnswerSum(0, global, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A SignDS answer needs the participation ledger this party was built without.
  EXPECT_EQ(party.Answer(0, global, 1, options_).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace vfsynth

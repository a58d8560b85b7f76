// The curator's relay of the PSI with three parties: each list goes round the roster
// and every party learns which of its own records all three hold.
#include "server/core/psi_exchange.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/data/psi.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Ids(int first, int last) {
  std::vector<std::string> ids;
  for (int i = first; i <= last; ++i) ids.push_back(absl::StrCat("id", i));
  return ids;
}

v1::AlignRequest Request(uint32_t hop, const std::vector<std::string>& elements) {
  v1::AlignRequest request;
  request.set_hop(hop);
  for (const std::string& element : elements) request.add_elements(element);
  return request;
}

struct Outcome {
  std::vector<absl::StatusOr<v1::AlignResponse>> results;
  std::vector<std::vector<uint32_t>> hops;     // per party: the hops it was handed
  std::vector<std::multiset<size_t>> lengths;  // per party: the lengths of the lists it was handed
};

// Every party's side in its own thread, to the end. Party k takes `pause` * (k + 1) before
// sending each list.
Outcome AlignAll(PsiExchange& exchange, const std::vector<PsiParty>& parties,
                 absl::Duration timeout = absl::Seconds(30),
                 absl::Duration pause = absl::ZeroDuration()) {
  Outcome run;
  run.results.resize(parties.size());
  run.hops.resize(parties.size());
  run.lengths.resize(parties.size());
  std::vector<std::thread> threads;
  JoinDeadline join(timeout);
  for (size_t k = 0; k < parties.size(); ++k) {
    threads.emplace_back([&, k] {
      v1::AlignRequest request = Request(0, parties[k].own_list());
      while (true) {
        absl::SleepFor(pause * static_cast<double>(k + 1));
        absl::StatusOr<v1::AlignResponse> response =
            exchange.Submit(static_cast<int>(k), request, join);
        if (!response.ok() || !response->has_blind()) {
          run.results[k] = std::move(response);
          return;
        }
        run.hops[k].push_back(response->blind().hop());
        run.lengths[k].insert(static_cast<size_t>(response->blind().elements_size()));
        absl::StatusOr<std::vector<std::string>> blinded =
            parties[k].Blind(std::vector<std::string>(response->blind().elements().begin(),
                                                      response->blind().elements().end()));
        if (!blinded.ok()) {
          run.results[k] = blinded.status();
          return;
        }
        request = Request(response->blind().hop(), *blinded);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return run;
}

TEST(PsiExchangeTest, ThreePartiesEachLearnWhichOfTheirRecordsAllHold) {
  const std::vector<std::vector<std::string>> ids = {Ids(0, 29), Ids(10, 49), Ids(5, 24)};
  std::vector<PsiParty> parties;
  for (size_t k = 0; k < ids.size(); ++k)
    parties.push_back(*PsiParty::Create(absl::StrCat("secret-", k), ids[k]));
  PsiExchange exchange({"a", "b", "c"});
  const Outcome run = AlignAll(exchange, parties);
  for (size_t k = 0; k < parties.size(); ++k) {
    ASSERT_TRUE(run.results[k].ok()) << k << ": " << run.results[k].status();
    ASSERT_TRUE(run.results[k]->has_aligned());
    const v1::AlignedPositions& aligned = run.results[k]->aligned();
    EXPECT_EQ(aligned.records(), 15);
    absl::StatusOr<std::vector<int64_t>> rows = parties[k].Rows(
        std::vector<int64_t>(aligned.positions().begin(), aligned.positions().end()));
    ASSERT_TRUE(rows.ok()) << rows.status();
    std::set<std::string> held;
    for (const int64_t row : *rows) held.insert(ids[k][static_cast<size_t>(row)]);
    const std::vector<std::string> common = Ids(10, 24);
    EXPECT_EQ(held, std::set<std::string>(common.begin(), common.end())) << k;
    EXPECT_TRUE(exchange.Done(static_cast<int>(k)));
    // Hops 1 and 2: the lists of the two parties before it in roster order.
    EXPECT_EQ(run.hops[k], std::vector<uint32_t>({1, 2}));
    EXPECT_EQ(run.lengths[k],
              std::multiset<size_t>({ids[(k + 2) % 3].size(), ids[(k + 1) % 3].size()}))
        << k;
  }
  EXPECT_TRUE(exchange.Waiting().empty());
}

TEST(PsiExchangeTest, AnAlignmentLongerThanTheJoinTimeoutEndsWhileListsKeepArriving) {
  // Lists arrive 0.1 s apart and the four hops take about 1.2 s: longer than the 0.6 s
  // timeout, which only a gap between steps as long as itself would end.
  std::vector<PsiParty> parties;
  for (int k = 0; k < 3; ++k)
    parties.push_back(*PsiParty::Create(absl::StrCat("secret-", k), Ids(0, 9)));
  PsiExchange exchange({"a", "b", "c"});
  const absl::Time start = absl::Now();
  const Outcome run = AlignAll(exchange, parties, absl::Seconds(0.6), absl::Seconds(0.1));
  EXPECT_GT(absl::Now() - start, absl::Seconds(0.6));
  for (size_t k = 0; k < parties.size(); ++k) {
    ASSERT_TRUE(run.results[k].ok()) << k << ": " << run.results[k].status();
    EXPECT_EQ(run.results[k]->aligned().records(), 10);
  }
}

TEST(PsiExchangeTest, AListSentAgainIsNoStepOfTheJoin) {
  // A party that resends its list (a reconnect, or a replay) does not move the deadline:
  // only a list not sent before does.
  PsiExchange exchange({"a", "b"});
  JoinDeadline join(absl::Seconds(30));
  const PsiParty a = *PsiParty::Create("secret-a", Ids(0, 3));
  std::thread first([&] { (void)exchange.Submit(0, Request(0, a.own_list()), join); });
  while (exchange.Waiting() != std::vector<std::string>({"b"})) absl::SleepFor(absl::Milliseconds(5));
  const absl::Time after_first = join.Get();
  absl::SleepFor(absl::Milliseconds(50));
  std::thread again([&] { (void)exchange.Submit(0, Request(0, a.own_list()), join); });
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(join.Get(), after_first);
  exchange.Cancel(absl::CancelledError("done"));
  first.join();
  again.join();
}

TEST(PsiExchangeTest, WaitingNamesThePartiesBehindAndCancelWakesTheOthers) {
  PsiExchange exchange({"a", "b", "c"});
  JoinDeadline join(absl::InfiniteDuration());
  const PsiParty a = *PsiParty::Create("secret-a", Ids(0, 3));
  absl::StatusOr<v1::AlignResponse> result;
  std::thread waiter(
      [&] { result = exchange.Submit(0, Request(0, a.own_list()), join); });
  while (exchange.Waiting().size() != 2) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(exchange.Waiting(), std::vector<std::string>({"b", "c"}));
  exchange.Cancel(absl::CancelledError("shutdown"));
  waiter.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(exchange.Submit(1, Request(0, a.own_list()), join).status().code(),
            absl::StatusCode::kCancelled);
}

TEST(PsiExchangeTest, ATimeoutWithoutAStepNamesThePartiesThatDidNotSend) {
  PsiExchange exchange({"a", "b", "c"});
  JoinDeadline join(absl::Seconds(0.3));
  const PsiParty a = *PsiParty::Create("secret-a", Ids(0, 3));
  const PsiParty b = *PsiParty::Create("secret-b", Ids(0, 3));
  std::thread other([&] { (void)exchange.Submit(1, Request(0, b.own_list()), join); });
  const absl::Time start = absl::Now();
  const absl::Status status = exchange.Submit(0, Request(0, a.own_list()), join).status();
  other.join();
  EXPECT_GE(absl::Now() - start, absl::Seconds(0.3));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(),
              HasSubstr("did not send their list within the join timeout (300ms without a "
                        "party's step): c"));
}

}  // namespace
}  // namespace vfsynth

#include "server/core/session_hub.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

v1::PartyMessage Message(int64_t step) {
  v1::PartyMessage message;
  message.set_run_id("run");
  message.set_step(step);
  return message;
}

v1::CuratorMessage Outgoing(int64_t step) {
  v1::CuratorMessage message;
  message.set_run_id("run");
  message.set_step(step);
  return message;
}

// Generous deadline for waits that some other event must end first.
absl::Time Far() { return absl::Now() + absl::Seconds(30); }

TEST(SessionHubTest, IndexFollowsTheRoster) {
  SessionHub hub({"alpha", "beta"});
  EXPECT_EQ(hub.Index("alpha"), 0);
  EXPECT_EQ(hub.Index("beta"), 1);
  EXPECT_EQ(hub.Index("gamma"), -1);
}

TEST(SessionHubTest, ReceiveTimesOutNamingTheParty) {
  SessionHub hub({"alpha", "beta"});
  ASSERT_TRUE(hub.Connect(1).ok());
  auto message = hub.Receive(1, absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(message.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(message.status().message(), HasSubstr("'beta'"));
}

TEST(SessionHubTest, ReceiveReturnsDeliveredMessagesInOrder) {
  SessionHub hub({"alpha"});
  ASSERT_TRUE(hub.Connect(0).ok());
  hub.Deliver(0, Message(1), 10);
  hub.Deliver(0, Message(2), 15);
  EXPECT_EQ(hub.bytes_received(0), 25);
  auto first = hub.Receive(0, Far());
  auto second = hub.Receive(0, Far());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->step(), 1);
  EXPECT_EQ(second->step(), 2);
}

TEST(SessionHubTest, ReceiveWakesUpOnDelivery) {
  SessionHub hub({"alpha"});
  ASSERT_TRUE(hub.Connect(0).ok());
  absl::StatusOr<v1::PartyMessage> received;
  std::thread waiter([&] { received = hub.Receive(0, Far()); });
  hub.Deliver(0, Message(7), 1);
  waiter.join();
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->step(), 7);
}

TEST(SessionHubTest, DisconnectWakesAWaitingReceiveWithUnavailable) {
  SessionHub hub({"alpha", "beta"});
  ASSERT_TRUE(hub.Connect(0).ok());
  absl::StatusOr<v1::PartyMessage> received;
  std::thread waiter([&] { received = hub.Receive(0, Far()); });
  hub.Disconnect(0);
  waiter.join();
  // UNAVAILABLE (not DEADLINE_EXCEEDED) shows the disconnect, not the deadline, ended it.
  EXPECT_EQ(received.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(received.status().message(), HasSubstr("'alpha' disconnected"));
  EXPECT_FALSE(hub.connected(0));
}

TEST(SessionHubTest, MessagesDeliveredBeforeADisconnectAreStillReceived) {
  SessionHub hub({"alpha"});
  ASSERT_TRUE(hub.Connect(0).ok());
  hub.Deliver(0, Message(3), 1);
  hub.Disconnect(0);
  auto message = hub.Receive(0, Far());
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->step(), 3);
  EXPECT_EQ(hub.Receive(0, Far()).status().code(), absl::StatusCode::kUnavailable);
}

TEST(SessionHubTest, CancelWakesEveryWaitAndRefusesNewStreams) {
  SessionHub hub({"alpha", "beta"});
  ASSERT_TRUE(hub.Connect(0).ok());
  absl::StatusOr<v1::PartyMessage> received;
  absl::Status all_connected;
  std::optional<v1::CuratorMessage> outgoing = Outgoing(0);
  std::thread receiver([&] { received = hub.Receive(0, Far()); });
  std::thread joiner([&] { all_connected = hub.WaitAllConnected(Far()); });
  std::thread writer([&] { outgoing = hub.NextOutgoing(0); });
  hub.Cancel(absl::CancelledError("curator shutting down"));
  receiver.join();
  joiner.join();
  writer.join();
  EXPECT_EQ(received.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(received.status().message(), HasSubstr("curator shutting down"));
  EXPECT_EQ(all_connected.code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(outgoing.has_value());
  EXPECT_EQ(hub.Connect(1).code(), absl::StatusCode::kCancelled);
  // The first reason sticks.
  hub.Cancel(absl::InternalError("later"));
  EXPECT_THAT(hub.Receive(0, Far()).status().message(), HasSubstr("curator shutting down"));
}

TEST(SessionHubTest, SecondConnectIsAlreadyExistsUntilDisconnect) {
  SessionHub hub({"alpha", "beta"});
  ASSERT_TRUE(hub.Connect(1).ok());
  const absl::Status again = hub.Connect(1);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.message(), HasSubstr("'beta'"));
  EXPECT_TRUE(hub.connected(1));
  hub.Disconnect(1);
  EXPECT_TRUE(hub.Connect(1).ok());  // a dropped party may reconnect
}

TEST(SessionHubTest, NextOutgoingDrainsQueueThenEndsAfterCloseAll) {
  SessionHub hub({"alpha", "beta"});
  ASSERT_TRUE(hub.Connect(0).ok());
  hub.Send(0, Outgoing(1));
  hub.Send(0, Outgoing(2));
  hub.Send(1, Outgoing(9));  // another party's queue is separate
  hub.CloseAll();
  auto first = hub.NextOutgoing(0);
  auto second = hub.NextOutgoing(0);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(first->step(), 1);
  EXPECT_EQ(second->step(), 2);
  EXPECT_FALSE(hub.NextOutgoing(0).has_value());
  hub.CountSent(0, 40);
  EXPECT_EQ(hub.bytes_sent(0), 40);
  EXPECT_EQ(hub.bytes_sent(1), 0);
}

TEST(SessionHubTest, NextOutgoingWaitsForSend) {
  SessionHub hub({"alpha"});
  ASSERT_TRUE(hub.Connect(0).ok());
  std::optional<v1::CuratorMessage> outgoing;
  std::thread writer([&] { outgoing = hub.NextOutgoing(0); });
  hub.Send(0, Outgoing(5));
  writer.join();
  ASSERT_TRUE(outgoing.has_value());
  EXPECT_EQ(outgoing->step(), 5);
}

TEST(SessionHubTest, WaitAllConnectedNamesTheMissingParties) {
  SessionHub hub({"alpha", "beta", "gamma"});
  ASSERT_TRUE(hub.Connect(1).ok());
  const absl::Status status = hub.WaitAllConnected(absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr("alpha, gamma"));
  EXPECT_THAT(status.message(), ::testing::Not(HasSubstr("beta")));

  absl::Status all;
  std::thread joiner([&] { all = hub.WaitAllConnected(Far()); });
  ASSERT_TRUE(hub.Connect(0).ok());
  ASSERT_TRUE(hub.Connect(2).ok());
  joiner.join();
  EXPECT_TRUE(all.ok()) << all;
}

TEST(SessionHubTest, ObserverSeesEveryDeliveredMessage) {
  SessionHub hub({"alpha", "beta"});
  std::vector<std::pair<int, int64_t>> seen;
  hub.SetInboundObserver(
      [&](int party, const v1::PartyMessage& m) { seen.emplace_back(party, m.step()); });
  hub.Deliver(1, Message(4), 1);
  hub.Deliver(0, Message(6), 1);
  EXPECT_THAT(seen,
              ::testing::ElementsAre(std::pair<int, int64_t>(1, 4), std::pair<int, int64_t>(0, 6)));
}

TEST(SessionHubTest, RejoiningPartyGetsItsRoundAgainAndTheOldStreamNothing) {
  SessionHub hub({"alpha", "beta"});
  ASSERT_TRUE(hub.Connect(0).ok());
  const uint64_t first = hub.connection(0);
  hub.Send(0, Outgoing(1));  // an earlier round
  hub.BeginRound();
  hub.Send(0, Outgoing(2));
  hub.Send(0, Outgoing(3));
  ASSERT_EQ(hub.NextOutgoing(0, first)->step(), 1);
  ASSERT_EQ(hub.NextOutgoing(0, first)->step(), 2);  // 3 is still queued when the stream dies
  hub.Disconnect(0, first);
  EXPECT_FALSE(hub.NextOutgoing(0, first).has_value());
  ASSERT_TRUE(hub.Connect(0).ok());
  const uint64_t second = hub.connection(0);
  EXPECT_GT(second, first);
  // The old stream's late Disconnect does not end the new one.
  hub.Disconnect(0, first);
  EXPECT_TRUE(hub.connected(0));
  // This round from its start, each message once; nothing of the round before.
  EXPECT_EQ(hub.NextOutgoing(0, second)->step(), 2);
  EXPECT_EQ(hub.NextOutgoing(0, second)->step(), 3);
  hub.Send(0, Outgoing(4));
  EXPECT_EQ(hub.NextOutgoing(0, second)->step(), 4);
}

TEST(SessionHubTest, AwaitReconnectWaitsForTheNextStreamOrNamesTheParty) {
  SessionHub hub({"alpha", "beta"});
  ASSERT_TRUE(hub.Connect(1).ok());
  hub.Disconnect(1);
  const absl::Status gone = hub.AwaitReconnect(1, absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(gone.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(gone.message(), HasSubstr("party 'beta' disconnected and did not come back"));
  absl::Status back;
  std::thread waiter([&] { back = hub.AwaitReconnect(1, Far()); });
  ASSERT_TRUE(hub.Connect(1).ok());
  waiter.join();
  EXPECT_TRUE(back.ok()) << back;
}

}  // namespace
}  // namespace vfsynth

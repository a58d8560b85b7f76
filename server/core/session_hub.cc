#include "server/core/session_hub.h"

#include "absl/strings/str_cat.h"

namespace vfsynth {

SessionHub::SessionHub(std::vector<std::string> parties) {
  for (std::string& name : parties) {
    Session session;
    session.name = std::move(name);
    sessions_.push_back(std::move(session));
  }
}

int SessionHub::Index(const std::string& party) const {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < sessions_.size(); ++i) {
    if (sessions_[i].name == party) return static_cast<int>(i);
  }
  return -1;
}

absl::Status SessionHub::Connect(int party) {
  absl::MutexLock lock(&mu_);
  if (!cancelled_.ok()) return cancelled_;
  Session& session = sessions_[party];
  if (session.connected) {
    return absl::AlreadyExistsError(
        absl::StrCat("party '", session.name, "' already has a Train stream open"));
  }
  if (session.connection > 0) {
    // A rejoin: whatever was queued for the dead stream is superseded by the round so far.
    session.outbox.assign(session.round_log.begin(), session.round_log.end());
  }
  session.connected = true;
  ++session.connection;
  return absl::OkStatus();
}

uint64_t SessionHub::connection(int party) const {
  absl::MutexLock lock(&mu_);
  return sessions_[party].connection;
}

void SessionHub::Disconnect(int party) { Disconnect(party, connection(party)); }

void SessionHub::Disconnect(int party, uint64_t connection) {
  absl::MutexLock lock(&mu_);
  if (sessions_[party].connection == connection) sessions_[party].connected = false;
}

void SessionHub::Deliver(int party, v1::PartyMessage message, size_t wire_bytes) {
  absl::MutexLock lock(&mu_);
  sessions_[party].bytes_received += static_cast<int64_t>(wire_bytes);
  sessions_[party].last_message = absl::Now();
  if (observer_) observer_(party, message);
  sessions_[party].inbox.push_back(std::move(message));
}

std::optional<v1::CuratorMessage> SessionHub::NextOutgoing(int party) {
  return NextOutgoing(party, connection(party));
}

std::optional<v1::CuratorMessage> SessionHub::NextOutgoing(int party, uint64_t connection) {
  absl::MutexLock lock(&mu_);
  Session& session = sessions_[party];
  auto current = [&session, connection]() {
    return session.connected && session.connection == connection;
  };
  auto ready = [&session, &current]() {
    return !session.outbox.empty() || session.closed || !current();
  };
  mu_.Await(absl::Condition(&ready));
  // An ended or replaced stream must not take messages meant for its successor.
  if (session.outbox.empty() || !current()) return std::nullopt;
  v1::CuratorMessage message = std::move(session.outbox.front());
  session.outbox.pop_front();
  return message;
}

void SessionHub::CountSent(int party, size_t wire_bytes) {
  absl::MutexLock lock(&mu_);
  sessions_[party].bytes_sent += static_cast<int64_t>(wire_bytes);
}

void SessionHub::Send(int party, v1::CuratorMessage message) {
  absl::MutexLock lock(&mu_);
  sessions_[party].round_log.push_back(message);
  sessions_[party].outbox.push_back(std::move(message));
}

void SessionHub::BeginRound() {
  absl::MutexLock lock(&mu_);
  for (Session& session : sessions_) session.round_log.clear();
}

absl::Status SessionHub::AwaitReconnect(int party, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  Session& session = sessions_[party];
  auto ready = [this, &session]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return session.connected || !cancelled_.ok();
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (!cancelled_.ok()) return cancelled_;
  if (!session.connected) {
    return absl::UnavailableError(
        absl::StrCat("party '", session.name,
                     "' disconnected and did not come back within the reconnect timeout"));
  }
  return absl::OkStatus();
}

void SessionHub::CloseAll() {
  absl::MutexLock lock(&mu_);
  for (Session& session : sessions_) session.closed = true;
}

absl::Status SessionHub::WaitAllConnected(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (!cancelled_.ok()) return true;
    for (const Session& s : sessions_) {
      if (!s.connected) return false;
    }
    return true;
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (!cancelled_.ok()) return cancelled_;
  std::string missing;
  for (const Session& s : sessions_) {
    if (!s.connected) absl::StrAppend(&missing, missing.empty() ? "" : ", ", s.name);
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(
        absl::StrCat("parties never opened their Train stream: ", missing));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::PartyMessage> SessionHub::Receive(int party, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  Session& session = sessions_[party];
  auto ready = [this, &session]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !session.inbox.empty() || !session.connected || !cancelled_.ok();
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (!cancelled_.ok()) return cancelled_;
  if (!session.inbox.empty()) {
    v1::PartyMessage message = std::move(session.inbox.front());
    session.inbox.pop_front();
    return message;
  }
  if (!session.connected) {
    return absl::UnavailableError(absl::StrCat("party '", session.name, "' disconnected"));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("party '", session.name, "' did not answer within the round timeout"));
}

void SessionHub::Cancel(absl::Status reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.ok()) cancelled_ = std::move(reason);
  for (Session& session : sessions_) session.closed = true;
}

bool SessionHub::cancelled() const {
  absl::MutexLock lock(&mu_);
  return !cancelled_.ok();
}

void SessionHub::SetInboundObserver(std::function<void(int, const v1::PartyMessage&)> observer) {
  absl::MutexLock lock(&mu_);
  observer_ = std::move(observer);
}

bool SessionHub::connected(int party) const {
  absl::MutexLock lock(&mu_);
  return sessions_[party].connected;
}

int64_t SessionHub::bytes_sent(int party) const {
  absl::MutexLock lock(&mu_);
  return sessions_[party].bytes_sent;
}

int64_t SessionHub::bytes_received(int party) const {
  absl::MutexLock lock(&mu_);
  return sessions_[party].bytes_received;
}

absl::Time SessionHub::last_message(int party) const {
  absl::MutexLock lock(&mu_);
  return sessions_[party].last_message;
}

}  // namespace vfsynth

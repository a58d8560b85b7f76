#ifndef VFSYNTH_TESTS_INTEGRATION_PARTY_SESSIONS_H_
#define VFSYNTH_TESTS_INTEGRATION_PARTY_SESSIONS_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/core/party_protocol.h"
#include "client/core/party_session.h"
#include "client/grpc/grpc_curator_link.h"
#include "common/net/tls.h"
#include "server/core/session_hub.h"
#include "vfsynth/v1/curator.grpc.pb.h"

namespace vfsynth {

// Helpers of the tests that run a curator and its parties in one process over loopback mTLS.

// A raw stub to the curator on loopback `port` with the TLS identity `tls`: for tests that
// speak the protocol by hand.
inline std::unique_ptr<v1::Curator::Stub> CuratorStub(int port, const v1::TlsConfig& tls) {
  auto credentials = MakeChannelCredentials(absl::StrCat("127.0.0.1:", port), tls, false);
  EXPECT_TRUE(credentials.ok()) << credentials.status();
  if (!credentials.ok()) return nullptr;
  return v1::Curator::NewStub(grpc::CreateCustomChannel(
      absl::StrCat("127.0.0.1:", port), *credentials, MakeChannelArguments(1 << 24)));
}

// The TLS identity deploy/gen-certs.sh wrote for `name` under `certs`.
inline v1::TlsConfig TestTls(const std::string& certs, const std::string& name) {
  v1::TlsConfig tls;
  tls.set_ca(certs + "/ca.crt");
  tls.set_cert(certs + "/" + name + ".crt");
  tls.set_key(certs + "/" + name + ".key");
  return tls;
}

// Runs a PartySession over gRPC for each core, each in a thread of its own, with the
// config `config_of(k)`; returns every session's outcome once all have ended.
template <typename Core>
std::vector<absl::Status> RunPartySessions(
    const std::vector<std::unique_ptr<Core>>& cores,
    const std::function<v1::PartyConfig(size_t)>& config_of) {
  std::vector<absl::Status> results(cores.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < cores.size(); ++k) {
    threads.emplace_back([&, k] {
      const v1::PartyConfig config = config_of(k);
      PartySession session(config, cores[k].get(), std::make_unique<GrpcCuratorLink>(config));
      results[k] = session.Run();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

// Everything the parties send on their Train streams, as the curator's hub delivers it.
class InboundRecorder {
 public:
  explicit InboundRecorder(SessionHub& hub) {
    hub.SetInboundObserver([this](int, const v1::PartyMessage& message) {
      absl::MutexLock lock(&mu_);
      messages_.push_back(message);
    });
  }
  std::vector<v1::PartyMessage> messages() const {
    absl::MutexLock lock(&mu_);
    return messages_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<v1::PartyMessage> messages_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_TESTS_INTEGRATION_PARTY_SESSIONS_H_

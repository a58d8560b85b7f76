#include "tests/bench/distributed_bench.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "server/grpc/curator_server.h"
#include "tests/bench/child_process.h"
#include "tests/bench/reference_bench.h"
#include "tests/bench/tcp_relay.h"

namespace vfsynth::bench {
namespace {

struct ByteCounts {
  int64_t tcp = 0;
  int64_t messages = 0;
};

ByteCounts Count(CuratorServer& server, const TcpRelay* relay, int parties) {
  ByteCounts counts;
  if (relay != nullptr) counts.tcp = relay->bytes();
  for (int k = 0; k < parties; ++k) {
    counts.messages += server.core().hub().bytes_sent(k) + server.core().hub().bytes_received(k);
  }
  return counts;
}

// Polls the curator's status every few milliseconds until stopped, keeping a sample each
// time the phase or the round changed.
class StatusWatcher {
 public:
  explicit StatusWatcher(CuratorServer& server)
      : thread_([this, &server] { Watch(server); }) {}
  ~StatusWatcher() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<StatusSample> samples() {
    Stop();
    return samples_;
  }

 private:
  void Watch(CuratorServer& server) {
    const auto start = std::chrono::steady_clock::now();
    while (!stop_) {
      const v1::StatusResponse status = server.core().Status();
      if (samples_.empty() || samples_.back().phase != status.state() ||
          samples_.back().round != status.round()) {
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        samples_.push_back({elapsed.count(), status.state(), status.round()});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::atomic<bool> stop_{false};
  std::vector<StatusSample> samples_;  // the watcher thread's until Stop
  std::thread thread_;
};

}  // namespace

absl::StatusOr<DistributedResult> RunDistributed(const DistributedOptions& options) {
  RETURN_IF_ERROR(MakeDirectories(options.dir));
  SetTorchThreads(options.curator.training().threads());
  ASSIGN_OR_RETURN(std::unique_ptr<CuratorServer> server,
                   CuratorServer::BuildAndStart({options.curator}));
  std::unique_ptr<TcpRelay> relay;
  if (options.relay) {
    ASSIGN_OR_RETURN(relay, TcpRelay::Start(server->port()));
  }
  const int parties = static_cast<int>(options.parties.size());
  const int rounds = options.curator.training().rounds();

  // Byte counters at the end of round 0's and of the last round's generator step:
  // every message of those rounds has crossed by then, the next round's not yet.
  std::optional<ByteCounts> first, last;
  server->core().profile().SetObserver([&](const v1::StepSample& sample) {
    if (sample.kind() != v1::STEP_GENERATOR) return;
    if (sample.index() == 0) first = Count(*server, relay.get(), parties);
    if (sample.index() == rounds - 1) last = Count(*server, relay.get(), parties);
  });

  std::optional<StatusWatcher> watcher;
  if (options.watch_status) watcher.emplace(*server);

  const std::string address = absl::StrCat("127.0.0.1:", relay ? relay->port() : server->port());
  std::vector<ChildProcess> children;
  std::vector<std::string> profiles;
  for (int k = 0; k < parties; ++k) {
    v1::PartyConfig config = options.parties[k];
    config.set_curator(address);
    const std::string stem = absl::StrCat(options.dir, "/", config.name());
    ASSIGN_OR_RETURN(const std::string json, ToJson(config));
    RETURN_IF_ERROR(WriteFileAtomically(stem + ".json", json));
    profiles.push_back(stem + ".profile.json");
    ASSIGN_OR_RETURN(
        ChildProcess child,
        ChildProcess::Spawn({options.party_binary, "--config", stem + ".json", "--profile_out",
                             profiles.back(), "--log_level", options.party_log_level},
                            stem + ".log"));
    children.push_back(std::move(child));
  }
  const absl::Status run = server->Run();
  absl::Status parties_status;
  for (int k = 0; k < parties; ++k) {
    const absl::Status status = children[k].Wait(absl::Now() + absl::Seconds(60));
    if (!status.ok() && parties_status.ok()) {
      parties_status = absl::InternalError(absl::StrCat("party ", options.parties[k].name(), ": ",
                                                        status.message(), " (log: ", options.dir,
                                                        "/", options.parties[k].name(), ".log)"));
    }
  }
  server->core().profile().SetObserver(nullptr);
  std::vector<StatusSample> samples;
  if (watcher.has_value()) samples = watcher->samples();
  if (!run.ok()) return absl::InternalError(absl::StrCat("curator: ", run.ToString()));
  RETURN_IF_ERROR(parties_status);

  DistributedResult result;
  result.status_samples = std::move(samples);
  result.plan = server->core().Plan();
  result.curator = server->core().profile().Snapshot();
  for (const std::string& path : profiles) {
    v1::StepProfile profile;
    RETURN_IF_ERROR(LoadJsonFile(path, &profile));
    result.parties.push_back(std::move(profile));
  }
  if (first.has_value() && last.has_value()) {
    result.counted_rounds = rounds - 1;
    result.tcp_bytes = last->tcp - first->tcp;
    result.message_bytes = last->messages - first->messages;
  }
  return result;
}

}  // namespace vfsynth::bench

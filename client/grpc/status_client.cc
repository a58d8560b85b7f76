#include "client/grpc/status_client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status_macros.h"
#include "common/net/grpc_status.h"
#include "common/net/tls.h"
#include "common/privacy/privacy_plan.h"
#include "vfsynth/v1/curator.grpc.pb.h"

namespace vfsynth {
namespace {

// Status replies are small; a modest receive limit is enough.
constexpr int64_t kStatusMessageBytes = 4 << 20;

std::string Seconds(double seconds) {
  if (seconds < 0) return "-";
  if (seconds < 120) return absl::StrFormat("%.1f s", seconds);
  return absl::StrFormat("%.0f min", seconds / 60);
}

}  // namespace

absl::StatusOr<v1::StatusResponse> FetchCuratorStatus(const std::string& address,
                                                      const v1::TlsConfig& tls, bool plaintext,
                                                      absl::Duration timeout) {
  if (address.empty()) return absl::InvalidArgumentError("the curator address is empty");
  ASSIGN_OR_RETURN(auto credentials, MakeChannelCredentials(address, tls, plaintext));
  auto channel =
      grpc::CreateCustomChannel(address, credentials, MakeChannelArguments(kStatusMessageBytes));
  auto stub = v1::Curator::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  v1::StatusResponse response;
  const grpc::Status status = stub->GetStatus(&context, v1::StatusRequest(), &response);
  RETURN_IF_ERROR(FromGrpcStatus(status, absl::StrCat("GetStatus at ", address)));
  return response;
}

std::string FormatStatusReport(const v1::StatusResponse& status) {
  std::string out =
      absl::StrFormat("run %s: %s, round %d/%d", status.run_id(), v1::RunPhase_Name(status.state()),
                      status.round(), status.total_rounds());
  if (status.state() == v1::training) {
    absl::StrAppendFormat(&out, ", %.2f rounds/s, ETA %s", status.rounds_per_second(),
                          Seconds(status.eta_seconds()));
  }
  absl::StrAppendFormat(&out, "\naligned records %d", status.aligned_records());
  if (status.has_critic_loss())
    absl::StrAppendFormat(&out, "; critic loss %.4f", status.critic_loss());
  if (status.has_generator_loss())
    absl::StrAppendFormat(&out, "; generator loss %.4f", status.generator_loss());
  out += "\n";
  absl::StrAppendFormat(&out, "privacy %s%s\n", privacy::ModeName(status.privacy_mode()).c_str(),
                        status.plan_digest().empty()
                            ? ""
                            : absl::StrCat(", plan ", status.plan_digest().substr(0, 16)));
  for (const v1::ObserverGuarantee& guarantee : status.guarantees()) {
    absl::StrAppend(&out, "  against ", DescribeGuarantee(guarantee, status.delta()), "\n");
  }
  if (!status.error().empty()) absl::StrAppend(&out, "error: ", status.error(), "\n");
  absl::StrAppendFormat(&out, "%-16s %-10s %-9s %-11s %-13s %-12s %s\n", "party", "registered",
                        "aligned", "connected", "last message", "epsilon own",
                        "wire MiB (down/up)");
  for (const v1::PartyStatus& party : status.parties()) {
    absl::StrAppendFormat(
        &out, "%-16s %-10s %-9s %-11s %-13s %-12s %.1f/%.1f\n", party.name(),
        party.registered() ? "yes" : "no", party.aligned() ? "yes" : "no",
        party.connected() ? "yes" : "NO", Seconds(party.seconds_since_last_message()),
        party.has_epsilon_spent() ? absl::StrFormat("%.3f", party.epsilon_spent()) : "-",
        party.bytes_sent() / 1048576.0, party.bytes_received() / 1048576.0);
  }
  return out;
}

}  // namespace vfsynth

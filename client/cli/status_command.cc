// `vfsynth status`: asks a running curator for its progress over mTLS.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "client/cli/command_registry.h"
#include "client/grpc/status_client.h"
#include "common/base/address.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"

ABSL_FLAG(std::string, curator, "", "status: the curator's address host:port");
ABSL_FLAG(std::string, party_config, "",
          "status: take the curator address and TLS files from this party config; eval: score the "
          "synthetic table on this party's own rows and columns (instead of --real and --schema)");
ABSL_FLAG(std::string, ca, "", "status: CA certificate (PEM) of the run");
ABSL_FLAG(std::string, cert, "", "status: client certificate signed by that CA (PEM)");
ABSL_FLAG(std::string, key, "", "status: the certificate's private key (PEM)");
ABSL_FLAG(bool, plaintext, false, "status: no TLS (loopback tests against a plaintext curator)");
ABSL_FLAG(bool, json, false, "status: print the status as JSON");
ABSL_FLAG(double, timeout_seconds, 10, "status: give up after this long");

namespace vfsynth {
namespace {

absl::Status RunStatusCommand(const std::vector<std::string>& args) {
  std::string address = absl::GetFlag(FLAGS_curator);
  v1::TlsConfig tls;
  bool plaintext = absl::GetFlag(FLAGS_plaintext);
  if (!absl::GetFlag(FLAGS_party_config).empty()) {
    ASSIGN_OR_RETURN(const v1::PartyConfig party,
                     LoadPartyConfig(absl::GetFlag(FLAGS_party_config)));
    if (address.empty()) address = party.curator();
    tls = party.tls();
    plaintext = plaintext || party.plaintext();
  }
  if (!absl::GetFlag(FLAGS_ca).empty()) tls.set_ca(absl::GetFlag(FLAGS_ca));
  if (!absl::GetFlag(FLAGS_cert).empty()) tls.set_cert(absl::GetFlag(FLAGS_cert));
  if (!absl::GetFlag(FLAGS_key).empty()) tls.set_key(absl::GetFlag(FLAGS_key));
  if (address.empty()) {
    return absl::InvalidArgumentError(
        "status needs --curator host:port (or --party-config with a curator address)");
  }
  RETURN_IF_ERROR(ParseHostPort(address, "--curator", /*min_port=*/1).status());
  if (absl::GetFlag(FLAGS_timeout_seconds) <= 0) {
    return absl::InvalidArgumentError("--timeout-seconds must be positive");
  }
  ASSIGN_OR_RETURN(const v1::StatusResponse status,
                   FetchCuratorStatus(address, tls, plaintext,
                                      absl::Seconds(absl::GetFlag(FLAGS_timeout_seconds))));
  if (absl::GetFlag(FLAGS_json)) {
    ASSIGN_OR_RETURN(const std::string json, ToJson(status));
    std::printf("%s\n", json.c_str());
  } else {
    std::printf("%s", FormatStatusReport(status).c_str());
  }
  return absl::OkStatus();
}

const CommandRegistration kStatus(
    "status",
    {"status --curator HOST:PORT (--ca F --cert F --key F | --party-config P.json) [--json]",
     &RunStatusCommand});

}  // namespace
}  // namespace vfsynth

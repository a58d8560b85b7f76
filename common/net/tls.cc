#include "common/net/tls.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/base/address.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/net/certificate_validity.h"

namespace vfsynth {
namespace {

constexpr int kKeepaliveTimeMs = 30000;
constexpr int kKeepaliveTimeoutMs = 10000;

struct TlsFiles {
  std::string ca, cert, key;
};

// The TLS files, checked: present, PEM, and the certificates valid now.
absl::StatusOr<TlsFiles> ReadTlsFiles(const v1::TlsConfig& tls) {
  if (tls.ca().empty() || tls.cert().empty() || tls.key().empty()) {
    return absl::InvalidArgumentError(
        "tls.ca, tls.cert and tls.key are all required (plaintext is for loopback tests only)");
  }
  TlsFiles files;
  ASSIGN_OR_RETURN(files.ca, ReadFile(tls.ca()));
  ASSIGN_OR_RETURN(files.cert, ReadFile(tls.cert()));
  ASSIGN_OR_RETURN(files.key, ReadFile(tls.key()));
  if (const auto warning = ReadableByOthersWarning(tls.key())) spdlog::warn("{}", *warning);
  RETURN_IF_ERROR(CheckCertificatesValid(files.ca, tls.ca(), "tls.ca"));
  RETURN_IF_ERROR(CheckCertificatesValid(files.cert, tls.cert(), "tls.cert"));
  if (files.key.find("PRIVATE KEY-----") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(tls.key(), ": not a PEM private key"));
  }
  return files;
}

}  // namespace

absl::Status CheckTlsFiles(const v1::TlsConfig& tls, bool plaintext) {
  if (plaintext) return absl::OkStatus();
  return ReadTlsFiles(tls).status();
}

std::string PartyIdentity(const std::string& party) {
  return absl::StrCat("spiffe://vfsynth/party/", party);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const std::string& listen, const v1::TlsConfig& tls, bool plaintext) {
  if (plaintext) {
    RETURN_IF_ERROR(CheckPlaintextAddress(listen, "listen"));
    return grpc::InsecureServerCredentials();
  }
  ASSIGN_OR_RETURN(const TlsFiles files, ReadTlsFiles(tls));
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = files.ca;
  options.pem_key_cert_pairs.push_back({files.key, files.cert});
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const std::string& address, const v1::TlsConfig& tls, bool plaintext) {
  if (plaintext) {
    RETURN_IF_ERROR(CheckPlaintextAddress(address, "curator"));
    return grpc::InsecureChannelCredentials();
  }
  ASSIGN_OR_RETURN(const TlsFiles files, ReadTlsFiles(tls));
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = files.ca;
  options.pem_private_key = files.key;
  options.pem_cert_chain = files.cert;
  return grpc::SslCredentials(options);
}

grpc::ChannelArguments MakeChannelArguments(int64_t max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(max_message_bytes));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  return args;
}

void ApplyServerArguments(int64_t max_message_bytes, grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(static_cast<int>(max_message_bytes));
  builder->SetMaxSendMessageSize(static_cast<int>(max_message_bytes));
  // gRPC's SO_REUSEPORT would let a second daemon on the same address start and take
  // half of the connections; without it the second fails at bind.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              kKeepaliveTimeMs / 2);
}

}  // namespace vfsynth
